/* SPDX-License-Identifier: BSD-3-Clause
 * lib/cm/uroce_cm_event.cpp: an event channel's fd is readable exactly
 * while events wait; get_event says again when there is none; another
 * thread can wait on the fd, take and acknowledge events while the stack's
 * thread runs the loop; an id destroyed with events outstanding stays
 * valid until they are acknowledged; events have librdmacm's names.
 */
#include <poll.h>

#include <atomic>
#include <thread>

#include "cm_stacks.h"

using namespace uroce;
using namespace uroce::test;

namespace {

const auto *const env = ::testing::AddGlobalTestEnvironment(new eal_env("512"));

class cm_event_t : public cm_pair {
  protected:
    /* Two ids on a's channel, both resolving b's address (one ARP answer
     * resolves both: two events). */
    void resolve_two(cm_id *&x, cm_id *&y) {
        ASSERT_EQ(create_id(a.ch, &x, nullptr, rdma_port_space::tcp), verbs_error::ok);
        ASSERT_EQ(create_id(a.ch, &y, nullptr, rdma_port_space::tcp), verbs_error::ok);
        sockaddr_storage dst = addr(ip_b, 1);
        ASSERT_EQ(resolve_addr(x, nullptr, sa(dst), 1000), verbs_error::ok);
        ASSERT_EQ(resolve_addr(y, nullptr, sa(dst), 1000), verbs_error::ok);
    }
};

TEST_F(cm_event_t, names_are_librdmacms) {
    EXPECT_STREQ(cm_event_str(cm_event_type::addr_resolved), "RDMA_CM_EVENT_ADDR_RESOLVED");
    EXPECT_STREQ(cm_event_str(cm_event_type::established), "RDMA_CM_EVENT_ESTABLISHED");
    EXPECT_STREQ(cm_event_str(cm_event_type::timewait_exit), "RDMA_CM_EVENT_TIMEWAIT_EXIT");
    EXPECT_EQ(int(cm_event_type::rejected), 8); /* RDMA_CM_EVENT_REJECTED */
    EXPECT_STREQ(cm_event_str(cm_event_type(99)), "UNKNOWN EVENT");
}

TEST_F(cm_event_t, fd_is_readable_exactly_while_events_wait) {
    start();
    const int fd = event_channel_fd(a.ch);
    ASSERT_GE(fd, 0);
    EXPECT_FALSE(readable(fd));
    cm_event *ev = nullptr;
    EXPECT_EQ(get_event(a.ch, &ev), verbs_error::again);
    cm_id *id1, *id2;
    ASSERT_NO_FATAL_FAILURE(resolve_two(id1, id2));
    ASSERT_TRUE(run_until([&] { return readable(fd); }));
    /* both resolve with the same ARP answer: two events, one fd */
    for (int i = 0; i < 200; i++)
        pump();
    ASSERT_EQ(get_event(a.ch, &ev), verbs_error::ok);
    EXPECT_EQ(ev->event, cm_event_type::addr_resolved);
    EXPECT_TRUE(readable(fd)) << "one more waits";
    cm_event *ev2 = nullptr;
    ASSERT_EQ(get_event(a.ch, &ev2), verbs_error::ok);
    EXPECT_FALSE(readable(fd));
    EXPECT_NE(ev->id, ev2->id);
    /* destroyed with its event unacknowledged: still readable memory (ASan) */
    cm_id *gone = ev->id;
    ASSERT_EQ(destroy_id(gone), verbs_error::ok);
    for (int i = 0; i < 5; i++)
        pump();
    EXPECT_EQ(ev->id->context, nullptr);
    EXPECT_EQ(destroy_event_channel(a.ch), verbs_error::busy) << "an id, and unacknowledged events";
    cm_id *other = ev2->id;
    EXPECT_EQ(other, gone == id1 ? id2 : id1);
    ack_event(ev);
    ack_event(ev2);
    ASSERT_EQ(destroy_id(other), verbs_error::ok);
    pump();
}

/* An id destroyed with events unread takes them along, fd count and all,
 * as the kernel's ucma_cleanup_ctx_events: handed over later they would
 * name an id the user has let go (rping's CM thread crashed on one). */
TEST_F(cm_event_t, a_destroyed_ids_unread_events_go_with_it) {
    start();
    const int fd = event_channel_fd(a.ch);
    cm_id *gone, *kept;
    ASSERT_NO_FATAL_FAILURE(resolve_two(gone, kept));
    ASSERT_TRUE(run_until([&] { return cm_counters(a.cm).events == 2; }));
    ASSERT_EQ(destroy_id(gone), verbs_error::ok);
    EXPECT_EQ(cm_counters(a.cm).events_purged, 1u);
    ASSERT_TRUE(readable(fd));
    cm_event *ev = nullptr;
    ASSERT_EQ(get_event(a.ch, &ev), verbs_error::ok);
    EXPECT_EQ(ev->id, kept);
    EXPECT_FALSE(readable(fd)) << "one event left, not two";
    cm_event *none = nullptr;
    EXPECT_EQ(get_event(a.ch, &none), verbs_error::again);
    ack_event(ev);
    ASSERT_EQ(destroy_id(kept), verbs_error::ok);
    EXPECT_EQ(cm_counters(a.cm).events_purged, 1u) << "nothing unread for it";
    pump(); /* frees both: nothing outstanding (ASan: no leak) */
    EXPECT_EQ(destroy_event_channel(a.ch), verbs_error::ok);
    a.ch = nullptr;
}

TEST_F(cm_event_t, another_thread_waits_on_the_fd_and_takes_the_events) {
    start();
    std::atomic<bool> stop{false};
    std::atomic<int> got{0};
    std::atomic<int> last_type{-1};
    std::thread app([&] {
        const int fd = event_channel_fd(a.ch);
        while (!stop.load()) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 10) != 1) continue;
            cm_event *ev;
            while (get_event(a.ch, &ev) == verbs_error::ok) {
                last_type = int(ev->event);
                ack_event(ev);
                got++;
            }
        }
    });
    cm_id *id;
    ASSERT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage dst = addr(ip_b, 1);
    ASSERT_EQ(resolve_addr(id, nullptr, sa(dst), 1000), verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return got.load() == 1; }));
    ASSERT_EQ(resolve_route(id, 1000), verbs_error::ok);
    ASSERT_TRUE(run_until([&] { return got.load() == 2; }));
    stop = true;
    app.join();
    EXPECT_EQ(last_type.load(), int(cm_event_type::route_resolved));
    ASSERT_EQ(destroy_id(id), verbs_error::ok);
    pump();
}

TEST_F(cm_event_t, an_unanswered_address_is_an_addr_error) {
    start();
    cm_id *id;
    ASSERT_EQ(create_id(a.ch, &id, nullptr, rdma_port_space::tcp), verbs_error::ok);
    sockaddr_storage nobody = addr(0x0a4d0063, 1); /* 10.77.0.99: no such host */
    ASSERT_EQ(resolve_addr(id, nullptr, sa(nobody), 500), verbs_error::ok);
    int status = 0;
    ASSERT_TRUE(expect_event(a, cm_event_type::addr_error, nullptr, nullptr, &status));
    EXPECT_TRUE(status == -ETIMEDOUT || status == -EHOSTUNREACH) << status;
    ASSERT_EQ(destroy_id(id), verbs_error::ok);
    pump();
}

} // namespace
