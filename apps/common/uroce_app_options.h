/* SPDX-License-Identifier: BSD-3-Clause
 * The command line of uroce-perf and uroce-pingpong, parsed once:
 *
 *   APP [EAL options --] [stack options] [tool options] [app options] [args]
 *
 * One parser (getopt_long underneath, so "--opt V" and "--opt=V" are the
 * same option, and -h/--help is built in), one help text made from the
 * options' own lines. The stack options (--vdev, --port-id, --ip, --mac,
 * --link-mtu, --pcap, --shards) and the options both tools share with
 * perftest and ibv_rc_pingpong (-p, -d, -s, -n, -m/--mtu as the IB path
 * MTU, --timeout) are added by add_stack_options() and add_tool_options();
 * each app adds its own.
 *
 * Exit codes: 0 success (and --help), 1 the run failed, 2 the command line
 * is wrong (a message and "Try 'APP --help'" on stderr). Everything here
 * runs before EAL starts: --help and usage errors print no DPDK output.
 */
#ifndef UROCE_APP_OPTIONS_H
#define UROCE_APP_OPTIONS_H

#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "uroce_app_stack.h"
#include <uroce/eal.h>
#include "uroce_oob.h"

namespace uroce::app {

constexpr int exit_ok = 0, exit_failure = 1, exit_usage = 2;

struct app_option {
    std::string long_name; /* without "--" */
    char short_name = 0;   /* 0: long form only */
    std::string value;     /* the value's name in the help ("size"); empty: a flag */
    std::string help;
    /* value is nullptr for a flag; false with err set rejects the command line. */
    std::function<bool(const char *value, std::string &err)> apply;
};

class command_line {
  public:
    /* synopsis: the "Usage:" lines and anything that goes before the options. */
    command_line(std::string prog, std::string synopsis);

    void section(std::string title); /* the next options' heading in the help */
    void add(app_option o);
    void epilogue(std::string text); /* after the options */

    enum class result { run, help, usage_error };
    /* The EAL arguments are those before the first "--" (none without
     * one); the rest is parsed. help: print help() and exit 0; usage_error:
     * error() says why. */
    result parse(int argc, char **argv);

    std::string help() const;
    /* Prints "PROG: msg" and the --help hint on stderr; returns exit_usage. */
    int usage_error(const std::string &msg) const;
    /* parse()'s outcome as an exit code: -1 to go on, else the code (help
     * printed on stdout, or the usage error on stderr). */
    int finish(result r) const;

    const std::vector<std::string> &eal_args() const { return eal_args_; }
    const std::vector<std::string> &positional() const { return positional_; }
    const std::string &error() const { return error_; }
    const std::string &prog() const { return prog_; }

  private:
    struct entry {
        app_option o;
        std::string section; /* non-empty: a heading before this option */
    };
    std::string prog_, synopsis_, epilogue_, pending_section_;
    std::vector<entry> options_;
    std::vector<std::string> eal_args_, positional_;
    std::string error_;
};

/* text as a number in lo..hi (decimal, or 0x hex); false otherwise. */
bool parse_number(const char *text, long lo, long hi, long &out);
/* 'text', for messages. */
std::string quoted(const char *text);
/* An option whose value is a number in lo..hi, handed to set. */
app_option number_option(std::string long_name, char short_name, std::string value,
                         std::string help, long lo, long hi, std::function<void(long)> set);
/* A flag that sets b. */
app_option flag_option(std::string long_name, char short_name, std::string help, bool &b);
/* An IPv4 or IPv6 address in text form, with port, as a socket address for
 * the rdma_cm (zeroed first); false if text is neither. */
bool parse_sockaddr(const std::string &text, uint16_t port, sockaddr_storage &out);
/* 256, 512, 1024, 2048 or 4096 as an IB MTU. */
std::optional<mtu> ib_mtu_from_bytes(long bytes);

/* The stack options, into o. */
void add_stack_options(command_line &cl, stack_options &o);

/* The options both tools share with perftest and ibv_rc_pingpong. */
struct tool_options {
    uint16_t tcp_port = oob::default_port; /* -p, --port */
    std::optional<mtu> path_mtu;           /* -m, --mtu: the IB path MTU */
    std::optional<uint64_t> size;          /* -s, --size */
    std::optional<uint64_t> iters;         /* -n, --iters */
    uint32_t timeout_s = 10;               /* --timeout */
};
/* What differs between the tools in those options. */
struct tool_option_text {
    uint64_t max_size;
    uint64_t min_iters;
    std::string size_help;  /* "message size (default 65536; lat 2)" */
    std::string iters_help; /* "iterations (default 1000)" */
    std::string mtu_help;   /* "IB path MTU: 256..4096 (default 1024)" */
};
void add_tool_options(command_line &cl, tool_options &o, const tool_option_text &t);

/* The apps' help text on EAL, the port and the exit codes. */
std::string apps_epilogue(unsigned memory_mb);

/* Starts EAL for an app: the arguments before "--" as they are (plus a
 * --file-prefix uroce-<pid> when they have none), or uroce's defaults
 * (uroce_eal.h) with lcores 0..shards-1, memory_mb without hugepages,
 * telemetry on and warnings only. Installs the SIGINT/SIGTERM/SIGUSR1
 * handlers. nullptr with err set. */
std::unique_ptr<eal_session> start_eal(const std::vector<std::string> &eal_args, unsigned shards,
                                       unsigned memory_mb, std::string &err);

/* Progress lines ("RDMA_Write BW Test 4096 B:  20%") only on a terminal:
 * logs and pipes get the results alone. */
bool show_progress();

/* Seed lrand48(), which draws the initial PSNs as the stock tools do, from
 * the OS's random source: getpid() * time() (the tools' seed) lets an
 * off-path sender guess a QP's PSNs. */
void seed_psn_random();

} // namespace uroce::app

#endif
