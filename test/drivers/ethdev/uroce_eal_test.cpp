/* SPDX-License-Identifier: BSD-3-Clause
 * uroce_eal.h: EAL started and stopped by an eal_session, without and with
 * hugepages; no runtime directory left behind (the session's own, and the
 * stale ones of killed processes); the user's own arguments; mbuf pool
 * errors; the message for a vdev without a driver.
 *
 * EAL starts once per process, so each test runs its EAL part in a child
 * process (fork) and reads back what the child saw.
 */
#include <uroce/crc32.h>
#include <uroce/eal.h>

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include <rte_mempool.h>

#include <uroce/ethdev.h>

namespace uroce {
namespace {

namespace fs = std::filesystem;

/* What a child saw: key=value facts and failed checks. */
class child_report {
  public:
    void set(const std::string &key, const std::string &value) {
        text_ += key + "=" + value + "\n";
    }
    void check(bool ok, const std::string &what) {
        if (!ok) text_ += "FAIL=" + what + "\n";
    }
    const std::string &text() const { return text_; }

  private:
    std::string text_;
};

struct child_result {
    int status = -1;
    std::map<std::string, std::string> facts;
    std::vector<std::string> failures;
    std::string raw;
};

child_result in_child(const std::function<void(child_report &)> &body) {
    int fds[2];
    child_result r;
    if (pipe(fds) != 0) return r;
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child_report rep;
        body(rep);
        const std::string &t = rep.text();
        for (size_t off = 0; off < t.size();) {
            ssize_t n = write(fds[1], t.data() + off, t.size() - off);
            if (n <= 0) break;
            off += size_t(n);
        }
        close(fds[1]);
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;)
        r.raw.append(buf, size_t(n));
    close(fds[0]);
    waitpid(pid, &r.status, 0);
    std::istringstream in(r.raw);
    for (std::string line; std::getline(in, line);) {
        size_t eq = line.find('=');
        if (eq == std::string::npos) continue;
        if (line.compare(0, eq, "FAIL") == 0)
            r.failures.push_back(line.substr(eq + 1));
        else
            r.facts[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return r;
}

#define EXPECT_CHILD_OK(r)                                                                         \
    do {                                                                                           \
        EXPECT_TRUE(WIFEXITED((r).status) && WEXITSTATUS((r).status) == 0)                         \
            << "child status " << (r).status << "\n"                                               \
            << (r).raw;                                                                            \
        for (const std::string &f : (r).failures)                                                  \
            ADD_FAILURE() << "in the child: " << f;                                                \
    } while (0)

bool contains(const std::vector<std::string> &v, const std::string &s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

std::string joined(const std::vector<std::string> &v) {
    std::string s;
    for (const std::string &x : v)
        s += x + " ";
    return s;
}

eal_config quiet_no_huge() {
    eal_config c;
    c.hugepages = hugepage_mode::never;
    c.memory_mb = 128;
    c.log_level = "*:error";
    return c;
}

TEST(eal_session, starts_without_hugepages_and_leaves_no_directory) {
    auto r = in_child([](child_report &rep) {
        std::string err;
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        rep.set("dir", s->runtime_dir());
        rep.check(!s->hugepages(), "hugepages() with hugepage_mode::never");
        const std::string prefix = "uroce-" + std::to_string(getpid());
        rep.check(contains(s->args(), "--no-huge") && contains(s->args(), "--no-shconf") &&
                      contains(s->args(), "--no-pci") && contains(s->args(), prefix) &&
                      contains(s->args(), "-m") && contains(s->args(), "128"),
                  "args: " + joined(s->args()));
        rep.check(s->runtime_dir() == eal_runtime_base() + "/" + prefix,
                  "runtime dir " + s->runtime_dir());
        rep.check(s->owns_runtime_dir(), "the session does not own its directory");
        rep.check(fs::exists(s->runtime_dir() + "/dpdk_telemetry.v2"),
                  "no telemetry socket while running");
        rte_mempool *mp = make_pktmbuf_pool("eal_test", 1023, jumbo_frame_room, err);
        rep.check(mp != nullptr, "make_pktmbuf_pool: " + err);
        if (mp) {
            rep.check(rte_pktmbuf_data_room_size(mp) == jumbo_frame_room + RTE_PKTMBUF_HEADROOM,
                      "data room " + std::to_string(rte_pktmbuf_data_room_size(mp)));
            rte_mempool_free(mp);
        }
        const std::string dir = s->runtime_dir();
        s.reset();
        rep.check(!fs::exists(dir), dir + " still there after the session");
    });
    EXPECT_CHILD_OK(r);
    ASSERT_FALSE(r.facts["dir"].empty());
    EXPECT_FALSE(fs::exists(r.facts["dir"])) << r.facts["dir"] << " left behind";
}

/* uroce's defaults let the ICRC use the zmm engine where the CPU has one
 * (DPDK's own default limit, 256, would keep it off), and the session
 * re-chooses the engine once EAL knows the limit. */
TEST(eal_session, lets_the_icrc_use_the_widest_engine) {
    auto r = in_child([](child_report &rep) {
        std::string err;
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        rep.check(contains(s->args(), "--force-max-simd-bitwidth=512"),
                  "args: " + joined(s->args()));
        rep.set("path", crc32_path_name(crc32_active_path()));
        rep.set("best", crc32_path_name(crc32_best_path()));
    });
    EXPECT_CHILD_OK(r);
    EXPECT_EQ(r.facts["path"], r.facts["best"]);
    auto r256 = in_child([](child_report &rep) {
        std::string err;
        eal_config c = quiet_no_huge();
        c.max_simd_bitwidth = 256;
        auto s = eal_session::start(c, err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        rep.check(crc32_active_path() != crc32_path::vclmul512, "zmm engine under a 256-bit limit");
    });
    EXPECT_CHILD_OK(r256);
}

TEST(eal_session, removes_stale_directories_of_dead_processes) {
    const std::string base = eal_runtime_base();
    fs::create_directories(base);
    /* A pid that is gone: a child that has exited and been reaped. */
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, nullptr, 0);
    const std::string stale = base + "/uroce-" + std::to_string(dead);
    const std::string alive = base + "/uroce-" + std::to_string(getpid());   /* this process */
    const std::string other = base + "/uroce-" + std::to_string(dead) + "x"; /* not ours */
    for (const std::string &d : {stale, alive, other}) {
        fs::create_directories(d);
        std::ofstream(d + "/dpdk_telemetry.v2") << "";
    }
    auto r = in_child([](child_report &rep) {
        std::string err;
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
    });
    EXPECT_CHILD_OK(r);
    EXPECT_FALSE(fs::exists(stale)) << stale << ": the directory of a dead process stays";
    EXPECT_TRUE(fs::exists(alive)) << alive << ": the directory of a live process was removed";
    EXPECT_TRUE(fs::exists(other)) << other << ": not a uroce-<pid> directory, removed";
    fs::remove_all(alive);
    fs::remove_all(other);
    EXPECT_EQ(remove_stale_runtime_dirs(base + "/no-such-dir"), 0u);
}

TEST(eal_session, user_arguments_get_a_file_prefix) {
    auto r = in_child([](child_report &rep) {
        eal_config c;
        c.args = {"--no-huge", "-m", "128",      "--no-shconf",
                  "-l",        "0",  "--no-pci", "--log-level=*:error"};
        c.lcores = "5"; /* ignored with args */
        std::string err;
        auto s = eal_session::start(c, err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        std::vector<std::string> want = {"uroce"};
        want.insert(want.end(), c.args.begin(), c.args.end());
        want.insert(want.end(), {"--file-prefix", "uroce-" + std::to_string(getpid())});
        rep.check(s->args() == want, "args: " + joined(s->args()));
        rep.set("dir", s->runtime_dir());
    });
    EXPECT_CHILD_OK(r);
    EXPECT_FALSE(r.facts["dir"].empty());
    EXPECT_FALSE(fs::exists(r.facts["dir"])) << r.facts["dir"] << " left behind";
}

TEST(eal_session, a_prefix_of_the_users_is_kept_when_its_directory_was_there) {
    const std::string base = eal_runtime_base();
    for (bool existed : {false, true}) {
        const std::string prefix = "uroce-eal-test-" + std::to_string(getpid());
        const std::string dir = base + "/" + prefix;
        fs::remove_all(dir);
        if (existed) {
            fs::create_directories(dir);
            std::ofstream(dir + "/theirs") << "x";
        }
        auto r = in_child([&](child_report &rep) {
            eal_config c;
            c.args = {"--no-huge",
                      "-m",
                      "128",
                      "--no-shconf",
                      "-l",
                      "0",
                      "--no-pci",
                      "--log-level=*:error",
                      "--file-prefix",
                      prefix};
            std::string err;
            auto s = eal_session::start(c, err);
            rep.check(s != nullptr, "start: " + err);
            if (!s) return;
            rep.check(std::count(s->args().begin(), s->args().end(), "--file-prefix") == 1,
                      "args: " + joined(s->args()));
            rep.check(s->owns_runtime_dir() == !existed, "owns_runtime_dir");
        });
        EXPECT_CHILD_OK(r);
        EXPECT_EQ(fs::exists(dir), existed) << dir << (existed ? " removed" : " left behind");
        EXPECT_EQ(fs::exists(dir + "/theirs"), existed);
        fs::remove_all(dir);
    }
}

TEST(eal_session, starts_once_per_process) {
    auto r = in_child([](child_report &rep) {
        std::string err;
        rep.check(make_pktmbuf_pool("early", 63, 2048, err) == nullptr &&
                      err.find("not running") != std::string::npos,
                  "a pool before EAL: " + err);
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
        err.clear();
        rep.check(eal_session::start(quiet_no_huge(), err) == nullptr &&
                      err.find("already running") != std::string::npos,
                  "second start: " + err);
        s.reset();
        err.clear();
        rep.check(eal_session::start(quiet_no_huge(), err) == nullptr &&
                      err.find("cannot start it again") != std::string::npos,
                  "start after cleanup: " + err);
    });
    EXPECT_CHILD_OK(r);
}

TEST(eal_session, pool_errors_say_what_to_change) {
    auto r = in_child([](child_report &rep) {
        std::string err;
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        err.clear();
        rep.check(make_pktmbuf_pool("too_big", 63, 65535, err) == nullptr &&
                      err.find("at most") != std::string::npos,
                  "65535-byte data room: " + err);
        err.clear();
        /* 100000 jumbo mbufs: about 1 GiB, EAL has 128 MiB. Without
         * hugepages the pool would first be mapped from the process's own
         * memory (drivers/ethdev/uroce_packed_pool.cpp): with no address
         * space left for it, it falls back to EAL's, which is too small. */
        std::ifstream statm("/proc/self/statm");
        unsigned long long vm_pages = 0;
        statm >> vm_pages;
        const rlim_t vm_now = rlim_t(vm_pages) * rlim_t(sysconf(_SC_PAGESIZE));
        const rlimit as{vm_now + (rlim_t(256) << 20), vm_now + (rlim_t(256) << 20)};
        rep.check(vm_pages > 0 && setrlimit(RLIMIT_AS, &as) == 0, "address space limit");
        rep.check(make_pktmbuf_pool("too_many", 100000, jumbo_frame_room, err) == nullptr &&
                      err.find("-m") != std::string::npos &&
                      err.find("100000 mbufs") != std::string::npos,
                  "out of memory: " + err);
        rte_mempool *mp = make_pktmbuf_pool("twice", 63, 2048, err);
        err.clear();
        rep.check(mp && make_pktmbuf_pool("twice", 63, 2048, err) == nullptr &&
                      err.find("exists") != std::string::npos,
                  "the same name twice: " + err);
        rte_mempool_free(mp);
    });
    EXPECT_CHILD_OK(r);
}

TEST(eal_session, unknown_vdev_names_the_missing_driver) {
    auto r = in_child([](child_report &rep) {
        std::string err;
        auto s = eal_session::start(quiet_no_huge(), err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        const std::vector<std::string> drivers = vdev_driver_names();
        rep.check(contains(drivers, "net_ring") && contains(drivers, "net_memif") &&
                      contains(drivers, "net_af_packet"),
                  "drivers: " + joined(drivers));
        rep.check(!contains(drivers, "net_ixgbe"), "a PCI driver among the vdev drivers");
        const std::string msg = missing_vdev_driver("net_foo0");
        rep.check(msg.rfind("no DPDK driver 'net_foo'; vdev drivers this build has: ", 0) == 0 &&
                      msg.find("net_ring") != std::string::npos &&
                      msg.find("crypto_") == std::string::npos,
                  "message: " + msg);
        rep.check(missing_vdev_driver("net_ring0").empty(), "net_ring0 has a driver");
        rep.check(missing_vdev_driver("eth_ring0").empty(), "eth_ring0 (alias) has a driver");
        ethdev_config pc;
        pc.vdev = "net_foo0,iface=x";
        auto port = ethdev_port::open(pc, err);
        rep.check(!port &&
                      err.rfind("cannot create vdev 'net_foo0,iface=x': no DPDK driver 'net_foo'; ",
                                0) == 0,
                  "ethdev_port::open: " + err);
        /* A driver that exists and refuses the device keeps the driver's own reason. */
        err.clear();
        pc.vdev = "net_af_packet9,iface=no-such-iface-uroce";
        port = ethdev_port::open(pc, err);
        rep.check(!port && err.find("no DPDK driver") == std::string::npos &&
                      err.find("net_af_packet9") != std::string::npos,
                  "af_packet on a missing interface: " + err);
    });
    EXPECT_CHILD_OK(r);
}

/* Hugepages: reserved here for the test (root), and given back. */
class hugepage_reservation {
  public:
    hugepage_reservation() {
        std::ifstream("/proc/sys/vm/nr_hugepages") >> before_;
        std::ofstream f("/proc/sys/vm/nr_hugepages");
        if (!f) return;
        f << before_ + 64;
        f.close();
        touched_ = true;
    }
    ~hugepage_reservation() {
        if (touched_) std::ofstream("/proc/sys/vm/nr_hugepages") << before_;
    }
    long before() const { return before_; }

  private:
    long before_ = 0;
    bool touched_ = false;
};

TEST(eal_session, starts_on_hugepages_when_there_are_free_ones) {
    hugepage_reservation res;
    const uint64_t free_bytes = free_hugepage_bytes();
    if (free_bytes < (64u << 20))
        GTEST_SKIP() << "cannot reserve 64 MiB of hugepages here (" << (free_bytes >> 20)
                     << " MiB free; writing /proc/sys/vm/nr_hugepages needs root and free "
                        "memory): the hugepage path is not tested";
    ASSERT_TRUE(hugepages_available());
    auto r = in_child([](child_report &rep) {
        eal_config c;
        c.memory_mb = 32; /* when_available: at least this much free */
        c.log_level = "*:error";
        const uint64_t before = free_hugepage_bytes();
        std::string err;
        auto s = eal_session::start(c, err);
        rep.check(s != nullptr, "start: " + err);
        if (!s) return;
        rep.set("dir", s->runtime_dir());
        rep.check(s->hugepages(), "hugepages() false with free hugepages");
        rep.check(contains(s->args(), "--in-memory") && !contains(s->args(), "--no-huge"),
                  "args: " + joined(s->args()));
        rte_mempool *mp = make_pktmbuf_pool("eal_huge", 2047, jumbo_frame_room, err);
        rep.check(mp != nullptr, "make_pktmbuf_pool: " + err);
        rep.check(free_hugepage_bytes() < before, "no hugepage taken for the pool");
        if (mp) rte_mempool_free(mp);
        s.reset();
    });
    EXPECT_CHILD_OK(r);
    EXPECT_FALSE(r.facts["dir"].empty());
    EXPECT_FALSE(fs::exists(r.facts["dir"])) << r.facts["dir"] << " left behind";
    /* --in-memory leaves nothing in hugetlbfs either. */
    std::error_code ec;
    for (const char *mnt : {"/dev/hugepages", "/mnt/huge"})
        for (const auto &f : fs::directory_iterator(mnt, ec))
            EXPECT_EQ(f.path().filename().string().find("uroce-"), std::string::npos)
                << f.path() << " left in hugetlbfs";
}

TEST(eal_session, hugepage_mode_always_fails_clearly_without_hugepages) {
    if (hugepages_available()) GTEST_SKIP() << "this machine has free hugepages";
    auto r = in_child([](child_report &rep) {
        eal_config c;
        c.hugepages = hugepage_mode::always;
        std::string err;
        rep.check(eal_session::start(c, err) == nullptr &&
                      err.find("no free hugepages") != std::string::npos,
                  "always without hugepages: " + err);
    });
    EXPECT_CHILD_OK(r);
}

} // namespace
} // namespace uroce
