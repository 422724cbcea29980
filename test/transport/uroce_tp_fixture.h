/* SPDX-License-Identifier: BSD-3-Clause
 * Test fixture for the transport: EAL once per process, one mbuf pool, and
 * two uroce devices joined by a memlink, driven on one thread with a manual
 * clock (timeouts without sleeping).
 */
#ifndef UROCE_TP_FIXTURE_H
#define UROCE_TP_FIXTURE_H

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "uroce_device.h"
#include "uroce_memlink.h"
#include "uroce_psn.h"
#include <uroce/verbs.h>

namespace uroce::test {

/* EAL with a fixed argv (never gtest's), once per process. */
class eal_env : public ::testing::Environment {
  public:
    void SetUp() override {
        static const char *argv[] = {
            "uroce_test",  "--no-huge",      "-m", "512", "--no-pci",
            "--no-shconf", "--no-telemetry", "-l", "0",   "--log-level=*:warning"};
        int argc = int(sizeof(argv) / sizeof(argv[0]));
        int rc = rte_eal_init(argc, const_cast<char **>(argv));
        ASSERT_GE(rc, 0) << "rte_eal_init: " << rte_strerror(rte_errno);
    }
};

inline rte_mempool *test_pool() {
    static rte_mempool *mp = [] {
        /* room for a 4096-byte MTU frame plus headers */
        return rte_pktmbuf_pool_create("uroce_tp", 16383, 256, 0, RTE_PKTMBUF_HEADROOM + 4096 + 256,
                                       SOCKET_ID_ANY);
    }();
    return mp;
}

inline const uint8_t mac_a[6] = {0x02, 0, 0, 0, 0, 0x0a};
inline const uint8_t mac_b[6] = {0x02, 0, 0, 0, 0, 0x0b};

/* One endpoint: a device and the objects a test needs on it. */
struct endpoint {
    memlink_port *port = nullptr;
    device *ctx = nullptr;
    uroce::pd *pd = nullptr;
    cq *scq = nullptr;
    cq *rcq = nullptr;
    uroce::qp *qp = nullptr;
    gid g;
    const uint8_t *mac = nullptr;
};

struct pair_options {
    qp_type type = qp_type::rc;
    mtu path_mtu = mtu::mtu_1024;
    uint32_t max_send_wr = 256;
    uint32_t max_recv_wr = 256;
    uint32_t max_sge = 4;
    uint32_t max_inline = 128;
    uint8_t timeout = 14;
    uint8_t retry_cnt = 7;
    uint8_t rnr_retry = 7;
    uint8_t min_rnr_timer = 1;
    uint8_t max_rd_atomic = 16;
    uint32_t psn_a = 0x123456;
    uint32_t psn_b = 0xfffff0; /* near the wrap */
    int cqe = 4096;
    bool ipv6 = false;
    bool tail_loss_probe = true;   /* device_config::tail_loss_probe */
    bool selective_repeat = false; /* RC: qp_attr::selective_repeat on both QPs */
    bool respond_on_poll = false;  /* device_config::respond_on_poll */
};

class pair_fixture : public ::testing::Test {
  protected:
    manual_clock clk{1'000'000};
    std::unique_ptr<memlink> link;
    endpoint a, b;
    pair_options opt;
    uint64_t idle_step_ns = 50'000;
    cc_config cc_cfg; /* both devices' congestion control (<uroce/cc.h>) */

    void make_link(const memlink_config &cfg = {}) {
        link = std::make_unique<memlink>(cfg, &clk);
        a.port = link->add_port(mac_a);
        b.port = link->add_port(mac_b);
    }

    void open(endpoint &e, memlink_port *port, const gid &g, const uint8_t *mac, uint64_t seed) {
        device_config cfg;
        cfg.dev = port;
        cfg.pool = test_pool();
        cfg.gids[0] = g;
        cfg.num_gids = 1;
        cfg.clock = &clk;
        cfg.seed = seed;
        cfg.tail_loss_probe = opt.tail_loss_probe;
        cfg.respond_on_poll = opt.respond_on_poll;
        cfg.cc = cc_cfg;
        verbs_error err;
        e.ctx = open_device(cfg, &err);
        ASSERT_NE(e.ctx, nullptr) << verbs_error_str(err);
        e.pd = alloc_pd(e.ctx);
        e.scq = create_cq(e.ctx, opt.cqe);
        e.rcq = create_cq(e.ctx, opt.cqe);
        e.g = g;
        e.mac = mac;
    }

    gid gid_for(int i) const {
        if (opt.ipv6) {
            gid g = *gid::parse(i == 0 ? "fd00::a" : "fd00::b");
            return g;
        }
        return gid::from_ipv4(i == 0 ? 0x0a000001 : 0x0a000002);
    }

    void SetUp() override { ASSERT_NE(test_pool(), nullptr); }

    /* Build both devices and an RC/UC/UD QP pair in RTS. */
    void setup_pair(const memlink_config &cfg = {}) {
        make_link(cfg);
        open(a, a.port, gid_for(0), mac_a, 11);
        open(b, b.port, gid_for(1), mac_b, 22);
        a.qp = make_qp(a);
        b.qp = make_qp(b);
        connect(a, b, opt.psn_a, opt.psn_b);
        connect(b, a, opt.psn_b, opt.psn_a);
    }

    qp *make_qp(endpoint &e, srq *s = nullptr) {
        qp_init_attr ia;
        ia.send_cq = e.scq;
        ia.recv_cq = e.rcq;
        ia.srq = s;
        ia.qp_type = opt.type;
        ia.cap.max_send_wr = opt.max_send_wr;
        ia.cap.max_recv_wr = opt.max_recv_wr;
        ia.cap.max_send_sge = opt.max_sge;
        ia.cap.max_recv_sge = opt.max_sge;
        ia.cap.max_inline_data = opt.max_inline;
        verbs_error err;
        qp *q = create_qp(e.pd, ia, &err);
        EXPECT_NE(q, nullptr) << verbs_error_str(err);
        return q;
    }

    ah_attr ah_to(const endpoint &peer) const {
        ah_attr ah;
        ah.grh.dgid = peer.g;
        ah.grh.sgid_index = 0;
        ah.grh.hop_limit = 64;
        std::memcpy(ah.dmac, peer.mac, 6);
        return ah;
    }

    /* RESET -> INIT -> RTR -> RTS with the attributes ibv_rc_pingpong uses. */
    void connect(endpoint &self, const endpoint &peer, uint32_t sq_psn, uint32_t rq_psn,
                 qp *q = nullptr, qp *peer_qp = nullptr) {
        if (!q) q = self.qp;
        if (!peer_qp) peer_qp = peer.qp;
        qp_attr at;
        at.qp_state = qp_state::init;
        at.pkey_index = 0;
        at.port_num = 1;
        unsigned mask = qp_attr_state | qp_attr_pkey_index | qp_attr_port;
        if (opt.type == qp_type::ud) {
            at.qkey = 0x11111111;
            mask |= qp_attr_qkey;
        } else {
            at.qp_access_flags = access_remote_write | access_remote_read | access_remote_atomic;
            mask |= qp_attr_access_flags;
        }
        ASSERT_EQ(modify_qp(q, at, mask), verbs_error::ok);

        at = qp_attr{};
        at.qp_state = qp_state::rtr;
        mask = qp_attr_state;
        if (opt.type != qp_type::ud) {
            at.path_mtu = opt.path_mtu;
            at.dest_qp_num = qp_num(peer_qp);
            at.rq_psn = rq_psn;
            at.ah_attr = ah_to(peer);
            mask |= qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn;
            if (opt.type == qp_type::rc) {
                at.max_dest_rd_atomic = opt.max_rd_atomic;
                at.min_rnr_timer = opt.min_rnr_timer;
                mask |= qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer;
                if (opt.selective_repeat) {
                    at.selective_repeat = 1;
                    mask |= qp_attr_selective_repeat;
                }
            }
        }
        ASSERT_EQ(modify_qp(q, at, mask), verbs_error::ok);

        at = qp_attr{};
        at.qp_state = qp_state::rts;
        at.sq_psn = sq_psn;
        mask = qp_attr_state | qp_attr_sq_psn;
        if (opt.type == qp_type::rc) {
            at.timeout = opt.timeout;
            at.retry_cnt = opt.retry_cnt;
            at.rnr_retry = opt.rnr_retry;
            at.max_rd_atomic = opt.max_rd_atomic;
            mask |=
                qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic;
        }
        ASSERT_EQ(modify_qp(q, at, mask), verbs_error::ok);
    }

    void TearDown() override {
        if (a.ctx) close_device(a.ctx);
        if (b.ctx) close_device(b.ctx);
        a.ctx = b.ctx = nullptr;
        link.reset();
    }

    /* One round: deliver what the link holds, then let both devices progress.
     * Returns true when anything moved. */
    bool pump() {
        rte_mbuf *pkts[64];
        bool moved = false;
        for (endpoint *e : {&a, &b}) {
            uint16_t n = e->port->rx_burst(pkts, 64);
            if (n) {
                e->ctx->rx_burst(pkts, n);
                moved = true;
            }
            if (e->ctx->poll()) moved = true;
        }
        return moved;
    }

    /* Pump until pred() holds; when nothing moves, let time pass (timers). */
    bool run_until(const std::function<bool()> &pred, uint64_t max_ns = 60'000'000'000ull,
                   unsigned max_rounds = 10'000'000) {
        uint64_t start = clk.now_ns();
        for (unsigned i = 0; i < max_rounds; ++i) {
            if (pred()) return true;
            if (!pump() && link->in_flight() == 0) {
                if (clk.now_ns() - start > max_ns) return pred();
                clk.advance(idle_step_ns);
            }
        }
        return pred();
    }

    void settle() {
        for (int i = 0; i < 100000 && (pump() || link->in_flight()); ++i) {
        }
    }

    /* Poll exactly n completions from c (pumping as needed). */
    std::vector<wc> poll_n(cq *c, size_t n, uint64_t max_ns = 60'000'000'000ull) {
        std::vector<wc> out;
        run_until(
            [&] {
                wc tmp[64];
                int k = poll_cq(c, 64, tmp);
                for (int i = 0; i < k; ++i)
                    out.push_back(tmp[i]);
                return out.size() >= n;
            },
            max_ns);
        return out;
    }

    mr *reg(endpoint &e, void *p, size_t len,
            unsigned acc = access_local_write | access_remote_write | access_remote_read |
                           access_remote_atomic) {
        verbs_error err;
        mr *m = reg_mr(e.pd, p, len, acc, &err);
        EXPECT_NE(m, nullptr) << verbs_error_str(err);
        return m;
    }

    verbs_error post_recv_buf(endpoint &e, void *p, uint32_t len, mr *m, uint64_t id,
                              qp *q = nullptr) {
        sge s{reinterpret_cast<uint64_t>(p), len, mr_lkey(m)};
        recv_wr r;
        r.wr_id = id;
        r.sg_list = &s;
        r.num_sge = 1;
        recv_wr *bad = nullptr;
        return post_recv(q ? q : e.qp, &r, &bad);
    }

    verbs_error post_one(endpoint &e, wr_opcode op, void *local, uint32_t len, mr *m, uint64_t id,
                         uint64_t raddr = 0, uint32_t rkey = 0, unsigned flags = send_signaled,
                         qp *q = nullptr) {
        sge s{reinterpret_cast<uint64_t>(local), len, m ? mr_lkey(m) : 0};
        send_wr w;
        w.wr_id = id;
        w.sg_list = &s;
        w.num_sge = 1;
        w.opcode = op;
        w.send_flags = flags;
        w.wr.rdma.remote_addr = raddr;
        w.wr.rdma.rkey = rkey;
        send_wr *bad = nullptr;
        return post_send(q ? q : e.qp, &w, &bad);
    }

    qp_counters qc(const endpoint &e) const { return e.qp->cnt; }

    /* Hand `to` a packet as if from_qp had sent it (crafted requests). */
    void inject(endpoint &to, const uroce::qp *from_qp, uint8_t opcode, uint32_t psn,
                const ext_fields &x, const void *payload = nullptr, uint32_t len = 0,
                bool ack_req = true) {
        bth_fields bf;
        bf.opcode = opcode;
        bf.psn = psn;
        bf.dest_qp = from_qp->attr.dest_qp_num;
        bf.ack_req = ack_req;
        payload_src src;
        src.flat = static_cast<const uint8_t *>(payload);
        rte_mbuf *m = pkt_build(test_pool(), from_qp->hdr, bf, x, &src, len, 1);
        ASSERT_NE(m, nullptr);
        to.ctx->rx_burst(&m, 1);
    }

    /* Parse a frame on the wire (in a memlink filter). */
    static roce_packet peek(const rte_mbuf *m) {
        roce_packet p;
        EXPECT_EQ(parse_mbuf(m, p), parse_error::ok);
        return p;
    }
};

/* Fused receive tests (doc/security.md): flips one payload byte of the nth
 * frame with a payload that `from` sends (its first transmission only), so
 * that frame's ICRC is bad, and watches the wire until the resend of its PSN:
 * positive ACKs covering it before then are counted, at_resend runs when the
 * resend is on the wire (before it is delivered). */
struct corrupt_once {
    const memlink_port *from = nullptr;
    int nth = 0; /* among the frames with a payload from `from`, 1-based */
    int seen = 0;
    bool corrupted = false, resent = false;
    uint32_t bad_psn = 0;
    uint32_t acks_covering_bad = 0;  /* positive ACKs for bad_psn or later before the resend */
    std::function<void()> at_resend; /* when the resend is on the wire, before delivery */
};

inline memlink::filter_fn corrupt_filter(corrupt_once *c) {
    return [c](rte_mbuf *m, const memlink_port *f) {
        roce_packet p;
        if (parse_mbuf(m, p) != parse_error::ok) return true;
        if (f == c->from) {
            if (!p.payload_len) return true;
            if (!c->corrupted && ++c->seen == c->nth) {
                rte_pktmbuf_mtod(m, uint8_t *)[p.payload_offset + 5] ^= 0xff;
                c->corrupted = true;
                c->bad_psn = p.psn();
            } else if (c->corrupted && !c->resent && p.psn() == c->bad_psn) {
                c->resent = true;
                if (c->at_resend) c->at_resend();
            }
            return true;
        }
        if (c->corrupted && !c->resent && p.opcode == to_u8(ib_opcode::rc_acknowledge) &&
            aeth_syndrome::type(p.aeth()->syndrome) == aeth_syndrome::type_ack &&
            psn_diff(p.psn(), c->bad_psn) >= 0)
            ++c->acks_covering_bad;
        return true;
    };
}

inline void fill_pattern(uint8_t *p, size_t n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = uint8_t(x);
    }
}

} // namespace uroce::test

#endif
