/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_ibv_env.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <uroce/local_addr.h>

namespace uroce::compat {

std::vector<std::string> split_words(const std::string &s) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            if (!cur.empty()) out.push_back(std::move(cur));
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

std::vector<std::string> split_commas(const std::string &s) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t end = s.find(',', start);
        if (end == std::string::npos) end = s.size();
        std::string item = s.substr(start, end - start);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
            item.pop_back();
        size_t lead = 0;
        while (lead < item.size() && std::isspace(static_cast<unsigned char>(item[lead])))
            lead++;
        item.erase(0, lead);
        if (!item.empty()) out.push_back(item);
        start = end + 1;
    }
    return out;
}

static const char *env(const char *name) {
    const char *v = std::getenv(name);
    return v && *v ? v : nullptr;
}

/* text, all of it, as a decimal number in lo..hi. */
static bool decimal_in(const char *text, unsigned long lo, unsigned long hi, unsigned long &out) {
    char *end = nullptr;
    errno = 0;
    const unsigned long v = std::strtoul(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi) return false;
    out = v;
    return true;
}

bool read_env(env_config &cfg, std::string &err, int &errno_out) {
    cfg = env_config{};
    const char *eal = env("UROCE_EAL");
    if (!eal) {
        err = "UROCE_EAL is not set: give the EAL arguments of the port uroce0 runs on, e.g. "
              "UROCE_EAL='--no-huge -m 512 --no-pci --no-shconf -l 1 --vdev "
              "net_memif0,role=server,socket=/tmp/uroce.sock'";
        errno_out = ENODEV;
        return false;
    }
    std::vector<std::string> words = split_words(eal);
    for (size_t i = 0; i < words.size(); i++) {
        const std::string &w = words[i];
        if (w == "--vdev") {
            if (i + 1 == words.size()) {
                err = "UROCE_EAL: --vdev without a device";
                errno_out = EINVAL;
                return false;
            }
            cfg.vdevs.push_back(words[++i]);
        } else if (w.rfind("--vdev=", 0) == 0) {
            cfg.vdevs.push_back(w.substr(7));
        } else {
            cfg.eal_args.push_back(w);
        }
    }

    const char *ip = env("UROCE_IP");
    if (!ip) {
        err = "UROCE_IP is not set: give uroce0's addresses, e.g. UROCE_IP=10.0.0.1/24 or "
              "UROCE_IP=10.0.0.1/24,fd00::1/64";
        errno_out = ENODEV;
        return false;
    }
    cfg.ips = split_commas(ip);
    local_addr_table check;
    for (const std::string &a : cfg.ips)
        if (!check.add(a)) {
            err = "UROCE_IP: '" + a +
                  "' is not a usable unicast address/prefix (or a duplicate); expected e.g. "
                  "10.0.0.1/24 or fd00::1/64";
            errno_out = EINVAL;
            return false;
        }
    if (cfg.ips.empty()) {
        err = "UROCE_IP holds no address";
        errno_out = EINVAL;
        return false;
    }

    if (const char *p = env("UROCE_PROGRESS")) {
        if (!std::strcmp(p, "thread"))
            cfg.progress = progress_mode::thread;
        else if (!std::strcmp(p, "inline"))
            cfg.progress = progress_mode::inline_poll;
        else {
            err = std::string("UROCE_PROGRESS: '") + p + "' is neither 'thread' nor 'inline'";
            errno_out = EINVAL;
            return false;
        }
    }
    if (const char *m = env("UROCE_MAC")) {
        rte_ether_addr a{};
        if (rte_ether_unformat_addr(m, &a) != 0) {
            err = std::string("UROCE_MAC: '") + m + "' is not a MAC address (aa:bb:cc:dd:ee:ff)";
            errno_out = EINVAL;
            return false;
        }
        cfg.mac = a;
    }
    if (const char *m = env("UROCE_LINK_MTU")) {
        unsigned long v;
        if (!decimal_in(m, 576, 65535, v)) {
            err = std::string("UROCE_LINK_MTU: '") + m + "' is not an MTU (576..65535)";
            errno_out = EINVAL;
            return false;
        }
        cfg.link_mtu = uint32_t(v);
    }
    if (const char *b = env("UROCE_BUSY_POLL_US")) {
        unsigned long v;
        if (!decimal_in(b, 0, 1'000'000, v)) {
            err = std::string("UROCE_BUSY_POLL_US: '") + b +
                  "' is not a number of microseconds (0..1000000)";
            errno_out = EINVAL;
            return false;
        }
        cfg.event_busy_poll_ns = uint64_t(v) * 1000;
    }
    if (const char *c = env("UROCE_COUNTERS")) cfg.print_counters = std::strcmp(c, "0") != 0;
    if (const char *p = env("UROCE_PCAP")) cfg.pcap = p;
    return true;
}

} // namespace uroce::compat
