/* SPDX-License-Identifier: BSD-3-Clause
 * rdma_cm event channels (<uroce/cm.h>): a queue of events behind a mutex
 * and an eventfd in semaphore mode whose count is the queue's length, so
 * the fd is readable exactly while an event waits. The stack's thread
 * pushes (cm_service::queue); any thread takes (get_event) and
 * acknowledges (ack_event). An event keeps its id (and the listening id)
 * alive until it is acknowledged: destroy_id only marks the id, and the
 * stack's thread frees it once its count of outstanding events is zero.
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include "uroce_cm_service.h"

namespace uroce {

const char *cm_event_str(cm_event_type e) {
    static constexpr const char *names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    return unsigned(e) < std::size(names) ? names[unsigned(e)] : "UNKNOWN EVENT";
}

cm_event_channel *create_event_channel(cm_service *cm, verbs_error *err) {
    if (!cm) {
        if (err) *err = verbs_error::inval;
        return nullptr;
    }
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
    if (fd < 0) {
        if (err) *err = verbs_error::nomem;
        return nullptr;
    }
    auto *ch = new cm_event_channel;
    ch->svc = cm;
    ch->fd = fd;
    cm->channels++;
    if (err) *err = verbs_error::ok;
    return ch;
}

verbs_error destroy_event_channel(cm_event_channel *ch) {
    if (!ch) return verbs_error::inval;
    {
        std::lock_guard<std::mutex> lock(ch->mu);
        if (ch->ids || !ch->q.empty() || ch->unacked.load()) return verbs_error::busy;
    }
    ch->svc->channels--;
    close(ch->fd);
    delete ch;
    return verbs_error::ok;
}

int event_channel_fd(const cm_event_channel *ch) {
    return ch ? ch->fd : -1;
}

/* The stack's thread: an event for a user to take. */
void cm_channel_push(cm_event_channel *ch, cm_event_impl *ev) {
    static_cast<cm_id_impl *>(ev->id)->events_out++;
    if (ev->listen_id) static_cast<cm_id_impl *>(ev->listen_id)->events_out++;
    ev->ch = ch;
    ch->unacked++;
    std::lock_guard<std::mutex> lock(ch->mu);
    ch->q.push_back(ev);
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(ch->fd, &one, sizeof(one));
}

/* An event leaves the queue unread: what get_event and ack_event would have
 * done for it together. */
static void drop_unread(cm_event_channel *ch, cm_event_impl *ev) {
    uint64_t one;
    [[maybe_unused]] ssize_t r = read(ch->fd, &one, sizeof(one)); /* semaphore: count - 1 */
    ack_event(ev);
}

size_t cm_channel_purge(cm_event_channel *ch, const cm_id_impl *id,
                        std::vector<cm_id_impl *> &requests) {
    std::lock_guard<std::mutex> lock(ch->mu);
    size_t dropped = 0;
    for (auto it = ch->q.begin(); it != ch->q.end();) {
        cm_event_impl *ev = *it;
        const bool own = ev->id == id;
        const bool request = ev->listen_id == id && ev->event == cm_event_type::connect_request;
        if (!own && !request) {
            ++it;
            continue;
        }
        if (request) requests.push_back(static_cast<cm_id_impl *>(ev->id));
        it = ch->q.erase(it);
        drop_unread(ch, ev);
        ++dropped;
    }
    return dropped;
}

verbs_error get_event(cm_event_channel *ch, cm_event **event) {
    if (!ch || !event) return verbs_error::inval;
    std::lock_guard<std::mutex> lock(ch->mu);
    if (ch->q.empty()) return verbs_error::again;
    *event = ch->q.front();
    ch->q.pop_front();
    uint64_t one;
    [[maybe_unused]] ssize_t r = read(ch->fd, &one, sizeof(one)); /* semaphore: count - 1 */
    return verbs_error::ok;
}

verbs_error ack_event(cm_event *event) {
    if (!event) return verbs_error::inval;
    auto *ev = static_cast<cm_event_impl *>(event);
    static_cast<cm_id_impl *>(ev->id)->events_out--;
    if (ev->listen_id) static_cast<cm_id_impl *>(ev->listen_id)->events_out--;
    ev->ch->unacked--;
    delete ev;
    return verbs_error::ok;
}

} // namespace uroce
