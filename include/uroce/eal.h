/* SPDX-License-Identifier: BSD-3-Clause
 * Starting DPDK for uroce: the documented way for a program that embeds
 * uroce (and for uroce's own apps) to bring up EAL.
 *
 *   std::string err;
 *   auto eal = uroce::eal_session::start({}, err);   // uroce's defaults
 *   if (!eal) { fprintf(stderr, "%s\n", err.c_str()); return 1; }
 *   rte_mempool *pool = uroce::make_pktmbuf_pool("rx", 8191, uroce::jumbo_frame_room, err);
 *   ...                                               // ports, uroce, the loop
 *   // ~eal_session: rte_eal_cleanup, and EAL's runtime directory removed
 *
 * Defaults (eal_config::args empty):
 *   with free hugepages (at least memory_mb of them): --in-memory (no files
 *   in hugetlbfs, no shared config); without: --no-huge -m <memory_mb>
 *   --no-shconf. Then -l <lcores>, --no-pci unless pci, --no-telemetry
 *   unless telemetry, --log-level=<each word of log_level>, and
 *   --file-prefix uroce-<pid>.
 * With the user's own args, those are passed as they are, plus
 * --file-prefix uroce-<pid> when they give none.
 *
 * DPDK 22.11 creates a runtime directory (/var/run/dpdk/<prefix> as root,
 * else $XDG_RUNTIME_DIR/dpdk/<prefix> or /tmp/dpdk/<prefix>) for its
 * telemetry socket even with --no-shconf, and rte_eal_cleanup() leaves it.
 * The session removes it after cleanup when it is ours (the uroce-<pid>
 * prefix, or a prefix of the user's whose directory did not exist before),
 * and start() removes the uroce-<pid> directories of processes that are
 * gone (killed ones never ran their destructor).
 *
 * EAL starts once per process (DPDK cannot start it again after
 * rte_eal_cleanup): a second start() fails with a message saying so.
 */
#ifndef UROCE_EAL_H
#define UROCE_EAL_H

#include <uroce/export.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rte_mempool;

namespace uroce {

enum class hugepage_mode {
    when_available, /* hugepages when at least memory_mb of them are free, else --no-huge */
    always,         /* hugepages or fail */
    never,          /* --no-huge */
};

struct eal_config {
    std::vector<std::string> args; /* the user's own EAL arguments; empty: uroce's defaults below */
    std::string lcores = "0";      /* -l */
    unsigned memory_mb = 512;      /* -m when running without hugepages */
    bool pci = false;              /* false: --no-pci (vdevs only) */
    bool telemetry = true;         /* false: --no-telemetry */
    /* e.g. "error" -> --log-level=error; several, space-separated, each
     * its own --log-level (DPDK 22.11: for a log type, the first pattern
     * that matches wins): "lib.telemetry:error *:warning"; empty: DPDK's
     * default */
    std::string log_level;
    hugepage_mode hugepages = hugepage_mode::when_available;
    /* --force-max-simd-bitwidth for uroce's defaults; 0: DPDK's own default
     * (256 on x86, which keeps AVX-512 off). 512 lets the ICRC use its zmm
     * engine on CPUs that have one (doc/icrc.md: 1.1-1.6x ISA-L where the
     * 256-bit engine reaches 0.6-1.5x); a CPU without AVX-512 is unaffected. */
    unsigned max_simd_bitwidth = 512;
};

/* RAII: rte_eal_init in start(); rte_eal_cleanup and the removal of EAL's
 * runtime directory (when it is ours) in the destructor. */
class eal_session {
  public:
    /* nullptr with err set (what EAL said, and what to do about it). */
    UROCE_API static std::unique_ptr<eal_session> start(const eal_config &cfg, std::string &err);
    UROCE_API ~eal_session();
    eal_session(const eal_session &) = delete;
    eal_session &operator=(const eal_session &) = delete;

    /* Did EAL start on hugepages? */
    bool hugepages() const { return hugepages_; }
    /* What was passed to rte_eal_init (argv[0] first). */
    const std::vector<std::string> &args() const { return args_; }
    /* EAL's runtime directory (telemetry socket: <dir>/dpdk_telemetry.v2). */
    const std::string &runtime_dir() const { return runtime_dir_; }
    /* Whether the destructor removes runtime_dir(). */
    bool owns_runtime_dir() const { return owns_runtime_dir_; }

  private:
    eal_session() = default;
    std::vector<std::string> args_;
    std::string runtime_dir_;
    bool owns_runtime_dir_ = false;
    bool hugepages_ = false;
};

/* Free hugepages of any size (/sys/kernel/mm/hugepages/ * /free_hugepages). */
UROCE_API bool hugepages_available();
/* Their total size in bytes. */
UROCE_API uint64_t free_hugepage_bytes();

/* Where DPDK 22.11 puts the runtime directories of all prefixes:
 * /var/run/dpdk as root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk. */
UROCE_API std::string eal_runtime_base();
/* Removes base/uroce-<pid> directories whose process is gone; returns how
 * many. start() calls it with eal_runtime_base(). */
UROCE_API unsigned remove_stale_runtime_dirs(const std::string &base);

/* A whole Ethernet frame of a 9000-byte MTU link, VLAN tag included. */
constexpr uint16_t jumbo_frame_room = 9018;
/* A pktmbuf pool whose every mbuf holds a frame of data_room bytes in one
 * segment (after RTE_PKTMBUF_HEADROOM): jumbo_frame_room for whole jumbo
 * frames, as the transport builds each frame in one mbuf. nullptr with err
 * saying why (the size asked for, the memory EAL has, what to change). */
UROCE_API rte_mempool *make_pktmbuf_pool(const std::string &name, unsigned n_mbufs,
                                         uint16_t data_room, std::string &err);

/* The vdev drivers this process has (from the PMD information DPDK embeds
 * in the program and in each DPDK library loaded: drivers without PCI
 * ids), sorted. */
UROCE_API std::vector<std::string> vdev_driver_names();
/* Why rte_vdev_init(vdev_name) found no driver, for an error message:
 * "no DPDK driver 'net_foo'; vdev drivers this build has: net_af_packet,
 * ..." for net_foo0; empty when a driver of this process matches the name
 * (the driver itself refused the device). */
UROCE_API std::string missing_vdev_driver(const std::string &vdev_name);

} // namespace uroce

#endif
