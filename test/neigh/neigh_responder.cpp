/* SPDX-License-Identifier: BSD-3-Clause
 * neigh_responder: a tiny DPDK app for kernel_neigh_test.sh. It opens one
 * port (any vdev, e.g. net_af_packet on a veth end), runs lib/neigh in a
 * run-to-completion loop for N seconds and, meanwhile, resolves the given
 * next hops through the kernel on the other end. Prints "RESOLVED ip mac"
 * once per next hop when resolve() first returns a MAC, "EVENT ..." per
 * neigh event, and the table and counters at exit.
 *
 *   neigh_responder <EAL args> -- --mac 02:00:00:99:00:02 --addr 10.99.0.2/24
 *       --addr fd00:99::2/64 [--resolve 10.99.0.1]... [--resolve-delay S]
 *       [--announce 0|1] [--mld 0|1] [--vlan TCI] [--seconds 20]
 */
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <uroce/neigh.h>

using namespace uroce;

static volatile sig_atomic_t g_stop = 0;
static void on_signal(int) {
    g_stop = 1;
}

/* Dotted quad for IPv4 next hops, as users typed them. */
static std::string ip_text(const gid &g) {
    if (!g.is_ipv4_mapped()) return g.to_string();
    char b[16];
    uint32_t a = g.ipv4();
    std::snprintf(b, sizeof(b), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    return b;
}

static void on_event(void *, neigh_event ev, const gid &ip, const mac_addr *mac) {
    std::printf("EVENT %s %s %s\n",
                ev == neigh_event::resolved  ? "resolved"
                : ev == neigh_event::changed ? "changed"
                : ev == neigh_event::failed  ? "failed"
                                             : "address_conflict",
                ip_text(ip).c_str(), mac ? mac->to_string().c_str() : "-");
    std::fflush(stdout);
}

static int usage() {
    std::fprintf(stderr, "usage: neigh_responder <EAL args> -- --mac MAC --addr A/N [--addr ...] "
                         "[--resolve IP]... [--resolve-delay S] [--announce 0|1] [--mld 0|1] "
                         "[--vlan TCI] [--seconds N]\n");
    return 2;
}

int main(int argc, char **argv) {
    int eal = rte_eal_init(argc, argv);
    if (eal < 0) {
        std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    argc -= eal;
    argv += eal;

    local_addr_table addrs;
    std::vector<gid> to_resolve;
    double seconds = 20;
    bool have_mac = false;
    std::optional<uint16_t> vlan;
    double resolve_delay = 0; /* seconds before the first resolve() */
    bool announce = true;
    bool mld = true;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        std::string v = argv[++i];
        if (a == "--mac") {
            auto m = mac_addr::parse(v);
            if (!m) return usage();
            addrs.set_mac(*m);
            have_mac = true;
        } else if (a == "--addr") {
            if (!addrs.add(v)) {
                std::fprintf(stderr, "bad address %s\n", v.c_str());
                return 2;
            }
        } else if (a == "--resolve") {
            auto g = gid::parse(v);
            if (!g) return usage();
            to_resolve.push_back(*g);
        } else if (a == "--resolve-delay") {
            resolve_delay = std::atof(v.c_str());
        } else if (a == "--mld") {
            mld = std::atoi(v.c_str()) != 0;
        } else if (a == "--announce") {
            announce = std::atoi(v.c_str()) != 0;
        } else if (a == "--vlan") {
            vlan = uint16_t(std::atoi(v.c_str()));
        } else if (a == "--seconds") {
            seconds = std::atof(v.c_str());
        } else {
            return usage();
        }
    }
    if (!have_mac || rte_eth_dev_count_avail() < 1) return usage();

    rte_mempool *pool = rte_pktmbuf_pool_create("neigh_resp", 2047, 64, 0,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, int(rte_socket_id()));
    if (!pool) {
        std::fprintf(stderr, "mempool: %s\n", rte_strerror(rte_errno));
        return 1;
    }
    uint16_t port = 0;
    rte_eth_conf conf{};
    if (rte_eth_dev_configure(port, 1, 1, &conf) < 0 ||
        rte_eth_rx_queue_setup(port, 0, 256, rte_eth_dev_socket_id(port), nullptr, pool) < 0 ||
        rte_eth_tx_queue_setup(port, 0, 256, rte_eth_dev_socket_id(port), nullptr) < 0 ||
        rte_eth_dev_start(port) < 0) {
        std::fprintf(stderr, "port setup failed\n");
        return 1;
    }

    std::printf("GIDS");
    for (size_t i = 0; i < addrs.gid_count(); i++)
        std::printf(" %zu=%s", i, addrs.gid_at(i)->to_string().c_str());
    std::printf("\nREADY\n");
    std::fflush(stdout);

    neigh_config cfg;
    cfg.pool = pool;
    cfg.event_cb = on_event;
    cfg.vlan_tci = vlan; /* requests tagged; replies keep the request's tag */
    cfg.announce_on_start = announce;
    cfg.mld = mld;
    neigh nb(cfg, addrs);

    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t start = rte_get_tsc_cycles();
    auto now_ns = [&] { return uint64_t(double(rte_get_tsc_cycles() - start) * 1e9 / double(hz)); };
    const uint64_t end_ns = uint64_t(seconds * 1e9);
    uint64_t next_resolve = uint64_t(resolve_delay * 1e9), tx_fail = 0;
    std::vector<bool> reported(to_resolve.size());
    constexpr uint16_t burst = 32;
    rte_mbuf *rx[burst], *tx[2 * burst + 8];

    while (!g_stop) {
        uint64_t now = now_ns();
        if (now >= end_ns) break;
        uint16_t n_tx = 0;
        uint16_t n_rx = rte_eth_rx_burst(port, 0, rx, burst);
        if (n_rx) nb.process_burst(rx, n_rx, tx, n_tx);
        if (now >= next_resolve) {
            /* The engine's job: ask until known (it would do this per AH). */
            /* Report the first answer; it may come from the cache without
             * an event, when the kernel's own ARP/NS taught us first. */
            for (size_t i = 0; i < to_resolve.size(); i++) {
                auto mac = nb.resolve(to_resolve[i]);
                if (mac && !reported[i]) {
                    reported[i] = true;
                    std::printf("RESOLVED %s %s\n", ip_text(to_resolve[i]).c_str(),
                                mac->to_string().c_str());
                    std::fflush(stdout);
                }
            }
            next_resolve = now + 50'000'000;
        }
        nb.poll(now, tx, n_tx, uint16_t(std::size(tx)));
        if (n_tx) {
            uint16_t sent = rte_eth_tx_burst(port, 0, tx, n_tx);
            if (sent < n_tx) {
                tx_fail += n_tx - sent;
                rte_pktmbuf_free_bulk(tx + sent, n_tx - sent);
            }
        }
        /* A test helper on a shared 2-CPU box: do not spin. */
        if (!n_rx) usleep(200);
    }

    std::printf("NEIGH TABLE\n");
    nb.dump(stdout);
    std::printf("COUNTERS\n");
    nb.dump_counters(stdout);
    std::printf("tx_fail %" PRIu64 "\n", tx_fail);
    rte_eth_stats st;
    if (rte_eth_stats_get(port, &st) == 0)
        std::printf("port ipackets %" PRIu64 " opackets %" PRIu64 " oerrors %" PRIu64 "\n",
                    st.ipackets, st.opackets, st.oerrors);
    std::fflush(stdout);
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
    rte_eal_cleanup();
    return 0;
}
