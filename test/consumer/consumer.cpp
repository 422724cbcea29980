/* SPDX-License-Identifier: BSD-3-Clause
 * A program outside the tree, built only from an installed uroce:
 *
 *   c++ -std=$(pkg-config --variable=cxx_std uroce) -Wall -Wextra -Werror \
 *       consumer.cpp $(pkg-config --cflags --libs uroce)
 *
 * It takes the embedding path of doc/api-guide.md from start to end, with
 * nothing but <uroce/...> and DPDK's own headers: EAL through eal_session
 * (hugepages when there are free ones, --no-huge otherwise), a DPDK port
 * (a net_ring vdev, whose ring loops every frame back), the engine, a
 * device, two RC QPs on it connected to each other over that port, and an
 * RDMA WRITE, an RDMA READ and a SEND between them, every byte checked.
 * Exit 0 when all of it worked; 1 with a message otherwise.
 */
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <uroce/eal.h>
#include <uroce/engine.h>
#include <uroce/ethdev.h>
#include <uroce/verbs.h>

namespace {

int fail(const char *what, const std::string &why) {
    std::fprintf(stderr, "consumer: %s: %s\n", what, why.c_str());
    return 1;
}

/* Poll the stack until one completion arrives on cq (or 2 s pass). */
bool wait_completion(uroce::engine &eng, uroce::ethdev_port &port, uroce::cq *cq, uroce::wc &wc) {
    for (long i = 0; i < 20'000'000; i++) {
        if (uroce::poll_cq(cq, 1, &wc) == 1) return true;
        uroce::ethdev_engine_poll(eng, port);
    }
    return false;
}

bool to_rts(uroce::qp *q, uint32_t remote_qpn, const uroce::gid &dgid, const uint8_t *dmac) {
    uroce::qp_attr a;
    a.qp_state = uroce::qp_state::init;
    a.qp_access_flags =
        uroce::access_local_write | uroce::access_remote_write | uroce::access_remote_read;
    if (uroce::modify_qp(q, a,
                         uroce::qp_attr_state | uroce::qp_attr_pkey_index | uroce::qp_attr_port |
                             uroce::qp_attr_access_flags) != uroce::verbs_error::ok)
        return false;
    a.qp_state = uroce::qp_state::rtr;
    a.path_mtu = uroce::mtu::mtu_1024;
    a.dest_qp_num = remote_qpn;
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = 0;
    std::memcpy(a.ah_attr.dmac, dmac, 6);
    if (uroce::modify_qp(q, a,
                         uroce::qp_attr_state | uroce::qp_attr_av | uroce::qp_attr_path_mtu |
                             uroce::qp_attr_dest_qpn | uroce::qp_attr_rq_psn |
                             uroce::qp_attr_max_dest_rd_atomic | uroce::qp_attr_min_rnr_timer) !=
        uroce::verbs_error::ok)
        return false;
    a.qp_state = uroce::qp_state::rts;
    a.sq_psn = 0;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return uroce::modify_qp(q, a,
                            uroce::qp_attr_state | uroce::qp_attr_sq_psn | uroce::qp_attr_timeout |
                                uroce::qp_attr_retry_cnt | uroce::qp_attr_rnr_retry |
                                uroce::qp_attr_max_qp_rd_atomic) == uroce::verbs_error::ok;
}

} // namespace

int main() {
    std::string err;
    uroce::eal_config ec;
    ec.telemetry = false;
    ec.log_level = "*:warning";
    std::unique_ptr<uroce::eal_session> eal = uroce::eal_session::start(ec, err);
    if (!eal) return fail("EAL", err);
    std::printf("EAL up (%s)\n", eal->hugepages() ? "hugepages" : "no hugepages");

    uroce::ethdev_config pc;
    pc.vdev = "net_ring0"; /* short: the PMD names its memzone after it (32 bytes at most) */
    std::unique_ptr<uroce::ethdev_port> port = uroce::ethdev_port::open(pc, err);
    if (!port) return fail("port", err);
    rte_mempool *pool = uroce::make_pktmbuf_pool("consumer_tx", 4095, 2048, err);
    if (!pool) return fail("mbuf pool", err);

    uroce::engine eng(*port);
    const uroce::gid me = uroce::gid::from_ipv4(0x0a2a0001); /* 10.42.0.1 */
    uroce::device_config dc;
    dc.dev = &eng;
    dc.pool = pool;
    dc.gids[dc.num_gids++] = me;
    dc.max_mtu = uroce::mtu::mtu_1024;
    uroce::verbs_error verr;
    uroce::device *dev = uroce::open_device(dc, &verr);
    if (!dev) return fail("open_device", uroce::verbs_error_str(verr));
    eng.attach(dev, nullptr); /* frames come back to us: no neighbour to resolve */

    uroce::pd *pd = uroce::alloc_pd(dev);
    uroce::cq *cq_a = uroce::create_cq(dev, 16), *cq_b = uroce::create_cq(dev, 16);
    const size_t len = 64 * 1024;
    std::vector<uint8_t> src(len), dst(len), back(len);
    for (size_t i = 0; i < len; i++)
        src[i] = uint8_t(i * 7 + 3);
    const unsigned rw =
        uroce::access_local_write | uroce::access_remote_write | uroce::access_remote_read;
    uroce::mr *m_src = uroce::reg_mr(pd, src.data(), len, rw);
    uroce::mr *m_dst = uroce::reg_mr(pd, dst.data(), len, rw);
    uroce::mr *m_back = uroce::reg_mr(pd, back.data(), len, rw);
    if (!pd || !cq_a || !cq_b || !m_src || !m_dst || !m_back) return fail("verbs", "setup");

    uroce::qp_init_attr ia;
    ia.qp_type = uroce::qp_type::rc;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
    ia.send_cq = ia.recv_cq = cq_a;
    uroce::qp *a = uroce::create_qp(pd, ia);
    ia.send_cq = ia.recv_cq = cq_b;
    uroce::qp *b = uroce::create_qp(pd, ia);
    if (!a || !b || !to_rts(a, uroce::qp_num(b), me, port->mac()) ||
        !to_rts(b, uroce::qp_num(a), me, port->mac()))
        return fail("verbs", "QPs to RTS");

    /* A WRITEs src into dst, then READs dst back into back. */
    uroce::sge s{reinterpret_cast<uint64_t>(src.data()), uint32_t(len), uroce::mr_lkey(m_src)};
    uroce::send_wr wr, *bad = nullptr;
    wr.opcode = uroce::wr_opcode::rdma_write;
    wr.send_flags = uroce::send_signaled;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(dst.data());
    wr.wr.rdma.rkey = uroce::mr_rkey(m_dst);
    uroce::wc wc;
    if (uroce::post_send(a, &wr, &bad) != uroce::verbs_error::ok ||
        !wait_completion(eng, *port, cq_a, wc) || wc.status != uroce::wc_status::success)
        return fail("RDMA WRITE", uroce::wc_status_str(wc.status));
    if (dst != src) return fail("RDMA WRITE", "data differs");

    s = {reinterpret_cast<uint64_t>(back.data()), uint32_t(len), uroce::mr_lkey(m_back)};
    wr.opcode = uroce::wr_opcode::rdma_read;
    if (uroce::post_send(a, &wr, &bad) != uroce::verbs_error::ok ||
        !wait_completion(eng, *port, cq_a, wc) || wc.status != uroce::wc_status::success)
        return fail("RDMA READ", uroce::wc_status_str(wc.status));
    if (back != src) return fail("RDMA READ", "data differs");

    /* B posts a receive; A SENDs the first 4 KiB. */
    uroce::sge rs{reinterpret_cast<uint64_t>(back.data()), 4096, uroce::mr_lkey(m_back)};
    uroce::recv_wr rwr, *rbad = nullptr;
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    std::memset(back.data(), 0, 4096);
    s = {reinterpret_cast<uint64_t>(src.data()), 4096, uroce::mr_lkey(m_src)};
    wr.opcode = uroce::wr_opcode::send;
    if (uroce::post_recv(b, &rwr, &rbad) != uroce::verbs_error::ok ||
        uroce::post_send(a, &wr, &bad) != uroce::verbs_error::ok ||
        !wait_completion(eng, *port, cq_b, wc) || wc.status != uroce::wc_status::success ||
        wc.byte_len != 4096 || std::memcmp(back.data(), src.data(), 4096) != 0)
        return fail("SEND", uroce::wc_status_str(wc.status));
    if (!wait_completion(eng, *port, cq_a, wc) || wc.status != uroce::wc_status::success)
        return fail("SEND completion", uroce::wc_status_str(wc.status));

    const uroce::dev_counters &dcnt = uroce::device_counters(dev);
    std::printf("RDMA WRITE, READ and SEND of QP 0x%x to QP 0x%x over %s: data checked; "
                "%lu frames sent, %lu received\n",
                uroce::qp_num(a), uroce::qp_num(b), port->describe().c_str(),
                (unsigned long)dcnt.tx_pkts, (unsigned long)eng.counters().rx_frames);
    uroce::close_device(dev); /* destroys the QPs, CQs, MRs and the PD with it */
    return 0;
}
