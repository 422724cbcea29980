/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_app_options.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <rte_config.h>
#include <rte_ether.h>

namespace uroce::app {

command_line::command_line(std::string prog, std::string synopsis)
    : prog_(std::move(prog)), synopsis_(std::move(synopsis)) {}

void command_line::section(std::string title) {
    pending_section_ = std::move(title);
}

void command_line::add(app_option o) {
    options_.push_back({std::move(o), std::move(pending_section_)});
    pending_section_.clear();
}

void command_line::epilogue(std::string text) {
    epilogue_ = std::move(text);
}

std::string command_line::help() const {
    std::string h = synopsis_;
    auto line = [&h](const std::string &left, const std::string &text) {
        constexpr size_t col = 28;
        h += left;
        if (left.size() + 1 > col)
            h += "\n" + std::string(col, ' ');
        else
            h += std::string(col - left.size(), ' ');
        /* Continuation lines of the text line up with its first line. */
        for (char c : text) {
            h += c;
            if (c == '\n') h += std::string(col, ' ');
        }
        h += "\n";
    };
    for (const entry &e : options_) {
        if (!e.section.empty()) h += "\n" + e.section + ":\n";
        std::string left = e.o.short_name ? std::string("  -") + e.o.short_name + ", " : "      ";
        left += "--" + e.o.long_name;
        if (!e.o.value.empty()) left += "=<" + e.o.value + ">";
        line(left, e.o.help);
    }
    line("  -h, --help", "this text");
    if (!epilogue_.empty()) h += "\n" + epilogue_;
    return h;
}

int command_line::usage_error(const std::string &msg) const {
    std::fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", prog_.c_str(),
                 msg.c_str(), prog_.c_str());
    return exit_usage;
}

int command_line::finish(result r) const {
    switch (r) {
    case result::run:
        return -1;
    case result::help:
        std::fputs(help().c_str(), stdout);
        return exit_ok;
    case result::usage_error:
        break;
    }
    return usage_error(error_);
}

command_line::result command_line::parse(int argc, char **argv) {
    eal_args_.clear();
    positional_.clear();
    error_.clear();
    int first = 1;
    for (int i = 1; i < argc; i++)
        if (std::strcmp(argv[i], "--") == 0) {
            eal_args_.assign(argv + 1, argv + i);
            first = i + 1;
            break;
        }
    /* getopt_long permutes its argv: a copy of ours. */
    std::vector<char *> args = {argv[0]};
    args.insert(args.end(), argv + first, argv + argc);
    const int n = int(args.size());
    args.push_back(nullptr);

    constexpr int long_only = 0x1000, help_index = -1;
    std::string shorts = ":h"; /* ':': a missing value is reported as ':' */
    std::vector<option> longs;
    for (size_t i = 0; i < options_.size(); i++) {
        const app_option &o = options_[i].o;
        const int has_arg = o.value.empty() ? no_argument : required_argument;
        longs.push_back({o.long_name.c_str(), has_arg, nullptr, long_only + int(i)});
        if (o.short_name) {
            shorts += o.short_name;
            if (has_arg == required_argument) shorts += ':';
        }
    }
    longs.push_back({"help", no_argument, nullptr, 'h'});
    longs.push_back({nullptr, 0, nullptr, 0});

    auto name_of = [&](int idx) {
        const app_option &o = options_[size_t(idx)].o;
        return o.short_name ? std::string("-") + o.short_name + "/--" + o.long_name
                            : "--" + o.long_name;
    };
    optind = 0; /* GNU getopt: start over, state reset */
    opterr = 0;
    bool help = false;
    for (int c; (c = getopt_long(n, args.data(), shorts.c_str(), longs.data(), nullptr)) != -1;) {
        int idx = help_index;
        if (c == 'h') {
            help = true;
            continue;
        }
        if (c == '?' || c == ':') {
            const char *arg = args[size_t(optind - 1)];
            std::string what = optopt && arg && arg[0] == '-' && arg[1] != '-'
                                   ? std::string("-") + char(optopt)
                                   : std::string(arg ? arg : "?");
            if (auto eq = what.find('='); eq != std::string::npos) what.resize(eq);
            const bool flag_with_value =
                c == '?' && arg && std::strchr(arg, '=') &&
                std::any_of(options_.begin(), options_.end(), [&](const entry &e) {
                    return e.o.value.empty() && what == "--" + e.o.long_name;
                });
            error_ = c == ':'          ? "option '" + what + "' needs a value"
                     : flag_with_value ? "option '" + what + "' takes no value"
                                       : "unknown (or ambiguous) option '" + what + "'";
            return result::usage_error;
        }
        if (c >= long_only) {
            idx = c - long_only;
        } else {
            for (size_t i = 0; i < options_.size(); i++)
                if (options_[i].o.short_name == c) idx = int(i);
        }
        if (idx == help_index) {
            error_ = "unknown option";
            return result::usage_error;
        }
        std::string err;
        if (!options_[size_t(idx)].o.apply(optarg, err)) {
            error_ = name_of(idx) + ": " + err;
            return result::usage_error;
        }
    }
    if (help) return result::help;
    positional_.assign(args.begin() + optind, args.begin() + n);
    return result::run;
}

bool parse_number(const char *text, long lo, long hi, long &out) {
    if (!text || !*text) return false;
    char *end;
    errno = 0;
    long v = std::strtol(text, &end, 0);
    if (*end || errno || v < lo || v > hi) return false;
    out = v;
    return true;
}

bool parse_sockaddr(const std::string &text, uint16_t port, sockaddr_storage &out) {
    std::memset(&out, 0, sizeof out);
    auto *v4 = reinterpret_cast<sockaddr_in *>(&out);
    auto *v6 = reinterpret_cast<sockaddr_in6 *>(&out);
    if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        return true;
    }
    if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        return true;
    }
    return false;
}

std::optional<mtu> ib_mtu_from_bytes(long bytes) {
    switch (bytes) {
    case 256:
        return mtu::mtu_256;
    case 512:
        return mtu::mtu_512;
    case 1024:
        return mtu::mtu_1024;
    case 2048:
        return mtu::mtu_2048;
    case 4096:
        return mtu::mtu_4096;
    default:
        return std::nullopt;
    }
}

std::string quoted(const char *text) {
    std::string q(1, '\'');
    q += text;
    q += '\'';
    return q;
}

app_option number_option(std::string long_name, char short_name, std::string value,
                         std::string help, long lo, long hi, std::function<void(long)> set) {
    return {std::move(long_name), short_name, std::move(value), std::move(help),
            [lo, hi, set = std::move(set)](const char *v, std::string &err) {
                long n;
                if (!parse_number(v, lo, hi, n)) {
                    err = quoted(v) + " is not a number in " + std::to_string(lo) + ".." +
                          std::to_string(hi);
                    return false;
                }
                set(n);
                return true;
            }};
}

app_option flag_option(std::string long_name, char short_name, std::string help, bool &b) {
    return {std::move(long_name), short_name, "", std::move(help),
            [&b](const char *, std::string &) {
                b = true;
                return true;
            }};
}

void add_stack_options(command_line &cl, stack_options &o) {
    cl.section("Port and stack (uroce's own options)");
    cl.add({"vdev", 0, "spec", "DPDK vdev to attach to, e.g. net_af_packet0,iface=veth0",
            [&o](const char *v, std::string &) {
                o.vdev = v;
                return true;
            }});
    cl.add(number_option("port-id", 0, "n", "an existing DPDK port (a NIC that EAL probed)", 0,
                         RTE_MAX_ETHPORTS - 1, [&o](long n) { o.port_id = int(n); }));
    cl.add({"ip", 0, "addr[/len]",
            "a local IPv4/IPv6 address (repeatable); GID 0 is the MAC's\n"
            "fe80:: address, 1.. the addresses given, as on rxe",
            [&o](const char *v, std::string &) {
                o.ips.emplace_back(v);
                return true;
            }});
    cl.add({"mac", 0, "mac", "the port's MAC (ports without one: net_ring, net_pcap)",
            [&o](const char *v, std::string &err) {
                auto m = mac_addr::parse(v);
                if (!m) {
                    err = quoted(v) + " is not a MAC address";
                    return false;
                }
                rte_ether_addr e;
                std::memcpy(e.addr_bytes, m->b.data(), 6);
                o.mac = e;
                return true;
            }});
    cl.add(number_option("link-mtu", 0, "bytes",
                         "link MTU to ask the PMD for (576..65535); not -m/--mtu,\n"
                         "which is the IB path MTU",
                         576, 65535, [&o](long n) { o.link_mtu = uint32_t(n); }));
    cl.add({"pcap", 0, "file", "write every frame in and out to <file>",
            [&o](const char *v, std::string &) {
                o.pcap = v;
                return true;
            }});
    cl.add(number_option("dcqcn", 0, "mbps",
                         "DCQCN rate control on every RC/UC QP, at most <mbps>\n"
                         "(the line rate; doc/congestion.md)",
                         1, 1000000, [&o](long n) {
                             o.cc.dcqcn = true;
                             o.cc.rp.line_rate_mbps = uint64_t(n);
                         }));
    cl.add({"no-ecn", 0, "", "send Not-ECT instead of ECT(0)", [&o](const char *, std::string &) {
                o.cc.ecn = false;
                return true;
            }});
    cl.add(number_option("cnp-interval", 0, "us",
                         "at most one CNP per QP per <us> microseconds (default 4)", 0, 1000000,
                         [&o](long n) { o.cc.cnp_interval_ns = uint64_t(n) * 1000; }));
    cl.add(number_option("shards", 0, "n",
                         "n shards (engine, device, port queues), one lcore each;\n"
                         "uroce's EAL defaults then take lcores 0..n-1",
                         1, long(std::min<unsigned>(RTE_MAX_LCORE, max_shards)),
                         [&o](long n) { o.shards = unsigned(n); }));
}

void add_tool_options(command_line &cl, tool_options &o, const tool_option_text &t) {
    cl.add(number_option("port", 'p', "port", "TCP port of the exchange (default 18515)", 1, 65535,
                         [&o](long n) { o.tcp_port = uint16_t(n); }));
    cl.add({"ib-dev", 'd', "dev", "accepted for compatibility; the port is --vdev/--port-id",
            [](const char *, std::string &) { return true; }});
    cl.add(number_option("size", 's', "size", t.size_help, 1, long(t.max_size),
                         [&o](long n) { o.size = uint64_t(n); }));
    cl.add(number_option("iters", 'n', "iters", t.iters_help, long(t.min_iters), 1L << 30,
                         [&o](long n) { o.iters = uint64_t(n); }));
    cl.add({"mtu", 'm', "mtu", t.mtu_help, [&o](const char *v, std::string &err) {
                long n;
                std::optional<mtu> m;
                if (parse_number(v, 0, 1L << 20, n)) m = ib_mtu_from_bytes(n);
                if (!m) {
                    err = quoted(v) + " is not an IB path MTU (256, 512, 1024, 2048 or 4096)";
                    if (parse_number(v, 576, 65535, n))
                        err += "; the link MTU is --link-mtu " + std::string(v);
                    return false;
                }
                o.path_mtu = m;
                return true;
            }});
    cl.add(number_option("timeout", 0, "sec",
                         "give up when the peer is silent this long (default 10)", 1, 86400,
                         [&o](long n) { o.timeout_s = uint32_t(n); }));
}

std::string apps_epilogue(unsigned memory_mb) {
    const std::string m = std::to_string(memory_mb);
    return "EAL options go before \"--\". Without them uroce starts DPDK on hugepages\n"
           "(--in-memory) when " +
           m + " MiB of them are free, else with --no-huge -m " + m +
           "\n--no-shconf; with -l 0 (0..n-1 with --shards n), --no-pci and --file-prefix\n"
           "uroce-<pid> (added to your own EAL options too when they have none). EAL's\n"
           "runtime directory (/var/run/dpdk/uroce-<pid>) is removed on exit.\n"
           "\n"
           "-m/--mtu is the IB path MTU, as in perftest and ibv_rc_pingpong; --mtu 1024\n"
           "and --mtu=1024 are the same. The link MTU is --link-mtu.\n"
           "\n"
           "Exit status: 0 success, 1 the run failed, 2 the command line is wrong.\n";
}

std::unique_ptr<eal_session> start_eal(const std::vector<std::string> &eal_args, unsigned shards,
                                       unsigned memory_mb, std::string &err) {
    eal_config c;
    c.args = eal_args;
    c.memory_mb = memory_mb;
    c.lcores = shards > 1 ? "0-" + std::to_string(shards - 1) : "0";
    /* Warnings, without telemetry's "No legacy callbacks, legacy socket
     * not created" on every start (the first pattern that matches wins). */
    c.log_level = "lib.telemetry:error *:warning";
    /* Before EAL: a SIGTERM while it starts ends the app through its
     * loops, with the session's clean-up, not by the default action. */
    install_signal_handlers();
    return eal_session::start(c, err);
}

bool show_progress() {
    static const bool tty = isatty(STDOUT_FILENO) != 0;
    return tty;
}

void seed_psn_random() {
    std::random_device rd;
    unsigned short state[3] = {uint16_t(rd()), uint16_t(rd()), uint16_t(rd())};
    seed48(state);
}

} // namespace uroce::app
