/* SPDX-License-Identifier: BSD-3-Clause
 * Starting DPDK for uroce (uroce_eal.h).
 */
#include <uroce/eal.h>

#include <uroce/crc32.h>

#include "uroce_packed_pool.h"

#include <dirent.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string_view>
#include <system_error>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace uroce {

namespace {

namespace fs = std::filesystem;

/* EAL starts once per process: not started, running, or cleaned up. */
enum class eal_state { idle, running, ended };
std::atomic<eal_state> state{eal_state::idle};

constexpr std::string_view uroce_prefix = "uroce-";

/* "uroce-<pid>" -> pid, else 0. */
pid_t prefix_pid(std::string_view name) {
    if (name.substr(0, uroce_prefix.size()) != uroce_prefix) return 0;
    std::string_view digits = name.substr(uroce_prefix.size());
    if (digits.empty() || digits.size() > 9) return 0;
    pid_t pid = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return 0;
        pid = pid * 10 + (c - '0');
    }
    return pid;
}

bool process_gone(pid_t pid) {
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* The value of --file-prefix in args, or empty. */
std::string file_prefix_in(const std::vector<std::string> &args) {
    for (size_t i = 0; i < args.size(); i++) {
        if (args[i] == "--file-prefix" && i + 1 < args.size()) return args[i + 1];
        if (args[i].rfind("--file-prefix=", 0) == 0) return args[i].substr(14);
    }
    return {};
}

bool has_arg(const std::vector<std::string> &args, std::string_view a) {
    return std::any_of(args.begin(), args.end(), [&](const std::string &s) {
        return s == a || (s.size() > a.size() && s.rfind(a, 0) == 0 && s[a.size()] == '=');
    });
}

/* Removes dir when it is base/<name> for a non-empty name: never anything
 * else, whatever went wrong in computing it. */
void remove_runtime_dir(const std::string &base, const std::string &dir) {
    if (base.empty() || dir.size() <= base.size() + 1 || dir.rfind(base + "/", 0) != 0) return;
    if (dir.find('/', base.size() + 1) != std::string::npos) return;
    std::error_code ec;
    fs::remove_all(dir, ec);
}

uint64_t read_u64(const fs::path &p) {
    std::ifstream f(p);
    uint64_t v = 0;
    f >> v;
    return f ? v : 0;
}

} // namespace

uint64_t free_hugepage_bytes() {
    uint64_t total = 0;
    std::error_code ec;
    for (const auto &d : fs::directory_iterator("/sys/kernel/mm/hugepages", ec)) {
        /* hugepages-2048kB */
        const std::string name = d.path().filename().string();
        if (name.rfind("hugepages-", 0) != 0) continue;
        const uint64_t kb = std::strtoull(name.c_str() + 10, nullptr, 10);
        total += read_u64(d.path() / "free_hugepages") * kb * 1024;
    }
    return total;
}

bool hugepages_available() {
    return free_hugepage_bytes() > 0;
}

std::string eal_runtime_base() {
    /* eal_create_runtime_dir() in DPDK 22.11's eal_common_options.c */
    std::string dir = "/var/run";
    if (getuid() != 0) {
        const char *xdg = std::getenv("XDG_RUNTIME_DIR");
        dir = xdg ? xdg : "/tmp";
    }
    return dir + "/dpdk";
}

unsigned remove_stale_runtime_dirs(const std::string &base) {
    unsigned n = 0;
    std::error_code ec;
    std::vector<std::string> stale;
    for (const auto &d : fs::directory_iterator(base, ec)) {
        const std::string name = d.path().filename().string();
        pid_t pid = prefix_pid(name);
        if (pid > 0 && pid != getpid() && process_gone(pid)) stale.push_back(d.path().string());
    }
    for (const std::string &dir : stale) {
        remove_runtime_dir(base, dir);
        n += !fs::exists(dir, ec);
    }
    return n;
}

std::unique_ptr<eal_session> eal_session::start(const eal_config &cfg, std::string &err) {
    if (state.load() != eal_state::idle) {
        err = state.load() == eal_state::running
                  ? "DPDK EAL is already running in this process (one eal_session per process)"
                  : "DPDK EAL ran and was cleaned up in this process: DPDK 22.11 cannot start it "
                    "again";
        return nullptr;
    }
    std::unique_ptr<eal_session> s(new eal_session());
    const std::string base = eal_runtime_base();
    remove_stale_runtime_dirs(base);

    std::vector<std::string> &a = s->args_;
    a.push_back("uroce");
    std::string prefix;
    if (!cfg.args.empty()) {
        a.insert(a.end(), cfg.args.begin(), cfg.args.end());
        prefix = file_prefix_in(cfg.args);
    } else {
        const uint64_t want = uint64_t(cfg.memory_mb) << 20;
        bool huge = false;
        switch (cfg.hugepages) {
        case hugepage_mode::when_available:
            huge = free_hugepage_bytes() >= std::max<uint64_t>(want, 1);
            break;
        case hugepage_mode::always:
            if (!hugepages_available()) {
                err = "no free hugepages (reserve some: echo 64 > /proc/sys/vm/nr_hugepages), "
                      "or let uroce run without them (hugepage_mode::when_available)";
                return nullptr;
            }
            huge = true;
            break;
        case hugepage_mode::never:
            break;
        }
        if (huge) {
            a.push_back("--in-memory");
        } else {
            a.insert(a.end(), {"--no-huge", "-m", std::to_string(cfg.memory_mb), "--no-shconf"});
        }
        a.insert(a.end(), {"-l", cfg.lcores});
        if (!cfg.pci) a.push_back("--no-pci");
        if (!cfg.telemetry) a.push_back("--no-telemetry");
        if (cfg.max_simd_bitwidth)
            a.push_back("--force-max-simd-bitwidth=" + std::to_string(cfg.max_simd_bitwidth));
        std::istringstream levels(cfg.log_level);
        for (std::string l; levels >> l;)
            a.push_back("--log-level=" + l);
    }
    bool own = false;
    if (prefix.empty()) {
        prefix = std::string(uroce_prefix) + std::to_string(getpid());
        a.insert(a.end(), {"--file-prefix", prefix});
        own = true;
    }
    const std::string expected_dir = base + "/" + prefix;
    std::error_code ec;
    /* A prefix of the user's is ours to remove only when EAL creates its
     * directory now (another process may share an existing one). */
    if (!own) own = !fs::exists(expected_dir, ec);

    std::vector<std::string> copy = a; /* rte_eal_init permutes argv */
    std::vector<char *> argv;
    for (std::string &x : copy)
        argv.push_back(x.data());
    argv.push_back(nullptr);
    const int rc = rte_eal_init(int(argv.size() - 1), argv.data());
    if (rc < 0) {
        const int e = rte_errno;
        err = std::string("DPDK EAL init failed: ") + rte_strerror(e);
        if (e == EALREADY)
            err += " (rte_eal_init was called before in this process)";
        else if (!cfg.args.empty() && !has_arg(cfg.args, "--no-huge") && !hugepages_available())
            err += "; this machine has no free hugepages: add --no-huge -m 512 to the EAL "
                   "arguments, leave them empty for uroce's defaults, or reserve hugepages "
                   "(echo 64 > /proc/sys/vm/nr_hugepages)";
        /* EAL may have made its directory before it failed. */
        const char *dir = rte_eal_get_runtime_dir();
        if (own && dir && expected_dir == dir) remove_runtime_dir(base, expected_dir);
        if (e == EALREADY) state.store(eal_state::running);
        return nullptr;
    }
    state.store(eal_state::running);
    /* The CRC engine was chosen before EAL knew its SIMD limit: choose again. */
    crc32_refresh_path();
    s->runtime_dir_ = rte_eal_get_runtime_dir();
    s->owns_runtime_dir_ = own && s->runtime_dir_ == expected_dir;
    s->hugepages_ = rte_eal_has_hugepages() != 0;
    return s;
}

eal_session::~eal_session() {
    rte_eal_cleanup();
    state.store(eal_state::ended);
    /* DPDK 22.11 leaves the directory (its telemetry socket goes at exit). */
    if (owns_runtime_dir_) remove_runtime_dir(eal_runtime_base(), runtime_dir_);
}

rte_mempool *make_pktmbuf_pool(const std::string &name, unsigned n_mbufs, uint16_t data_room,
                               std::string &err) {
    const uint32_t room = uint32_t(data_room) + RTE_PKTMBUF_HEADROOM;
    if (room > UINT16_MAX) {
        err = "mbuf pool '" + name + "': " + std::to_string(data_room) +
              " bytes per mbuf is more than one mbuf holds (at most " +
              std::to_string(UINT16_MAX - RTE_PKTMBUF_HEADROOM) + " after the headroom)";
        return nullptr;
    }
    if (n_mbufs == 0) {
        err = "mbuf pool '" + name + "': no mbufs asked for";
        return nullptr;
    }
    if (state.load() == eal_state::ended || rte_lcore_count() == 0) {
        err = "mbuf pool '" + name + "': DPDK EAL is not running (start an eal_session first)";
        return nullptr;
    }
    /* The per-lcore cache may hold at most n / 1.5 mbufs. */
    const unsigned cache = std::min(256u, n_mbufs * 2 / 3);
    rte_mempool *mp =
        pktmbuf_pool_create(name, n_mbufs, cache, uint16_t(room), int(rte_socket_id()));
    if (mp) return mp;
    const int e = rte_errno;
    rte_mempool_objsz sz{};
    const uint32_t obj = rte_mempool_calc_obj_size(sizeof(rte_mbuf) + room, 0, &sz);
    const uint64_t need_mb = (uint64_t(obj) * n_mbufs + (1u << 20) - 1) >> 20;
    err = "cannot create mbuf pool '" + name + "' (" + std::to_string(n_mbufs) + " mbufs of " +
          std::to_string(room) + " bytes, about " + std::to_string(need_mb) +
          " MiB): " + rte_strerror(e);
    if (e == ENOMEM) {
        rte_malloc_socket_stats st{};
        if (rte_malloc_get_socket_stats(int(rte_socket_id()), &st) == 0)
            err += "; EAL's heap has " + std::to_string(st.heap_freesz_bytes >> 20) +
                   " MiB free of " + std::to_string(st.heap_totalsz_bytes >> 20) + " MiB";
        err += rte_eal_has_hugepages()
                   ? ": reserve more hugepages, or ask for fewer mbufs"
                   : ": give EAL more memory (-m, eal_config::memory_mb), or ask for fewer mbufs";
    } else if (e == EEXIST) {
        err += " (a mempool of that name exists: names are unique per process)";
    } else if (e == ENAMETOOLONG) {
        err += " (at most " + std::to_string(RTE_MEMPOOL_NAMESIZE - 4) + " characters)";
    }
    return nullptr;
}

namespace {

int collect_object(dl_phdr_info *info, size_t, void *arg) {
    auto *paths = static_cast<std::vector<std::string> *>(arg);
    const char *name = info->dlpi_name;
    if (!name || !*name) {
        if (paths->empty()) paths->push_back("/proc/self/exe"); /* the program itself */
        return 0;
    }
    std::string_view base = name;
    if (auto slash = base.rfind('/'); slash != std::string_view::npos)
        base.remove_prefix(slash + 1);
    if (base.rfind("librte_", 0) == 0) paths->emplace_back(name);
    return 0;
}

/* The PMD information pmdinfogen embeds: a NUL-terminated
 * 'PMD_INFO_STRING= {"name": "net_ring", ..., "pci_ids": []}'. */
void scan_pmd_info(const std::string &path, std::set<std::string> &out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return;
    const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    constexpr std::string_view tag = "PMD_INFO_STRING= ", name_key = "\"name\": \"";
    for (size_t pos = data.find(tag); pos != std::string::npos; pos = data.find(tag, pos + 1)) {
        size_t end = data.find('\0', pos);
        std::string_view info(data.data() + pos,
                              (end == std::string::npos ? data.size() : end) - pos);
        size_t n = info.find(name_key);
        if (n == std::string_view::npos) continue;
        n += name_key.size();
        size_t q = info.find('"', n);
        if (q == std::string_view::npos) continue;
        if (info.find("\"pci_ids\": []") == std::string_view::npos) continue; /* a PCI driver */
        out.emplace(info.substr(n, q - n));
    }
}

bool drives(const std::string &driver, const std::string &vdev) {
    if (vdev.rfind(driver, 0) == 0) return true;
    /* The older eth_ names are aliases of the net_ drivers. */
    return vdev.rfind("eth_", 0) == 0 && ("net_" + vdev.substr(4)).rfind(driver, 0) == 0;
}

} // namespace

std::vector<std::string> vdev_driver_names() {
    std::vector<std::string> paths;
    dl_iterate_phdr(collect_object, &paths);
    std::set<std::string> names;
    for (const std::string &p : paths)
        scan_pmd_info(p, names);
    return {names.begin(), names.end()};
}

std::string missing_vdev_driver(const std::string &vdev_name) {
    const std::vector<std::string> drivers = vdev_driver_names();
    for (const std::string &d : drivers)
        if (drives(d, vdev_name)) return {};
    std::string stem = vdev_name;
    while (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem.back())))
        stem.pop_back();
    /* The drivers of the class asked for (net_), or all. */
    const size_t us = vdev_name.find('_');
    std::vector<std::string> shown;
    if (us != std::string::npos)
        for (const std::string &d : drivers)
            if (d.compare(0, us + 1, vdev_name, 0, us + 1) == 0) shown.push_back(d);
    if (shown.empty()) shown = drivers;
    std::string msg = "no DPDK driver '" + stem + "'";
    if (shown.empty())
        return msg + "; this program has no vdev drivers (is DPDK's PMD directory "
                     "there? EAL loads drivers from it)";
    msg += "; vdev drivers this build has:";
    for (size_t i = 0; i < shown.size(); i++)
        msg += (i ? ", " : " ") + shown[i];
    msg += " (a vdev is a driver name and an id, e.g. net_ring0)";
    return msg;
}

} // namespace uroce
