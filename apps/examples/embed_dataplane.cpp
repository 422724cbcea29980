/* SPDX-License-Identifier: BSD-3-Clause
 * Embedding uroce in a custom dataplane's own poll loop (doc/api-guide.md).
 *
 * The dataplane owns its DPDK ports and its loop. It hands uroce the frames
 * uroce should see (RoCEv2, ARP, ICMP; classify_frame() tells which), calls
 * engine::poll() once per iteration, and gives uroce a netdev through which
 * uroce's frames leave. Everything else stays the dataplane's business.
 *
 * To run standalone, this example builds two such dataplanes in one
 * process, joined by a net_ring pair, and has host A RDMA-WRITE 1 MiB into
 * host B's memory, then READ it back, checking every byte. Then it does it
 * again from an application thread of its own, through a work channel
 * (uroce_work_channel.h; doc/api-guide.md section 8), while the dataplane
 * loop keeps running and serves the channel.
 *
 *   embed_dataplane            (no arguments: uroce_eal.h's EAL defaults)
 */
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <uroce/eal.h>
#include <uroce/engine.h>
#include <uroce/neigh.h>
#include <uroce/verbs.h>
#include <uroce/work_channel.h>

using namespace uroce;

namespace {

/* 1. The dataplane's way out: uroce calls tx_burst() on this. */
class my_port_tx final : public netdev {
  public:
    my_port_tx(uint16_t port, const rte_ether_addr &mac) : port_(port), mac_(mac) {}
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        return rte_eth_tx_burst(port_, 0, pkts, n);
    }
    const uint8_t *mac() const override { return mac_.addr_bytes; }
    netdev_caps caps() const override {
        netdev_caps c;
        c.max_frame_len = 9018; /* net_ring carries jumbo frames */
        return c;
    }

  private:
    uint16_t port_;
    rte_ether_addr mac_;
};

/* 2. One host: the dataplane's port plus a uroce stack on it. */
struct host {
    uint16_t port;
    rte_mempool *pool;
    std::unique_ptr<my_port_tx> tx;
    local_addr_table addrs;
    std::unique_ptr<neigh> nb;
    std::unique_ptr<engine> eng;
    device *ctx = nullptr;
    uint64_t other_frames = 0; /* what the dataplane keeps for itself */

    host(uint16_t port_id, rte_mempool *mp, uint8_t host_id) : port(port_id), pool(mp) {
        rte_ether_addr mac = {{0x02, 0, 0, 0, 0x42, host_id}};
        tx = std::make_unique<my_port_tx>(port, mac);
        addrs.set_mac(mac_addr::from_bytes(mac.addr_bytes));
        addrs.add_ipv4(0x0a2a0000 | host_id, 24); /* 10.42.0.<id> */
        neigh_config nc;
        nc.pool = pool;
        nb = std::make_unique<neigh>(nc, addrs);
        eng = std::make_unique<engine>(*tx); /* frames out go through my_port_tx */
        device_config dc;
        dc.dev = eng.get();
        dc.pool = pool;
        for (size_t i = 0; i < addrs.gid_count() && i < 4; i++)
            dc.gids[dc.num_gids++] = *addrs.gid_at(i);
        ctx = open_device(dc);
        eng->attach(ctx, nb.get());
    }
    ~host() { close_device(ctx); }

    /* 3. The dataplane's own loop body. */
    void poll_once() {
        rte_mbuf *pkts[32], *mine[32], *theirs[32];
        uint16_t n = rte_eth_rx_burst(port, 0, pkts, 32), n_mine = 0, n_theirs = 0;
        for (uint16_t i = 0; i < n; i++) {
            frame_class c = classify_frame(pkts[i]);
            if (c == frame_class::roce || c == frame_class::neighbour)
                theirs[n_theirs++] = pkts[i]; /* uroce's */
            else
                mine[n_mine++] = pkts[i]; /* the dataplane's own traffic */
        }
        eng->rx_burst(theirs, n_theirs); /* consumes them */
        other_frames += n_mine;
        rte_pktmbuf_free_bulk(mine, n_mine);
        eng->poll(); /* uroce's send queues, ACKs, timers */
    }
};

} // namespace

int main() {
    /* 0. DPDK, started the documented way (uroce_eal.h): uroce's defaults
     * run anywhere, on free hugepages or without them (--no-huge -m 256),
     * on lcore 0, without PCI; the session ends EAL and removes its runtime
     * directory when it goes. With your own EAL arguments: ec.args. */
    eal_config ec;
    ec.memory_mb = 256;
    ec.log_level = "lib.telemetry:error *:warning";
    std::string err;
    std::unique_ptr<eal_session> eal = eal_session::start(ec, err);
    if (!eal) {
        std::fprintf(stderr, "embed_dataplane: %s\n", err.c_str());
        return 1;
    }
    /* Mbufs that hold a whole jumbo frame each: uroce builds a frame in one. */
    rte_mempool *pool = make_pktmbuf_pool("embed", 8191, jumbo_frame_room, err);
    if (!pool) {
        std::fprintf(stderr, "embed_dataplane: %s\n", err.c_str());
        return 1;
    }
    rte_ring *ab = rte_ring_create("embed_ab", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring *ba = rte_ring_create("embed_ba", 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    int pa = rte_eth_from_rings("embed_a", &ba, 1, &ab, 1, 0);
    int pb = rte_eth_from_rings("embed_b", &ab, 1, &ba, 1, 0);
    if (!ab || !ba || pa < 0 || pb < 0) {
        std::fprintf(stderr, "embed_dataplane: cannot create the ring pair\n");
        return 1;
    }
    for (int p : {pa, pb}) { /* the dataplane configures its ports as it always does */
        rte_eth_conf conf{};
        rte_eth_dev_configure(uint16_t(p), 1, 1, &conf);
        rte_eth_rx_queue_setup(uint16_t(p), 0, 1024, 0, nullptr, pool);
        rte_eth_tx_queue_setup(uint16_t(p), 0, 1024, 0, nullptr);
        rte_eth_dev_start(uint16_t(p));
    }
    int rc = 0;
    {
        host a(uint16_t(pa), pool, 1), b(uint16_t(pb), pool, 2);
        auto both = [&] {
            a.poll_once();
            b.poll_once();
        };

        /* Resolve each other's MAC (ARP through uroce's neighbour code). */
        const gid ga = gid::from_ipv4(0x0a2a0001), gb = gid::from_ipv4(0x0a2a0002);
        std::optional<mac_addr> mac_a, mac_b;
        for (int i = 0; i < 10000 && !(mac_a && mac_b); i++) {
            both();
            if (!mac_b) mac_b = a.nb->resolve(gb);
            if (!mac_a) mac_a = b.nb->resolve(ga);
        }

        /* The verbs objects, exactly as with libibverbs. */
        const size_t len = 1 << 20;
        std::vector<uint8_t> src(len), dst(len, 0), back(len, 0);
        for (size_t i = 0; i < len; i++)
            src[i] = uint8_t(i * 31 + 7);
        pd *pda = alloc_pd(a.ctx), *pdb = alloc_pd(b.ctx);
        mr *msrc = reg_mr(pda, src.data(), len, access_local_write);
        mr *mback = reg_mr(pda, back.data(), len, access_local_write);
        mr *mdst = reg_mr(pdb, dst.data(), len,
                          access_local_write | access_remote_write | access_remote_read);
        cq *cqa = create_cq(a.ctx, 64), *cqb = create_cq(b.ctx, 64);
        qp_init_attr ia;
        ia.qp_type = qp_type::rc;
        ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
        ia.send_cq = ia.recv_cq = cqa;
        qp *qa = create_qp(pda, ia);
        ia.send_cq = ia.recv_cq = cqb;
        qp *qb = create_qp(pdb, ia);
        auto connect = [](qp *q, uint32_t dest, const gid &dgid, const mac_addr &dmac) {
            qp_attr at;
            at.qp_state = qp_state::init;
            at.port_num = 1;
            at.qp_access_flags = access_remote_write | access_remote_read;
            modify_qp(q, at,
                      qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags);
            at = qp_attr{};
            at.qp_state = qp_state::rtr;
            at.path_mtu = mtu::mtu_4096;
            at.dest_qp_num = dest;
            at.rq_psn = 0x1000;
            at.max_dest_rd_atomic = 16;
            at.min_rnr_timer = 12;
            at.ah_attr.grh.dgid = dgid;
            at.ah_attr.grh.sgid_index = 1; /* GID 1: our IPv4 address, as on rxe */
            dmac.copy_to(at.ah_attr.dmac);
            modify_qp(q, at,
                      qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                          qp_attr_rq_psn | qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer);
            at = qp_attr{};
            at.qp_state = qp_state::rts;
            at.sq_psn = 0x1000;
            at.timeout = 14;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 16;
            return modify_qp(q, at,
                             qp_attr_state | qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt |
                                 qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic);
        };
        if (!mac_a || !mac_b || connect(qa, qp_num(qb), gb, *mac_b) != verbs_error::ok ||
            connect(qb, qp_num(qa), ga, *mac_a) != verbs_error::ok) {
            std::fprintf(stderr, "embed_dataplane: could not connect the QPs\n");
            return 1;
        }

        auto run = [&](wr_opcode op, mr *local, uint8_t *buf) {
            sge s{uint64_t(uintptr_t(buf)), uint32_t(len), mr_lkey(local)};
            send_wr wr;
            wr.sg_list = &s;
            wr.num_sge = 1;
            wr.opcode = op;
            wr.send_flags = send_signaled;
            wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst.data()));
            wr.wr.rdma.rkey = mr_rkey(mdst);
            send_wr *bad;
            post_send(qa, &wr, &bad);
            wc w;
            while (poll_cq(cqa, 1, &w) == 0)
                both();
            return w.status;
        };
        wc_status ws = run(wr_opcode::rdma_write, msrc, src.data());
        wc_status rs = run(wr_opcode::rdma_read, mback, back.data());
        bool same = src == dst && src == back;
        std::printf("RDMA WRITE 1 MiB: %s, RDMA READ back: %s, data %s\n", wc_status_str(ws),
                    wc_status_str(rs), same ? "identical" : "DIFFERENT");
        std::printf(
            "frames through uroce: A sent %lu, received %lu; frames the dataplane kept: %lu\n",
            (unsigned long)a.eng->counters().tx_frames, (unsigned long)a.eng->counters().rx_frames,
            (unsigned long)(a.other_frames + b.other_frames));
        rc = (ws == wc_status::success && rs == wc_status::success && same) ? 0 : 1;

        /* 4. The same from an application thread: it posts through a work
         * channel, the dataplane loop serves the channel next to poll(). */
        work_channel_config cc;
        cc.dev = a.ctx;
        std::unique_ptr<work_channel> ch = work_channel::create(cc);
        ch->add_cq(cqa); /* the channel polls cqa from now on */
        for (size_t i = 0; i < len; i++)
            src[i] = uint8_t(i * 13 + 5);
        std::atomic<bool> app_done{false};
        bool app_ok = false;
        std::thread app([&] {
            /* Not on the lcore's CPU: two spinning threads on one CPU crawl. */
            cpu_set_t cpus;
            CPU_ZERO(&cpus);
            for (long c = 1; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
                CPU_SET(c, &cpus);
            if (CPU_COUNT(&cpus)) pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
            const uint32_t chunk = 4096, n = uint32_t(len / chunk);
            uint32_t done = 0, errors = 0;
            auto post = [&](wr_opcode op, uint8_t *local, mr *m, uint32_t bytes, size_t off) {
                sge s{uint64_t(uintptr_t(local)), bytes, mr_lkey(m)};
                send_wr wr;
                wr.sg_list = &s;
                wr.num_sge = 1;
                wr.opcode = op;
                wr.send_flags = send_signaled;
                wr.wr.rdma.remote_addr = uint64_t(uintptr_t(dst.data() + off));
                wr.wr.rdma.rkey = mr_rkey(mdst);
                send_wr *bad; /* copied: wr and s may go as soon as this returns */
                return ch->post_send(qa, &wr, &bad) == verbs_error::ok; /* else ring full */
            };
            auto reap = [&] {
                wc w[16];
                int k = ch->poll(16, w);
                for (int i = 0; i < k; i++)
                    errors += w[i].status != wc_status::success;
                done += uint32_t(k);
                if (k == 0) std::this_thread::yield();
            };
            /* 256 WRITEs of 4 KiB, at most 16 in flight (the QP's max_send_wr), */
            for (uint32_t posted = 0; posted < n;) {
                if (posted - done < 16 &&
                    post(wr_opcode::rdma_write, src.data() + size_t(posted) * chunk, msrc, chunk,
                         size_t(posted) * chunk))
                    posted++;
                else
                    reap();
            }
            while (done < n)
                reap();
            /* then the whole MiB READ back. */
            while (!post(wr_opcode::rdma_read, back.data(), mback, uint32_t(len), 0))
                reap();
            while (done < n + 1)
                reap();
            app_ok = errors == 0;
            app_done.store(true, std::memory_order_release);
        });
        while (!app_done.load(std::memory_order_acquire)) { /* the dataplane loop */
            ch->serve();   /* the app's WRs to the device, completions back */
            a.poll_once(); /* whose engine poll() sends what serve() posted */
            b.poll_once();
        }
        app.join();
        same = src == dst && src == back;
        std::printf(
            "from an application thread through a work channel: 256 x 4 KiB WRITE + READ back: %s, "
            "data %s (%lu WRs served)\n",
            app_ok ? "success" : "ERRORS", same ? "identical" : "DIFFERENT",
            (unsigned long)ch->serve_counters().served.load());
        if (!app_ok || !same) rc = 1;
    }
    return rc; /* ~eal_session: rte_eal_cleanup, runtime directory removed */
}
