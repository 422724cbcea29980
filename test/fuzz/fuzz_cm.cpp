/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the CM's MAD parser and state machines (lib/cm: parse_cm_mad,
 * cm_agent, cm_conn), two agents A (10.0.0.1) and B (10.0.0.2) joined by a
 * pipe the input drives, and hostile MADs from a third host X (10.0.0.3)
 * or forged as from A or B.
 *
 * The input is records [op][len][len bytes]; op's low 3 bits say what:
 *   0  a MAD of the record's bytes (zero-padded to 256 only if op bit 7)
 *      to B, from X, A or B per op bits 3-4 (a forged or stray message)
 *   1  the same, to A
 *   2  time passes, 10^(op bits 3-5) us, and both agents poll (retries,
 *      MRA waits, timewait)
 *   3  A connects to B's service (op bit 3: the listened one, else another)
 *   4  B listens on its service (op bit 3: or stops)
 *   5  the pipe delivers up to (op >> 3) + 1 messages in order
 *   6  a user call on one of an agent's connections (the record's first
 *      byte picks it): accept (establish in REP_RCVD), reject, disconnect
 *      or destroy (op bits 3-4); a REP with an odd QPN leaves the active
 *      side in REP_RCVD (a QP its user moves)
 *   7  the pipe loses its next message
 * B answers each CONNECT_REQUEST itself when op bit 6 of the record that
 * caused it is set (accept), else leaves it for op 6.
 *
 * Seeds: the REQ, REP, RTU, DREQ and DREP of a real rping between two rxe
 * hosts (test/golden/rping_rdmacm.pcap), as op-0 and op-1 records, and
 * handshakes driven by ops alone (make-seeds.py).
 *
 * Oracle (besides ASan/UBSan): every MAD an agent sends is a CM MAD
 * parse_cm_mad accepts; connections created minus freed is what the agent
 * holds; half-open passive connections never exceed the cap and no agent
 * holds more than max_conns; a connection's state is always one of the
 * machine's; every event belongs to a connection the agent has.
 */
#include <array>
#include <deque>
#include <memory>
#include <vector>

#include "fuzz_common.h"
#include "uroce_cm_agent.h"

namespace uroce::fuzz {
namespace {

constexpr unsigned max_half_open = 8;
constexpr unsigned max_conns = 32;
constexpr uint64_t service = 0x0000000001061c06ull;

struct node;
struct in_flight {
    node *to;
    cm_peer from;
    std::array<uint8_t, mad_size> mad;
};

struct node final : cm_agent::endpoint {
    cm_peer me;
    std::deque<in_flight> *pipe = nullptr;
    node *other = nullptr;
    bool auto_accept = false;
    uint64_t now = 0;
    std::unique_ptr<cm_agent> agent;
    std::vector<uint32_t> known; /* comm IDs of its connections, as it told us (may be gone) */

    explicit node(uint32_t ip) {
        me.addr = gid::from_ipv4(ip);
        cm_agent::config c;
        c.seed = ip;
        c.max_half_open = max_half_open;
        c.max_conns = max_conns;
        agent = std::make_unique<cm_agent>(*this, c);
    }
    void send_mad(const cm_peer &to, const uint8_t *mad) override {
        cm_mad_view v;
        FUZZ_REQUIRE(parse_cm_mad(mad, mad_size, v) == mad_error::ok);
        if (pipe->size() > 4096) return; /* a bounded wire */
        in_flight f{to.addr == other->me.addr ? other : nullptr, me, {}};
        std::memcpy(f.mad.data(), mad, mad_size);
        if (f.to) pipe->push_back(f);
    }
    bool qp_to_rts(cm_conn &, const cm_rep &rep) override { return rep.local_qpn() != 0; }
    /* an odd peer QPN: the user moves its QP (REP_RCVD until establish) */
    bool user_moves_qp(cm_conn &c) override { return c.remote_qpn() & 1; }
    void qp_established(cm_conn &) override {}
    void qp_to_error(cm_conn &) override {}
    void event(cm_conn &c, cm_conn_event e) override {
        FUZZ_REQUIRE(unsigned(c.state()) < unsigned(cm_state::count));
        if (known.size() < 64) known.push_back(c.local_comm_id());
        if (e != cm_conn_event::connect_request) FUZZ_REQUIRE(agent->find(c.local_comm_id()) == &c);
        if (e == cm_conn_event::connect_request && auto_accept) {
            cm_rep_params p;
            p.local_qpn = 0x42;
            p.starting_psn = 0x1234;
            c.accept(p, now);
        }
    }
    void check() const {
        const cm_agent_counters &k = agent->counters();
        FUZZ_REQUIRE(k.conns_created - k.conns_freed == agent->conn_count());
        FUZZ_REQUIRE(agent->conn_count() <= max_conns);
        FUZZ_REQUIRE(agent->half_open() <= max_half_open);
    }
};

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce;
    using namespace uroce::fuzz;
    byte_reader in(data, size);
    std::deque<in_flight> pipe;
    node a(0x0a000001), b(0x0a000002);
    cm_peer x;
    x.addr = gid::from_ipv4(0x0a000003);
    a.pipe = b.pipe = &pipe;
    a.other = &b;
    b.other = &a;
    b.agent->listen(service, &b);
    uint64_t now = 1'000'000'000;
    unsigned steps = 0;
    while (!in.empty() && steps++ < 2000) {
        const uint8_t op = in.u8();
        size_t len = in.u8();
        if ((op & 7) == 0 || (op & 7) == 1)
            len = size_t(in.u8()) | len << 8; /* MADs: up to 64 KiB */
        const uint8_t *bytes = in.take(len);
        a.now = b.now = now;
        b.auto_accept = op & 0x40;
        switch (op & 7) {
        case 0:
        case 1: {
            node &to = (op & 7) == 0 ? b : a;
            const unsigned who = (op >> 3) & 3;
            cm_peer from = who == 0 ? x : who == 1 ? a.me : b.me;
            std::vector<uint8_t> mad(bytes, bytes + len);
            if ((op & 0x80) && mad.size() < mad_size) mad.resize(mad_size);
            to.agent->receive(from, mad.data(), mad.size(), now);
            break;
        }
        case 2: {
            uint64_t step = 1000;
            for (unsigned i = 0; i < ((op >> 3) & 7); i++)
                step *= 10;
            now += step;
            a.now = b.now = now;
            a.agent->poll(now);
            b.agent->poll(now);
            break;
        }
        case 3: {
            cm_req_params p;
            p.service_id = (op & 8) ? service : service + 1;
            p.local_qpn = 0x11;
            p.starting_psn = 0x100;
            p.remote_cm_response_timeout = uint8_t(op >> 4) + 10;
            p.max_cm_retries = 3;
            p.path.local_gid = a.me.addr;
            p.path.remote_gid = b.me.addr;
            if (cm_conn *c = a.agent->connect(b.me, p, now))
                if (a.known.size() < 64) a.known.push_back(c->local_comm_id());
            break;
        }
        case 4:
            if (op & 8)
                b.agent->unlisten(service);
            else
                b.agent->listen(service, &b);
            break;
        case 5:
            for (unsigned i = 0; i <= unsigned(op >> 3) && !pipe.empty(); i++) {
                in_flight f = pipe.front();
                pipe.pop_front();
                f.to->now = now;
                f.to->agent->receive(f.from, f.mad.data(), mad_size, now);
            }
            break;
        case 6: {
            /* One of the connections the agent told us of, if still alive. */
            node &n = (op & 0x20) ? a : b;
            if (n.known.empty() || len == 0) break;
            cm_conn *c = n.agent->find(n.known[bytes[0] % n.known.size()]);
            if (!c) break;
            switch ((op >> 3) & 3) {
            case 0: {
                if (c->state() == cm_state::rep_rcvd) { /* rdma_establish */
                    c->establish();
                    break;
                }
                cm_rep_params p;
                p.local_qpn = 0x43;
                c->accept(p, now);
                break;
            }
            case 1:
                c->reject(cm_rej_reason::consumer_defined);
                break;
            case 2:
                c->disconnect(now);
                break;
            case 3:
                n.agent->destroy(c, now);
                break;
            }
            break;
        }
        case 7:
            if (!pipe.empty()) pipe.pop_front();
            break;
        }
        a.check();
        b.check();
    }
    return 0;
}
