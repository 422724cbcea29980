/* SPDX-License-Identifier: BSD-3-Clause
 * The apps' one command line parser (uroce_app_options.h), without EAL:
 * "--opt V" and "--opt=V" alike, -m/--mtu the IB path MTU in every form
 * and --link-mtu the link's, EAL arguments before "--", positional
 * arguments anywhere, --help, and usage errors with their messages.
 */
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>
#include <string>
#include <vector>

#include "uroce_app_options.h"

namespace uroce::app {
namespace {

struct parsed {
    stack_options stack;
    tool_options tool;
    bool flag = false;
    command_line cl{"app", "Usage: app\n"};
    command_line::result r = command_line::result::usage_error;

    explicit parsed(const std::vector<const char *> &args) {
        add_stack_options(cl, stack);
        cl.section("Tool");
        add_tool_options(cl, tool, {1 << 20, 1, "size", "iters", "mtu"});
        cl.add(flag_option("flag", 'f', "a flag", flag));
        std::vector<char *> argv = {const_cast<char *>("app")};
        for (const char *a : args)
            argv.push_back(const_cast<char *>(a));
        argv.push_back(nullptr);
        r = cl.parse(int(argv.size() - 1), argv.data());
    }
};

TEST(app_options, mtu_is_the_ib_path_mtu_in_every_form) {
    for (auto args : {std::vector<const char *>{"--mtu", "1024"},
                      {"--mtu=1024"},
                      {"-m", "1024"},
                      {"-m1024"},
                      {"--mt=1024"}}) {
        parsed p(args);
        ASSERT_EQ(p.r, command_line::result::run) << args[0] << ": " << p.cl.error();
        ASSERT_TRUE(p.tool.path_mtu) << args[0];
        EXPECT_EQ(*p.tool.path_mtu, mtu::mtu_1024) << args[0];
        EXPECT_EQ(p.stack.link_mtu, 0u) << args[0] << " changed the link MTU";
    }
}

TEST(app_options, link_mtu_is_its_own_option) {
    for (auto args : {std::vector<const char *>{"--link-mtu", "9000"}, {"--link-mtu=9000"}}) {
        parsed p(args);
        EXPECT_EQ(p.r, command_line::result::run) << p.cl.error();
        EXPECT_EQ(p.stack.link_mtu, 9000u);
        EXPECT_FALSE(p.tool.path_mtu);
    }
}

TEST(app_options, a_link_mtu_given_as_mtu_points_to_link_mtu) {
    parsed p({"--mtu", "9000"});
    EXPECT_EQ(p.r, command_line::result::usage_error);
    EXPECT_NE(p.cl.error().find("-m/--mtu: '9000' is not an IB path MTU"), std::string::npos)
        << p.cl.error();
    EXPECT_NE(p.cl.error().find("--link-mtu 9000"), std::string::npos) << p.cl.error();
    parsed q({"--mtu=1000"});
    EXPECT_EQ(q.r, command_line::result::usage_error);
    EXPECT_NE(q.cl.error().find("is not an IB path MTU"), std::string::npos) << q.cl.error();
}

TEST(app_options, stack_options_both_forms) {
    parsed p({"--vdev=net_ring0", "--ip", "10.0.0.1/24", "--ip=fd00::1/64", "--mac",
              "02:00:00:00:00:01", "--pcap=x.pcap", "--shards", "2", "--port-id=3"});
    ASSERT_EQ(p.r, command_line::result::run) << p.cl.error();
    EXPECT_EQ(p.stack.vdev, "net_ring0");
    EXPECT_EQ(p.stack.ips, (std::vector<std::string>{"10.0.0.1/24", "fd00::1/64"}));
    ASSERT_TRUE(p.stack.mac);
    EXPECT_EQ(p.stack.mac->addr_bytes[5], 1);
    EXPECT_EQ(p.stack.pcap, "x.pcap");
    EXPECT_EQ(p.stack.shards, 2u);
    EXPECT_EQ(p.stack.port_id, 3);
}

TEST(app_options, eal_arguments_before_the_double_dash) {
    parsed p({"--no-huge", "-m", "512", "--", "-m", "2048", "--vdev", "net_ring0"});
    ASSERT_EQ(p.r, command_line::result::run) << p.cl.error();
    EXPECT_EQ(p.cl.eal_args(), (std::vector<std::string>{"--no-huge", "-m", "512"}));
    EXPECT_EQ(*p.tool.path_mtu, mtu::mtu_2048); /* -m after "--" is the tool's */
    EXPECT_EQ(p.stack.vdev, "net_ring0");
    parsed q({"--vdev", "net_ring0"});
    EXPECT_TRUE(q.cl.eal_args().empty());
}

TEST(app_options, positional_arguments_anywhere) {
    parsed p({"send_bw", "--ip", "10.0.0.1", "-f", "10.0.0.2", "-s", "64"});
    ASSERT_EQ(p.r, command_line::result::run) << p.cl.error();
    EXPECT_EQ(p.cl.positional(), (std::vector<std::string>{"send_bw", "10.0.0.2"}));
    EXPECT_TRUE(p.flag);
    EXPECT_EQ(*p.tool.size, 64u);
}

TEST(app_options, tool_options) {
    parsed p({"-p", "18600", "-n", "7", "--timeout=3", "-d", "rxe0", "--size=0x100"});
    ASSERT_EQ(p.r, command_line::result::run) << p.cl.error();
    EXPECT_EQ(p.tool.tcp_port, 18600);
    EXPECT_EQ(*p.tool.iters, 7u);
    EXPECT_EQ(p.tool.timeout_s, 3u);
    EXPECT_EQ(*p.tool.size, 256u);
}

TEST(app_options, help) {
    for (const char *h : {"-h", "--help"}) {
        parsed p({"--vdev", "x", h});
        EXPECT_EQ(p.r, command_line::result::help) << h;
    }
    parsed p({"--help"});
    const std::string text = p.cl.help();
    for (const char *o :
         {"--vdev=<spec>", "--port-id=<n>", "--ip=<addr[/len]>", "--mac=<mac>",
          "--link-mtu=<bytes>", "--pcap=<file>", "--shards=<n>", "-p, --port=<port>",
          "-m, --mtu=<mtu>", "-s, --size=<size>", "-n, --iters=<iters>", "--timeout=<sec>",
          "-f, --flag", "-h, --help", "Usage: app", "\nTool:\n"})
        EXPECT_NE(text.find(o), std::string::npos) << o << " not in\n" << text;
}

TEST(app_options, usage_errors) {
    const struct {
        std::vector<const char *> args;
        const char *message;
    } cases[] = {
        {{"--bogus"}, "unknown (or ambiguous) option '--bogus'"},
        {{"--bogus=1"}, "unknown (or ambiguous) option '--bogus'"},
        {{"-z"}, "unknown (or ambiguous) option '-z'"},
        {{"--vdev"}, "option '--vdev' needs a value"},
        {{"-s"}, "option '-s' needs a value"},
        {{"-s", "0"}, "-s/--size: '0' is not a number in 1..1048576"},
        {{"--port-id", "x"}, "--port-id: 'x' is not a number"},
        {{"--mac", "zz"}, "--mac: 'zz' is not a MAC address"},
        {{"--link-mtu", "100"}, "--link-mtu: '100' is not a number in 576..65535"},
        {{"--flag=1"}, "option '--flag' takes no value"},
    };
    for (const auto &c : cases) {
        parsed p(c.args);
        EXPECT_EQ(p.r, command_line::result::usage_error) << c.args[0];
        EXPECT_NE(p.cl.error().find(c.message), std::string::npos)
            << c.args[0] << ": '" << p.cl.error() << "', expected '" << c.message << "'";
    }
}

TEST(app_options, finish_gives_the_exit_codes) {
    parsed ok({"--vdev", "x"});
    EXPECT_EQ(ok.cl.finish(ok.r), -1);
    parsed bad({"--bogus"});
    testing::internal::CaptureStderr();
    EXPECT_EQ(bad.cl.finish(bad.r), exit_usage);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("app: unknown"), std::string::npos) << err;
    EXPECT_NE(err.find("Try 'app --help'"), std::string::npos) << err;
    parsed help({"--help"});
    testing::internal::CaptureStdout();
    EXPECT_EQ(help.cl.finish(help.r), exit_ok);
    EXPECT_NE(testing::internal::GetCapturedStdout().find("Usage: app"), std::string::npos);
}

TEST(app_options, parse_sockaddr) {
    sockaddr_storage ss;
    ASSERT_TRUE(parse_sockaddr("10.0.0.7", 7174, ss));
    const auto *v4 = reinterpret_cast<const sockaddr_in *>(&ss);
    EXPECT_EQ(v4->sin_family, AF_INET);
    EXPECT_EQ(ntohs(v4->sin_port), 7174);
    EXPECT_EQ(ntohl(v4->sin_addr.s_addr), 0x0a000007u);

    ASSERT_TRUE(parse_sockaddr("fe80::1", 0, ss));
    const auto *v6 = reinterpret_cast<const sockaddr_in6 *>(&ss);
    EXPECT_EQ(v6->sin6_family, AF_INET6);
    EXPECT_EQ(v6->sin6_port, 0);
    EXPECT_EQ(v6->sin6_addr.s6_addr[0], 0xfe);
    EXPECT_EQ(v6->sin6_addr.s6_addr[15], 1);
    EXPECT_EQ(v6->sin6_scope_id, 0u); /* zeroed, whatever was there */

    std::memset(&ss, 0xab, sizeof ss);
    for (const char *bad : {"", "10.0.0", "10.0.0.256", "host.example", "fe80::1::2", " 10.0.0.1"})
        EXPECT_FALSE(parse_sockaddr(bad, 1, ss)) << bad;
}

} // namespace
} // namespace uroce::app
