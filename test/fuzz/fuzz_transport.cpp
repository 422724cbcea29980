/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the transport's receive path (device::rx_burst: parser,
 * ICRC, QPN lookup, responder, completer, and the timers and requester they
 * drive) with connected QPs in deep states.
 *
 * Per input, from scratch: one device (its netdev a sink that checks and
 * frees what it sends) with QPs in RTS:
 *   0  RC over IPv4, with a SEND, a 3-packet WRITE, two READs, a
 *      compare-and-swap, a fetch-and-add and a SEND-with-immediate posted,
 *      so ACKs, NAKs, READ responses and atomic ACKs have something to match
 *   1  UC over IPv4, a WRITE and a SEND posted
 *   2  UD (Q_Key 0x11111111)
 *   3  RC over IPv6, receiving from an SRQ
 * and receive WRs posted on every receive queue. Path MTU 1024.
 *
 * Input: records [qp][flags][delta][len lo][len hi][len bytes of a frame].
 * Unless flags bit 0 (raw) the frame is parsed, its fields taken
 * (extract_fields), and rebuilt for QP qp%4: MACs, GIDs, P_Key and
 * destination QPN (unless bit 5) of the connection, the PSN (unless bit 1)
 * the QP expects plus the signed delta (the responder's ePSN for requests,
 * the completer's oldest unacknowledged PSN for responses), the R_Key and VA
 * of a chosen MR (bits 2-3: 0 read/write/atomic MR, 1 remote-read-only MR,
 * 2 an MR without remote access, 3 the frame's own; the VA from the frame's
 * low 16 bits: with bit 15, up to 511 bytes before the MR's end, else from
 * 256 bytes before the MR to 256 bytes past it), UD's
 * Q_Key; then write_headers/finish_frame recompute lengths, checksums and
 * the ICRC, so the frame passes the ICRC check and reaches the QP. Bit 4
 * lets 0.5 s pass first (retransmission and RNR timers), bit 6 polls the
 * CQs after, bit 7 posts the RC batch again.
 *
 * Oracle (besides ASan/UBSan): every buffer given to the device (MRs,
 * receive buffers, READ and atomic targets) sits between ASan-poisoned
 * guard areas that also hold a pattern checked at the end, so a write
 * outside an MR or past a receive buffer crashes in the clang build and
 * fails the check in every build; the remote-read-only MR and the local
 * send source never change; every frame the device sends parses with a
 * valid ICRC; every completion names one of our QPs and a WR we posted, a
 * receive completion no longer than its buffer; and closing the device
 * returns every mbuf to the pool (nothing leaked).
 */
#include <algorithm>
#include <vector>

#include "fuzz_common.h"
#include "uroce_device.h"
#include "uroce_qp.h"
#include <uroce/build.h>
#include <uroce/clock.h>
#include <uroce/parse.h>
#include <uroce/verbs.h>

namespace uroce::fuzz {
namespace {

constexpr size_t guard = 64;
constexpr uint8_t guard_byte = 0xa5;

/* Buffers with guard areas between and around them, reset per input. */
class arena {
  public:
    explicit arena(size_t cap) : mem_(new uint8_t[cap + 64]), cap_(cap) {
        base_ = mem_ + (64 - uintptr_t(mem_) % 64) % 64;
    }
    uint8_t *alloc(size_t len) {
        size_t start = used_ + guard;
        size_t end = start + (len + 63) / 64 * 64;
        FUZZ_REQUIRE(end + guard <= cap_);
        regions_.push_back({start, len});
        used_ = end;
        return base_ + start;
    }
    /* Fill the guards with the pattern and poison everything outside the
     * buffers (the whole arena past the last one too). */
    void arm() {
        unpoison(base_, cap_);
        std::memset(base_, guard_byte, used_ + guard);
        size_t prev = 0;
        for (const auto &r : regions_) {
            poison(base_ + prev, r.start - prev);
            prev = r.start + r.len;
        }
        poison(base_ + prev, cap_ - prev);
    }
    /* Every guard byte (between the buffers, and `guard` past the last one)
     * still holds the pattern. */
    void check() {
        static uint8_t pattern[4096];
        static bool init = (std::memset(pattern, guard_byte, sizeof pattern), true);
        (void)init;
        unpoison(base_, cap_);
        auto clean = [&](size_t from, size_t to) {
            for (size_t at = from; at < to; at += sizeof pattern) {
                size_t n = std::min(sizeof pattern, to - at);
                if (std::memcmp(base_ + at, pattern, n) != 0) {
                    std::fprintf(stderr, "fuzz_transport: guard bytes at %zu..%zu overwritten\n",
                                 at, at + n);
                    std::abort();
                }
            }
        };
        size_t prev = 0;
        for (const auto &r : regions_) {
            clean(prev, r.start);
            prev = r.start + r.len;
        }
        clean(prev, used_ + guard);
    }
    void reset() { regions_.clear(), used_ = 0; }

  private:
    struct region {
        size_t start, len;
    };
    uint8_t *mem_;
    uint8_t *base_;
    size_t cap_;
    size_t used_ = 0;
    std::vector<region> regions_;
};

const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 0x0a};
const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x0b};
const gid our_v4 = gid::from_ipv4(0x0a000001), peer_v4 = gid::from_ipv4(0x0a000002);
const gid our_v6 = *gid::parse("fd00::1"), peer_v6 = *gid::parse("fd00::2");
constexpr uint32_t peer_qpn[4] = {0x22, 0x23, 0x24, 0x25};
constexpr uint32_t ud_qkey = 0x11111111;
constexpr uint32_t rq_psn = 0x123456;                         /* the peer's first PSN */
constexpr uint32_t sq_psn[4] = {0xfffff0, 0x10, 0, 0x777777}; /* ours; RC 0 near the wrap */

/* The port: every frame the device sends must parse and verify. */
class sink_netdev final : public netdev {
  public:
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        for (uint16_t i = 0; i < n; i++) {
            roce_packet p;
            parse_error e = parse_mbuf_verified(pkts[i], p);
            if (e != parse_error::ok) {
                std::fprintf(stderr,
                             "fuzz_transport: the device sent a frame that does not parse: %s\n",
                             parse_error_name(e));
                std::abort();
            }
            sent++;
        }
        rte_pktmbuf_free_bulk(pkts, n);
        return n;
    }
    const uint8_t *mac() const override { return our_mac; }
    netdev_caps caps() const override { return {9000, false}; }
    uint64_t sent = 0;
};

struct posted {
    uint64_t id;
    uint32_t len;
};

struct harness {
    manual_clock clk{1'000'000'000};
    sink_netdev sink;
    device *dev = nullptr;
    pd *pd_ = nullptr;
    cq *scq = nullptr, *rcq = nullptr;
    srq *srq_ = nullptr;
    qp *qps[4] = {};
    mr *rw = nullptr, *ro = nullptr, *src = nullptr, *rd1 = nullptr, *rd2 = nullptr, *at1 = nullptr,
       *at2 = nullptr;
    uint8_t *rw_buf, *ro_buf, *src_buf, *rd1_buf, *rd2_buf, *at1_buf, *at2_buf;
    uint64_t next_id = 1;
    std::vector<posted> recvs; /* id -> length, for the completion check */

    static arena &mem() {
        static arena a(128 << 10);
        return a;
    }

    mr *reg(uint8_t *&buf, size_t len, unsigned acc) {
        buf = mem().alloc(len);
        verbs_error err;
        mr *m = reg_mr(pd_, buf, len, acc, &err);
        FUZZ_REQUIRE(m != nullptr);
        return m;
    }

    void fill_buffers() {
        for (size_t i = 0; i < 8192; i++)
            rw_buf[i] = uint8_t(i * 7);
        for (size_t i = 0; i < 4096; i++)
            ro_buf[i] = uint8_t(i * 13 + 1);
        for (size_t i = 0; i < 4096; i++)
            src_buf[i] = uint8_t(i * 3 + 5);
    }

    void post_recv_on(qp *q, srq *s, uint32_t len, uint32_t extra) {
        uint8_t *buf = mem().alloc(len + extra);
        verbs_error err;
        mr *m = reg_mr(pd_, buf, len + extra, access_local_write, &err);
        FUZZ_REQUIRE(m != nullptr);
        sge sg{reinterpret_cast<uint64_t>(buf), len + extra, mr_lkey(m)};
        recv_wr r;
        r.wr_id = next_id++;
        r.sg_list = &sg;
        r.num_sge = 1;
        recv_wr *bad = nullptr;
        verbs_error e = s ? post_srq_recv(s, &r, &bad) : post_recv(q, &r, &bad);
        FUZZ_REQUIRE(e == verbs_error::ok);
        recvs.push_back({r.wr_id, len + extra});
    }

    void connect(int i, qp_type type) {
        qp *q = qps[i];
        qp_attr at;
        at.qp_state = qp_state::init;
        at.pkey_index = 0;
        at.port_num = 1;
        unsigned mask = qp_attr_state | qp_attr_pkey_index | qp_attr_port;
        if (type == qp_type::ud) {
            at.qkey = ud_qkey;
            mask |= qp_attr_qkey;
        } else {
            at.qp_access_flags = access_remote_write | access_remote_read | access_remote_atomic;
            mask |= qp_attr_access_flags;
        }
        FUZZ_REQUIRE(modify_qp(q, at, mask) == verbs_error::ok);
        at = qp_attr{};
        at.qp_state = qp_state::rtr;
        mask = qp_attr_state;
        if (type != qp_type::ud) {
            at.path_mtu = mtu::mtu_1024;
            at.dest_qp_num = peer_qpn[i];
            at.rq_psn = rq_psn;
            at.ah_attr.grh.dgid = i == 3 ? peer_v6 : peer_v4;
            at.ah_attr.grh.sgid_index = i == 3 ? 1 : 0;
            at.ah_attr.grh.hop_limit = 64;
            std::memcpy(at.ah_attr.dmac, peer_mac, 6);
            mask |= qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn | qp_attr_rq_psn;
            if (type == qp_type::rc) {
                at.max_dest_rd_atomic = 4;
                at.min_rnr_timer = 1;
                mask |= qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer;
            }
        }
        FUZZ_REQUIRE(modify_qp(q, at, mask) == verbs_error::ok);
        at = qp_attr{};
        at.qp_state = qp_state::rts;
        at.sq_psn = sq_psn[i];
        mask = qp_attr_state | qp_attr_sq_psn;
        if (type == qp_type::rc) {
            at.timeout = 14;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 4;
            mask |=
                qp_attr_timeout | qp_attr_retry_cnt | qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic;
        }
        FUZZ_REQUIRE(modify_qp(q, at, mask) == verbs_error::ok);
    }

    bool post(qp *q, wr_opcode op, uint8_t *local, uint32_t len, mr *m, uint64_t raddr,
              uint64_t cmp = 0, uint64_t swap = 0) {
        sge sg{reinterpret_cast<uint64_t>(local), len, m ? mr_lkey(m) : 0};
        send_wr w;
        w.wr_id = next_id++;
        w.sg_list = len ? &sg : nullptr;
        w.num_sge = len ? 1 : 0;
        w.opcode = op;
        w.send_flags = send_signaled;
        if (op == wr_opcode::atomic_cmp_and_swp || op == wr_opcode::atomic_fetch_and_add) {
            w.wr.atomic.remote_addr = raddr;
            w.wr.atomic.rkey = 0x4242;
            w.wr.atomic.compare_add = cmp;
            w.wr.atomic.swap = swap;
        } else {
            w.wr.rdma.remote_addr = raddr;
            w.wr.rdma.rkey = 0x4242;
        }
        if (op == wr_opcode::send_with_imm || op == wr_opcode::rdma_write_with_imm)
            w.imm_data = 0x01020304;
        send_wr *bad = nullptr;
        return post_send(q, &w, &bad) == verbs_error::ok;
    }

    void post_rc_batch() {
        qp *q = qps[0];
        post(q, wr_opcode::send, src_buf, 64, src, 0);
        post(q, wr_opcode::rdma_write, src_buf, 2500, src, 0x10000);
        post(q, wr_opcode::rdma_read, rd1_buf, 3000, rd1, 0x20000);
        post(q, wr_opcode::atomic_cmp_and_swp, at1_buf, 8, at1, 0x30000, 5, 6);
        post(q, wr_opcode::atomic_fetch_and_add, at2_buf, 8, at2, 0x30008, 1);
        post(q, wr_opcode::rdma_read, rd2_buf, 100, rd2, 0x20400);
        post(q, wr_opcode::send_with_imm, nullptr, 0, nullptr, 0);
    }

    void open() {
        mem().reset();
        device_config cfg;
        cfg.dev = &sink;
        cfg.pool = eal_pool();
        cfg.gids[0] = our_v4;
        cfg.gids[1] = our_v6;
        cfg.num_gids = 2;
        cfg.clock = &clk;
        cfg.seed = 1;
        cfg.max_qp = 16;
        cfg.max_mr = 128;
        verbs_error err;
        dev = open_device(cfg, &err);
        FUZZ_REQUIRE(dev != nullptr);
        pd_ = alloc_pd(dev);
        scq = create_cq(dev, 1024);
        rcq = create_cq(dev, 1024);
        srq_init_attr sa;
        sa.attr.max_wr = 16;
        sa.attr.max_sge = 1;
        srq_ = create_srq(pd_, sa, &err);
        FUZZ_REQUIRE(pd_ && scq && rcq && srq_);
        const qp_type types[4] = {qp_type::rc, qp_type::uc, qp_type::ud, qp_type::rc};
        for (int i = 0; i < 4; i++) {
            qp_init_attr ia;
            ia.send_cq = scq;
            ia.recv_cq = rcq;
            ia.srq = i == 3 ? srq_ : nullptr;
            ia.qp_type = types[i];
            ia.cap.max_send_wr = 64;
            ia.cap.max_recv_wr = 16;
            ia.cap.max_send_sge = 2;
            ia.cap.max_recv_sge = 2;
            ia.cap.max_inline_data = 64;
            qps[i] = create_qp(pd_, ia, &err);
            FUZZ_REQUIRE(qps[i] != nullptr);
            connect(i, types[i]);
        }
        const unsigned remote =
            access_local_write | access_remote_write | access_remote_read | access_remote_atomic;
        rw = reg(rw_buf, 8192, remote);
        ro = reg(ro_buf, 4096, access_remote_read);
        src = reg(src_buf, 4096, 0);
        rd1 = reg(rd1_buf, 3000, access_local_write);
        rd2 = reg(rd2_buf, 100, access_local_write);
        at1 = reg(at1_buf, 8, access_local_write);
        at2 = reg(at2_buf, 8, access_local_write);
        for (int i = 0; i < 3; i++)
            for (uint32_t len : {64u, 1000u, 4096u, 300u})
                post_recv_on(qps[i], nullptr, len, i == 2 ? 40 : 0);
        for (uint32_t len : {64u, 1000u, 4096u, 300u})
            post_recv_on(nullptr, srq_, len, 0);
        mem().arm();
        fill_buffers();

        post_rc_batch();
        post(qps[1], wr_opcode::rdma_write, src_buf, 1500, src, 0x10000);
        post(qps[1], wr_opcode::send, src_buf, 10, src, 0);
        pump();
    }

    void pump() {
        for (int i = 0; i < 16 && dev->poll(); i++) {
        }
    }

    void poll_cqs() {
        wc w[64];
        for (cq *c : {scq, rcq}) {
            int n;
            while ((n = poll_cq(c, 64, w)) > 0)
                for (int i = 0; i < n; i++)
                    check_wc(w[i], c == rcq);
            FUZZ_REQUIRE(n == 0);
        }
    }

    void check_wc(const wc &w, bool recv) {
        bool ours = false;
        for (qp *q : qps)
            ours |= w.qp_num == qp_num(q);
        FUZZ_REQUIRE(ours);
        FUZZ_REQUIRE(w.wr_id > 0 && w.wr_id < next_id);
        if (recv && w.status == wc_status::success) {
            bool found = false;
            for (const posted &p : recvs)
                if (p.id == w.wr_id) {
                    FUZZ_REQUIRE(w.byte_len <= p.len);
                    found = true;
                }
            FUZZ_REQUIRE(found);
        }
    }

    /* FUZZ_VERBOSE=1: the non-zero counters, to see how deep an input gets. */
    void print_counters() {
        if (!std::getenv("FUZZ_VERBOSE")) return;
        const dev_counters &dc = device_counters(dev);
        for (const counter_desc &d : dev_counter_table)
            if (uint64_t v = counter_value(dc, d))
                std::fprintf(stderr, " dev.%s=%llu", d.name, (unsigned long long)v);
        for (int i = 0; i < 4; i++)
            for (const counter_desc &d : qp_counter_table)
                if (uint64_t v = counter_value(qp_counters_of(qps[i]), d))
                    std::fprintf(stderr, " qp%d.%s=%llu", i, d.name, (unsigned long long)v);
        std::fprintf(stderr, "\n");
    }

    void close() {
        pump();
        poll_cqs();
        print_counters();
        FUZZ_REQUIRE(close_device(dev) == verbs_error::ok);
        dev = nullptr;
        mem().check();
        for (size_t i = 0; i < 4096; i++)
            FUZZ_REQUIRE(ro_buf[i] == uint8_t(i * 13 + 1));
        for (size_t i = 0; i < 4096; i++)
            FUZZ_REQUIRE(src_buf[i] == uint8_t(i * 3 + 5));
    }

    /* The frame as the peer of QP i would send it, per the record's flags. */
    rte_mbuf *rebuild(const uint8_t *frame, size_t len, unsigned i, uint8_t flags, int8_t delta) {
        roce_packet p;
        if (parse_frame(frame, len, p) != parse_error::ok) return mbuf_of(frame, len);
        roce_path path;
        bth_fields b;
        ext_fields x;
        uint16_t ip_id;
        extract_fields(p, path, b, x, ip_id);
        qp *q = qps[i];
        std::memcpy(path.src_mac, peer_mac, 6);
        std::memcpy(path.dst_mac, our_mac, 6);
        path.sgid = i == 3 ? peer_v6 : peer_v4;
        path.dgid = i == 3 ? our_v6 : our_v4;
        path_set_ip_version(path);
        b.pkey = 0xffff;
        if (!(flags & 0x20)) b.dest_qp = qp_num(q);
        if (!(flags & 0x02)) {
            bool request = p.info->has(op_flag::request);
            b.psn = uint32_t((request ? q->resp.psn : q->comp.psn) + int32_t(delta)) & 0xffffff;
        }
        /* The VA from the frame's low 16 bits: with bit 15 set, up to 511
         * bytes before the MR's end (where off-by-one bounds checks fail),
         * else from 256 bytes before the MR to 256 bytes past it. */
        auto place = [&](mr *m, const uint8_t *buf, size_t len) {
            const uint64_t v = x.va & 0xffff, base = reinterpret_cast<uint64_t>(buf);
            x.rkey = mr_rkey(m);
            x.va = v & 0x8000 ? base + len - (v & 0x1ff) : base + (v & 0x7fff) % (len + 512) - 256;
        };
        switch (flags >> 2 & 3) {
        case 0:
            place(rw, rw_buf, 8192);
            break;
        case 1:
            place(ro, ro_buf, 4096);
            break;
        case 2:
            place(src, src_buf, 4096);
            break;
        default:
            break;
        }
        if (q->type == qp_type::ud && !(flags & 0x0c)) x.qkey = ud_qkey;
        x.src_qp = peer_qpn[i];
        size_t n = frame_length(path, b.opcode, p.payload_len);
        std::vector<uint8_t> out(n);
        size_t hl = write_headers(out.data(), path, b, x, p.payload_len, ip_id);
        if (p.payload_len) std::memcpy(out.data() + hl, p.payload(), p.payload_len);
        n = finish_frame(out.data(), hl, p.payload_len, l2_length(path));
        return mbuf_of(out.data(), n);
    }
};

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce::fuzz;
    if (size > 65536) return 0;
    rte_mempool *pool = eal_pool();
    const unsigned avail0 = rte_mempool_avail_count(pool);
    {
        harness h;
        h.open();
        byte_reader in(data, size);
        for (int records = 0; !in.empty() && records < 64; records++) {
            unsigned i = in.u8() % 4;
            uint8_t flags = in.u8();
            int8_t delta = int8_t(in.u8());
            size_t len = in.u16();
            const uint8_t *frame = in.take(len);
            if (flags & 0x10) h.clk.advance(500'000'000);
            h.clk.advance(1000);
            rte_mbuf *m = flags & 1 ? mbuf_of(frame, len) : h.rebuild(frame, len, i, flags, delta);
            if (m) h.dev->rx_burst(&m, 1);
            h.pump();
            if (flags & 0x40) h.poll_cqs();
            if (flags & 0x80) h.post_rc_batch();
        }
        h.close();
    }
    if (rte_mempool_avail_count(pool) != avail0) {
        std::fprintf(stderr, "fuzz_transport: %d mbufs leaked\n",
                     int(avail0) - int(rte_mempool_avail_count(pool)));
        std::abort();
    }
    return 0;
}
