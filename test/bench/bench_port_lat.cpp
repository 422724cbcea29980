/* SPDX-License-Identifier: BSD-3-Clause
 * bench_port_lat: the bare port's latency, the reference for uroce-perf's
 * latency tests over a port between two processes (issue 14's memif
 * target). Two processes open the same port as uroce does (ethdev_port:
 * its vdev fix-ups, pool and queue sizes, shared memory faulted in), then
 * ping-pong raw frames with no stack: the client sends `frames` frames,
 * the server returns each burst as soon as all of it is in, and the client
 * times each round trip from its send. Printed as half a round trip, as
 * perftest's send_lat prints it, so a uroce-perf send_lat line over the
 * same port compares with it directly: the difference is uroce's own path.
 *
 * Why two frames: over a connected QP each direction of a send_lat round
 * trip carries two frames, the SEND and the ACK of the peer's last one
 * (uroce-perf sends them in one burst, device_config::respond_on_poll).
 *
 *   bench_port_lat EAL-ARGS -- --vdev=net_memif0,role=server,socket=S [-n N] [-s BYTES] [-f FRAMES]
 *   bench_port_lat EAL-ARGS -- --vdev=net_memif0,role=client,socket=S --client [...]
 *
 * The client prints one line per run (t_min, t_typical = the median, t_avg,
 * 99%, in microseconds); the server exits when the client's last frame is
 * answered. test/bench/port_lat.sh runs both, and uroce-perf beside them.
 */
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <uroce/ethdev.h>

namespace {

/* IEEE 802 local experimental EtherType: no stack on either side parses it. */
constexpr uint16_t bench_ether_type = 0x88b5;

struct options {
    std::string vdev;
    bool client = false;
    uint64_t iters = 20000;
    uint64_t warmup = 2000; /* round trips before the samples: the first pass over the rings */
    /* a 2 B RoCEv2 SEND over IPv4: 14 + 20 + 8 + 12 + 4 (payload, pad) + 4 */
    uint16_t frame_len = 62;
    uint16_t frames = 2;
};

int usage(const char *prog) {
    std::fprintf(stderr,
                 "usage: %s EAL-ARGS -- --vdev=SPEC [--client] [-n ITERS] [-w WARMUP] "
                 "[-s FRAME_BYTES] [-f FRAMES_PER_DIRECTION]\n",
                 prog);
    return 2;
}

bool parse(int argc, char **argv, options &o) {
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&](uint64_t lo, uint64_t hi, uint64_t &out) {
            if (i + 1 >= argc) return false;
            char *end = nullptr;
            const unsigned long long v = std::strtoull(argv[++i], &end, 10);
            if (*end || v < lo || v > hi) return false;
            out = v;
            return true;
        };
        uint64_t v = 0;
        if (a.rfind("--vdev=", 0) == 0) {
            o.vdev = a.substr(7);
        } else if (a == "--client") {
            o.client = true;
        } else if (a == "-n") {
            if (!value(1, 100'000'000, o.iters)) return false;
        } else if (a == "-w") {
            if (!value(0, 100'000'000, o.warmup)) return false;
        } else if (a == "-s") {
            if (!value(RTE_ETHER_HDR_LEN, 9000, v)) return false;
            o.frame_len = uint16_t(v);
        } else if (a == "-f") {
            if (!value(1, 32, v)) return false;
            o.frames = uint16_t(v);
        } else {
            return false;
        }
    }
    return !o.vdev.empty();
}

/* A burst of `frames` frames; the first carries the round trip's number,
 * the last is marked as the last of the run when `last`. */
bool fill_burst(rte_mempool *pool, const options &o, const uint8_t *mac, uint64_t seq, bool last,
                rte_mbuf **out) {
    if (rte_pktmbuf_alloc_bulk(pool, out, o.frames) != 0) return false;
    for (uint16_t k = 0; k < o.frames; k++) {
        auto *f = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(out[k], o.frame_len));
        if (!f) { /* a frame larger than the pool's data room */
            rte_pktmbuf_free_bulk(out, o.frames);
            return false;
        }
        std::memset(f, 0, o.frame_len);
        auto *eth = reinterpret_cast<rte_ether_hdr *>(f);
        std::memset(eth->dst_addr.addr_bytes, 0xff, RTE_ETHER_ADDR_LEN);
        std::memcpy(eth->src_addr.addr_bytes, mac, RTE_ETHER_ADDR_LEN);
        eth->ether_type = rte_cpu_to_be_16(bench_ether_type);
        if (o.frame_len >= RTE_ETHER_HDR_LEN + 9) {
            std::memcpy(f + RTE_ETHER_HDR_LEN, &seq, sizeof(seq));
            f[RTE_ETHER_HDR_LEN + 8] = last && k + 1 == o.frames;
        }
    }
    return true;
}

bool is_last(const rte_mbuf *m) {
    return m->data_len >= RTE_ETHER_HDR_LEN + 9 &&
           rte_pktmbuf_mtod(m, const uint8_t *)[RTE_ETHER_HDR_LEN + 8];
}

/* Sends a whole burst; a full ring is retried (the peer drains it). */
void send_all(uroce::ethdev_port &port, rte_mbuf **pkts, uint16_t n) {
    uint16_t sent = 0;
    while (sent < n)
        sent = uint16_t(sent + port.tx_burst(0, pkts + sent, uint16_t(n - sent)));
}

/* Receives exactly n frames (the caller's burst size), or false after 10 s. */
bool receive(uroce::ethdev_port &port, rte_mbuf **pkts, uint16_t n) {
    uint16_t got = 0;
    const uint64_t limit = rte_get_tsc_cycles() + 10 * rte_get_tsc_hz();
    uint32_t spins = 0;
    while (got < n) {
        got = uint16_t(got + port.rx_burst(0, pkts + got, uint16_t(n - got)));
        if (got < n && (++spins & 1023) == 0 && rte_get_tsc_cycles() > limit) {
            rte_pktmbuf_free_bulk(pkts, got);
            return false;
        }
    }
    return true;
}

int run_server(uroce::ethdev_port &port, const options &o) {
    std::vector<rte_mbuf *> pkts(o.frames);
    for (;;) {
        if (!receive(port, pkts.data(), o.frames)) {
            std::fprintf(stderr, "bench_port_lat server: no frame for 10 s\n");
            return 1;
        }
        const bool last = is_last(pkts[o.frames - 1]);
        send_all(port, pkts.data(), o.frames); /* the same mbufs go back */
        if (last) return 0;
    }
}

int run_client(uroce::ethdev_port &port, const options &o) {
    std::vector<rte_mbuf *> pkts(o.frames);
    std::vector<uint64_t> cycles;
    cycles.reserve(o.iters);
    const uint64_t total = o.warmup + o.iters;
    for (uint64_t it = 0; it < total; it++) {
        if (!fill_burst(port.pool(), o, port.mac(), it, it + 1 == total, pkts.data())) {
            std::fprintf(stderr,
                         "bench_port_lat client: no mbufs for a burst of %u frames of %u bytes\n",
                         o.frames, o.frame_len);
            return 1;
        }
        const uint64_t t0 = rte_rdtsc();
        send_all(port, pkts.data(), o.frames);
        if (!receive(port, pkts.data(), o.frames)) {
            std::fprintf(stderr, "bench_port_lat client: no answer for 10 s (round trip %lu)\n",
                         (unsigned long)it);
            return 1;
        }
        const uint64_t t1 = rte_rdtsc();
        rte_pktmbuf_free_bulk(pkts.data(), o.frames);
        if (it >= o.warmup) cycles.push_back(t1 - t0);
    }
    std::sort(cycles.begin(), cycles.end());
    const double us_per_cycle = 1e6 / double(rte_get_tsc_hz()) / 2; /* half a round trip */
    double sum = 0;
    for (uint64_t c : cycles)
        sum += double(c);
    auto at = [&](double q) { return double(cycles[size_t(q * double(cycles.size() - 1))]); };
    std::printf(" #frames #bytes #iterations    t_min[usec]  t_typical[usec]    t_avg[usec]   "
                "99%% percentile[usec]\n");
    std::printf(" %-7u %-6u %-12lu %-12.2f %-16.2f %-14.2f %.2f\n", o.frames, o.frame_len,
                (unsigned long)cycles.size(), double(cycles.front()) * us_per_cycle,
                at(0.5) * us_per_cycle, sum / double(cycles.size()) * us_per_cycle,
                at(0.99) * us_per_cycle);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    const int eal_args = rte_eal_init(argc, argv);
    if (eal_args < 0) {
        std::fprintf(stderr, "bench_port_lat: EAL did not start: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    argc -= eal_args;
    argv += eal_args;
    options o;
    if (!parse(argc, argv, o)) return usage(argv[0]);
    int rc = 1;
    {
        uroce::ethdev_config cfg;
        cfg.vdev = o.vdev;
        std::string err;
        auto port = uroce::ethdev_port::open(cfg, err);
        if (!port) {
            std::fprintf(stderr, "bench_port_lat: %s\n", err.c_str());
        } else {
            const uint64_t limit = rte_get_tsc_cycles() + 30 * rte_get_tsc_hz();
            while (!port->link_up() && rte_get_tsc_cycles() < limit)
                rte_delay_us_sleep(1000);
            if (!port->link_up()) {
                std::fprintf(stderr, "bench_port_lat: the link did not come up in 30 s\n");
            } else {
                port->prefault_shared_memory(); /* as the apps do: no first-touch faults */
                rc = o.client ? run_client(*port, o) : run_server(*port, o);
            }
        }
    }
    rte_eal_cleanup();
    return rc;
}
