/* SPDX-License-Identifier: BSD-3-Clause
 * The app stack's DPDK telemetry, over the real socket.
 *
 * EAL comes up through app::start_eal() with the apps' own defaults (no EAL
 * arguments: uroce_eal.h's, --file-prefix uroce-<pid>, telemetry left on), so
 * this checks that those defaults keep the telemetry socket. Two stacks on
 * a crossed net_ring pair resolve each other (ARP) and run RC SENDs; then
 * the test connects to <runtime dir>/dpdk_telemetry.v2 (SOCK_SEQPACKET, as
 * dpdk-telemetry.py does), asks /uroce/list and /uroce/counters,<name>, and
 * checks the JSON against the counters the stacks hold.
 */
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ring.h>

#include "uroce_app_options.h"
#include "uroce_app_stack.h"
#include "rc_connect.h"

namespace uroce::app {
namespace {

class env : public ::testing::Environment {
  public:
    void SetUp() override {
        std::string err;
        eal_ = start_eal({}, 1, 512, err);
        ASSERT_TRUE(eal_) << err;
    }
    void TearDown() override { eal_.reset(); }

  private:
    std::unique_ptr<eal_session> eal_;
};
const auto *const env_ = ::testing::AddGlobalTestEnvironment(new env);

/* One connection to the telemetry socket. */
class telemetry_client {
  public:
    bool open(std::string &err) {
        std::string path = std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2";
        fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
        if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
            err = path + ": " + std::strerror(errno);
            return false;
        }
        hello_ = receive(); /* the server speaks first: version, pid, max_output_len */
        return !hello_.empty();
    }
    ~telemetry_client() {
        if (fd_ >= 0) close(fd_);
    }
    std::string ask(const std::string &cmd) {
        if (send(fd_, cmd.data(), cmd.size(), 0) != ssize_t(cmd.size())) return {};
        return receive();
    }
    const std::string &hello() const { return hello_; }

  private:
    std::string receive() {
        std::string buf(64 * 1024, '\0');
        ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
        buf.resize(n > 0 ? size_t(n) : 0);
        return buf;
    }
    int fd_ = -1;
    std::string hello_;
};

/* The number after "key": in a flat JSON object (what DPDK writes for a
 * dict of u64), or nullopt. */
std::optional<uint64_t> json_u64(const std::string &json, const std::string &key) {
    size_t at = json.find("\"" + key + "\":");
    if (at == std::string::npos) return std::nullopt;
    return std::strtoull(json.c_str() + at + key.size() + 3, nullptr, 10);
}

struct telemetry_test : ::testing::Test {
    std::unique_ptr<stack> a, b;

    void SetUp() override {
        rte_ring *ab =
            rte_ring_create("tel_ab", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
        rte_ring *ba =
            rte_ring_create("tel_ba", 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
        ASSERT_TRUE(ab && ba);
        int pa = rte_eth_from_rings("tel_a", &ba, 1, &ab, 1, SOCKET_ID_ANY);
        int pb = rte_eth_from_rings("tel_b", &ab, 1, &ba, 1, SOCKET_ID_ANY);
        ASSERT_GE(pa, 0);
        ASSERT_GE(pb, 0);
        a = make(pa, "stack_a", "10.61.0.1/24", 1);
        b = make(pb, "stack_b", "10.61.0.2/24", 2);
        ASSERT_TRUE(a && b);
    }

    static std::unique_ptr<stack> make(int port, const char *name, const char *ip, uint8_t id) {
        stack_options o;
        o.port_id = port;
        o.name = name;
        o.ips.emplace_back(ip);
        o.mac = rte_ether_addr{{0x02, 0, 0, 0, 0x61, id}};
        std::string err;
        auto st = stack::create(o, err);
        EXPECT_NE(st, nullptr) << err;
        return st;
    }

    void poll_both() {
        a->poll();
        b->poll();
    }

    /* RC QP through RESET -> INIT -> RTR -> RTS towards the peer. */
    static void connect(qp *q, const gid &dgid, int sgid_index, const mac_addr &dmac,
                        uint32_t dqpn) {
        test::rc_peer p;
        p.qpn = dqpn;
        p.dgid = dgid;
        p.sgid_index = uint8_t(sgid_index);
        dmac.copy_to(p.dmac);
        p.path_mtu = mtu::mtu_1024;
        p.rd_atomic = 1;
        p.min_rnr_timer = 1;
        ASSERT_TRUE(test::rc_connect(q, p));
    }
};

TEST_F(telemetry_test, list_and_counters_match_the_traffic) {
    /* Traffic: ARP both ways, then RC SENDs from a to b. */
    const gid ga = gid::from_ipv4(0x0a3d0001), gb = gid::from_ipv4(0x0a3d0002);
    std::optional<mac_addr> mac_b, mac_a;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((!mac_b || !mac_a) && std::chrono::steady_clock::now() < deadline) {
        poll_both();
        if (!mac_b) mac_b = a->neighbours().resolve(gb);
        if (!mac_a) mac_a = b->neighbours().resolve(ga);
    }
    ASSERT_TRUE(mac_b && mac_a);

    pd *pda = alloc_pd(a->ctx()), *pdb = alloc_pd(b->ctx());
    cq *cqa = create_cq(a->ctx(), 256), *cqb = create_cq(b->ctx(), 256);
    qp_init_attr ia;
    ia.send_cq = ia.recv_cq = cqa;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
    qp *qa = create_qp(pda, ia);
    ia.send_cq = ia.recv_cq = cqb;
    qp *qb = create_qp(pdb, ia);
    ASSERT_TRUE(qa && qb);
    connect(qa, gb, a->gid_index_for(gb), *mac_b, qp_num(qb));
    connect(qb, ga, b->gid_index_for(ga), *mac_a, qp_num(qa));
    constexpr int n = 20;
    std::vector<uint8_t> src(256, 0x3c), dst(256 * n);
    mr *ms = reg_mr(pda, src.data(), src.size(), access_local_write);
    mr *md = reg_mr(pdb, dst.data(), dst.size(), access_local_write);
    for (int i = 0; i < n; i++) {
        sge r{reinterpret_cast<uint64_t>(dst.data() + 256 * i), 256, mr_lkey(md)};
        recv_wr rw;
        rw.sg_list = &r;
        rw.num_sge = 1;
        recv_wr *rbad;
        ASSERT_EQ(post_recv(qb, &rw, &rbad), verbs_error::ok);
        sge s{reinterpret_cast<uint64_t>(src.data()), 256, mr_lkey(ms)};
        send_wr w;
        w.wr_id = uint64_t(i);
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = wr_opcode::send;
        w.send_flags = send_signaled;
        send_wr *bad;
        ASSERT_EQ(post_send(qa, &w, &bad), verbs_error::ok);
    }
    int done = 0, received = 0;
    wc wcs[16];
    while ((done < n || received < n) && std::chrono::steady_clock::now() < deadline) {
        poll_both();
        int k = poll_cq(cqa, 16, wcs);
        for (int i = 0; i < k; i++)
            EXPECT_EQ(wcs[i].status, wc_status::success);
        done += k;
        received += poll_cq(cqb, 16, wcs);
    }
    ASSERT_EQ(done, n);
    ASSERT_EQ(received, n);
    for (int i = 0; i < 100; i++)
        poll_both(); /* the last ACKs */

    /* Nothing polls from here on: the counters stand still while we read. */
    telemetry_client tc;
    std::string err;
    ASSERT_TRUE(tc.open(err)) << err << " (is telemetry off in the EAL defaults?)";
    EXPECT_NE(tc.hello().find("\"pid\":" + std::to_string(getpid())), std::string::npos)
        << tc.hello();

    std::string list = tc.ask("/uroce/list");
    EXPECT_NE(list.find("\"/uroce/list\":["), std::string::npos) << list;
    EXPECT_NE(list.find("\"stack_a\""), std::string::npos) << list;
    EXPECT_NE(list.find("\"stack_b\""), std::string::npos) << list;

    for (const stack *st : {a.get(), b.get()}) {
        std::string j = tc.ask("/uroce/counters," + st->name());
        ASSERT_NE(j.find("\"/uroce/counters\":{"), std::string::npos) << j;
        const ethdev_counters &pc = st->port().counters();
        EXPECT_GT(pc.tx_pkts, 0u); /* ARP, plus SENDs (a) or coalesced ACKs (b) */
        EXPECT_EQ(json_u64(j, "port_tx_pkts"), pc.tx_pkts) << j;
        EXPECT_EQ(json_u64(j, "port_rx_pkts"), pc.rx_pkts) << j;
        EXPECT_EQ(json_u64(j, "port_tx_bytes"), pc.tx_bytes) << j;
        EXPECT_EQ(json_u64(j, "engine_rx_roce"),
                  st->eng().counters().rx_by_class[size_t(frame_class::roce)])
            << j;
        EXPECT_EQ(json_u64(j, "dev_tx_pkts"), device_counters(st->ctx()).tx_pkts) << j;
        EXPECT_EQ(json_u64(j, "qp_completions"), device_qp_counters(st->ctx()).completions) << j;
    }
    /* a sent the 20 SENDs (256 B each), b received and completed them. */
    std::string ja = tc.ask("/uroce/counters,stack_a"), jb = tc.ask("/uroce/counters,stack_b");
    EXPECT_GT(json_u64(ja, "port_tx_pkts").value_or(0), uint64_t(n)) << ja; /* + ARP */
    EXPECT_GE(json_u64(ja, "qp_tx_bytes").value_or(0), uint64_t(n) * 256) << ja;
    EXPECT_EQ(json_u64(jb, "qp_rx_bytes").value_or(0), uint64_t(n) * 256) << jb;
    EXPECT_GE(json_u64(jb, "engine_rx_roce").value_or(0), uint64_t(n)) << jb;
    EXPECT_GE(json_u64(jb, "engine_rx_neighbour").value_or(0), 1u) << jb;
    EXPECT_EQ(json_u64(ja, "qp_completions"), uint64_t(n)) << ja;
    EXPECT_EQ(json_u64(jb, "qp_completions"), uint64_t(n)) << jb;

    /* An unknown stack is an error, not a crash (DPDK answers null). */
    std::string bad = tc.ask("/uroce/counters,no_such_stack");
    EXPECT_NE(bad.find("\"/uroce/counters\":null"), std::string::npos) << bad;
}

} // namespace
} // namespace uroce::app
