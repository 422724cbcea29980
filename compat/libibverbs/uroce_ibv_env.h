/* SPDX-License-Identifier: BSD-3-Clause
 * compat/libibverbs: the configuration of the drop-in libibverbs, read from
 * the environment (doc/compat.md, "Configuration"):
 *
 *   UROCE_EAL       EAL arguments, split on white space; every --vdev
 *                   (--vdev X or --vdev=X) is taken out and becomes the
 *                   port (the first one), created by uroce so its fix-ups
 *                   (memif's bsize) apply. Without --vdev: DPDK port 0.
 *   UROCE_IP        addr/prefix[,addr/prefix...], IPv4 and IPv6
 *   UROCE_PROGRESS  thread (default) | inline
 *   UROCE_MAC       optional: the port's MAC (aa:bb:cc:dd:ee:ff)
 *   UROCE_LINK_MTU  optional: link MTU to ask the PMD for
 *   UROCE_COUNTERS  optional: 1 prints the stack's counters when it stops
 *
 * A missing or bad setting is an error naming the variable: the caller
 * prints it once and fails with errno (EINVAL for a bad value, ENODEV when
 * UROCE_EAL or UROCE_IP is missing).
 */
#ifndef UROCE_IBV_ENV_H
#define UROCE_IBV_ENV_H

#include <optional>
#include <string>
#include <vector>

#include <rte_ether.h>

namespace uroce::compat {

enum class progress_mode {
    thread,      /* the stack runs on its own thread; posts and polls go through work channels */
    inline_poll, /* the application's ibv_poll_cq drives the stack; a slow fallback thread otherwise
                  */
};

struct env_config {
    std::vector<std::string> eal_args; /* without the --vdev arguments */
    std::vector<std::string> vdevs;
    std::vector<std::string> ips;
    progress_mode progress = progress_mode::thread;
    std::optional<rte_ether_addr> mac;
    uint32_t link_mtu = 0;
    bool print_counters = false; /* UROCE_COUNTERS=1: every non-zero counter on stderr at the end */
    /* UROCE_BUSY_POLL_US: while a CQ is armed, poll without a pause until
     * this long after the last activity (runtime::event_awaited) */
    uint64_t event_busy_poll_ns = 1'000'000;
    std::string pcap; /* UROCE_PCAP: every frame in and out, to this file */
};

/* Reads the variables; false with err (one line naming the variable) and
 * errno_out set. */
bool read_env(env_config &cfg, std::string &err, int &errno_out);

/* Split s on white space (UROCE_EAL), and on commas (UROCE_IP). */
std::vector<std::string> split_words(const std::string &s);
std::vector<std::string> split_commas(const std::string &s);

} // namespace uroce::compat

#endif
