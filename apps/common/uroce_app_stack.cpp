/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_app_stack.h"

#include "uroce_oob.h"

#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_telemetry.h>

#include <tbb/concurrent_hash_map.h>

namespace uroce::app {

std::atomic<bool> stop_requested{false};
static std::atomic<bool> counters_requested{false};

namespace {

void on_signal(int sig) {
    if (sig == SIGUSR1)
        counters_requested.store(true);
    else
        stop_requested.store(true);
}

/* Live stacks by name, read by DPDK's telemetry thread while the app's
 * thread creates and destroys stacks: a concurrent map is the right tool for
 * this control-plane table (never touched per packet). */
using registry_map = tbb::concurrent_hash_map<std::string, stack *>;
registry_map &registry() {
    static registry_map r;
    return r;
}

/* DPDK 22.11 refuses (-EINVAL, the entry silently missing) any dict key
 * with a character other than [A-Za-z0-9_/]: "port.rx_pkts" or
 * "engine.rx_not-ip" left /uroce/counters empty. Keys are prefix_name with
 * anything else turned into '_'. */
void add_u64(rte_tel_data *d, const char *prefix, const char *name, uint64_t v) {
    char key[RTE_TEL_MAX_STRING_LEN];
    std::snprintf(key, sizeof(key), "%s_%s", prefix, name);
    for (char *p = key; *p; p++)
        if (!std::isalnum(static_cast<unsigned char>(*p)) && *p != '/') *p = '_';
    rte_tel_data_add_dict_u64(d, key, v);
}

/* The sum over the stack's shards (one shard: its own counters). */
template <class Get>
void add_counters(rte_tel_data *d, const char *prefix, const stack &st, Get get,
                  const counter_desc *table, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (unsigned s = 0; s < st.shard_count(); s++)
            v += counter_value(get(st.ctx(s)), table[i]);
        add_u64(d, prefix, table[i].name, v);
    }
}

/* /uroce/list: stack names. /uroce/counters,NAME: the stack's counters
 * (plain reads of the owner thread's counters: a snapshot, not a barrier). */
int tel_list(const char *, const char *, rte_tel_data *d) {
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (auto it = registry().begin(); it != registry().end(); ++it)
        rte_tel_data_add_array_string(d, it->first.c_str());
    return 0;
}

int tel_counters(const char *, const char *params, rte_tel_data *d) {
    registry_map::const_accessor acc;
    std::string name = params && *params ? params : "uroce";
    if (!registry().find(acc, name)) return -EINVAL;
    const stack *st = acc->second;
    rte_tel_data_start_dict(d);
    const ethdev_counters &pc = st->port().counters();
    add_u64(d, "port", "rx_pkts", pc.rx_pkts);
    add_u64(d, "port", "rx_bytes", pc.rx_bytes);
    add_u64(d, "port", "tx_pkts", pc.tx_pkts);
    add_u64(d, "port", "tx_bytes", pc.tx_bytes);
    add_u64(d, "port", "tx_full", pc.tx_full);
    add_u64(d, "port", "tx_too_long", pc.tx_too_long);
    for (size_t c = 0; c < size_t(frame_class::count); c++) {
        uint64_t v = 0;
        for (unsigned s = 0; s < st->shard_count(); s++)
            v += st->eng(s).counters().rx_by_class[c];
        std::string name = std::string("rx_") + frame_class_name(frame_class(c));
        add_u64(d, "engine", name.c_str(), v);
    }
    add_counters(
        d, "dev", *st, [](const device *c) -> const dev_counters & { return device_counters(c); },
        dev_counter_table, std::size(dev_counter_table));
    add_counters(
        d, "qp", *st, [](const device *c) { return device_qp_counters(c); }, qp_counter_table,
        std::size(qp_counter_table));
    /* Per shard: what its lcore did, and the fan-out between shards. */
    for (unsigned s = 0; st->fanout_counters(0) && s < st->shard_count(); s++) {
        const shard_counters &fc = *st->fanout_counters(s);
        const engine_counters &ec = st->eng(s).counters();
        const std::string p = "shard" + std::to_string(s);
        add_u64(d, p.c_str(), "rx_frames", ec.rx_frames);
        add_u64(d, p.c_str(), "tx_frames", ec.tx_frames);
        add_u64(d, p.c_str(), "fanout_out", fc.fanout_out);
        add_u64(d, p.c_str(), "fanout_in", fc.fanout_in);
        add_u64(d, p.c_str(), "fanout_ring_full", fc.fanout_ring_full);
    }
    return 0;
}

void register_telemetry() {
    static bool done = false;
    if (done) return;
    done = true;
    rte_telemetry_register_cmd("/uroce/list", tel_list, "Lists uroce stacks. Takes no parameters");
    rte_telemetry_register_cmd(
        "/uroce/counters", tel_counters,
        "Counters of a uroce stack (port, engine, device, QP totals). Parameters: stack name");
}

} // namespace

void install_signal_handlers() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGUSR1, on_signal);
    /* the out-of-band exchanges' waits end on them too */
    oob::set_cancel_flag(&stop_requested);
}

std::unique_ptr<stack> stack::create(const stack_options &o, std::string &err) {
    std::unique_ptr<stack> st(new stack());
    st->name_ = o.name;
    ethdev_config pc;
    pc.vdev = o.vdev;
    if (o.port_id >= 0) pc.port_id = uint16_t(o.port_id);
    if (pc.vdev.empty() && o.port_id < 0) {
        err = "no port: give --vdev SPEC or --port-id N";
        return nullptr;
    }
    pc.mtu = o.link_mtu;
    pc.mac = o.mac;
    if (o.shards > 1) {
        if (o.shards > rte_lcore_count()) {
            err = "--shards " + std::to_string(o.shards) + " needs as many lcores, EAL has " +
                  std::to_string(rte_lcore_count()) + " (give EAL -l 0-" +
                  std::to_string(o.shards - 1) + ")";
            return nullptr;
        }
        if (!o.pcap.empty()) {
            err = "--pcap writes from one thread: not with --shards";
            return nullptr;
        }
        pc.shards = uint16_t(o.shards);
    }
    /* An earlier stack in this process left EAL's interrupt thread parked
     * (~stack); this port's memif handshake runs on it. */
    if (eal_intr_gate::instance().parked()) eal_intr_gate::instance().release();
    st->port_ = ethdev_port::open(pc, err);
    if (!st->port_) return nullptr;
    st->gate_intr_ = needs_eal_intr_gate(st->port_->driver_name());

    /* TX frames are single mbufs of a whole frame (the transport builds them
     * in one pass): size the pool's rooms for the largest frame. */
    const uint32_t frame =
        std::min<uint32_t>(st->port_->caps().max_frame_len, UINT16_MAX - RTE_PKTMBUF_HEADROOM);
    st->tx_pool_ = make_pktmbuf_pool("tx_" + o.name, 8191 * o.shards, uint16_t(frame), err);
    if (!st->tx_pool_) return nullptr;

    local_addr_table addrs;
    addrs.set_mac(mac_addr::from_bytes(st->port_->mac()));
    for (const std::string &ip : o.ips)
        if (!addrs.add(ip)) {
            err = "--ip " + ip + ": not a usable unicast address (or a duplicate)";
            return nullptr;
        }
    neigh_config nc;
    nc.pool = st->tx_pool_;
    st->nb_ = std::make_unique<neigh>(nc, addrs);

    if (!o.pcap.empty()) {
        st->capture_ = pcap_writer::open(o.pcap, err);
        if (!st->capture_) return nullptr;
    }
    st->eng_ = std::make_unique<engine>(*st->port_, st->capture_.get());

    device_config dc;
    dc.dev = st->eng_.get();
    dc.pool = st->tx_pool_;
    for (size_t i = 0; i < st->addrs().gid_count() && dc.num_gids < std::size(dc.gids); i++)
        dc.gids[dc.num_gids++] = *st->addrs().gid_at(i);
    dc.max_mtu = st->max_mtu();
    dc.cc = o.cc;
    if (o.max_qp) dc.max_qp = o.max_qp;
    dc.respond_on_poll = o.respond_on_poll;
    /* One shard keeps the default device (QPNs 0x11..); with several, shard
     * 0 takes the first slice of the QPN space and the others theirs. */
    if (o.shards > 1) shard_qpn_range(dc, 0);
    verbs_error verr;
    st->ctx_ = open_device(dc, &verr);
    if (!st->ctx_) {
        err = std::string("cannot open the uroce device: ") + verbs_error_str(verr);
        return nullptr;
    }
    st->eng_->attach(st->ctx_, st->nb_.get());
    st->shards_.resize(o.shards);
    st->shards_[0].eng = st->eng_.get();
    st->shards_[0].ctx = st->ctx_;
    if (o.shards > 1) {
        st->group_ = shard_group::create(o.name, o.shards, err);
        if (!st->group_) return nullptr;
        /* The other shards: an engine on their own TX queue, a device on
         * their slice of the QPN space, no neighbour code (shard 0 answers
         * ARP/ND; address handles carry the MAC it resolved). */
        for (unsigned i = 0; i < o.shards; i++) {
            shard_slot &s = st->shards_[i];
            if (i > 0) {
                s.txq = std::make_unique<ethdev_tx_queue>(*st->port_, uint16_t(i));
                s.own_eng = std::make_unique<engine>(*s.txq);
                s.eng = s.own_eng.get();
                device_config sdc = dc;
                sdc.dev = s.eng;
                shard_qpn_range(sdc, i);
                s.ctx = open_device(sdc, &verr);
                if (!s.ctx) {
                    err = "cannot open the uroce device of shard " + std::to_string(i) + ": " +
                          verbs_error_str(verr);
                    return nullptr;
                }
                s.eng->attach(s.ctx, nullptr);
            }
            s.sh = std::make_unique<shard>(*st->group_, i, *s.eng);
        }
    }
    if (o.shards > 1 && o.run_shard_lcores && !st->start_shard_lcores(err)) return nullptr;
    register_telemetry();
    registry().insert({st->name_, st.get()});
    return st;
}

namespace {
struct shard_loop_arg {
    stack *st;
    unsigned shard;
    std::atomic<bool> *stop;
};

int shard_loop(void *arg) {
    std::unique_ptr<shard_loop_arg> a(static_cast<shard_loop_arg *>(arg));
    while (!a->stop->load(std::memory_order_relaxed))
        a->st->poll_shard(a->shard);
    return 0;
}
} // namespace

bool stack::start_shard_lcores(std::string &err) {
    unsigned lcore, i = 1;
    RTE_LCORE_FOREACH_WORKER(lcore) {
        if (i == shards_.size()) break;
        auto *arg = new shard_loop_arg{this, i, &shard_lcores_stop_};
        if (rte_eal_remote_launch(shard_loop, arg, lcore) != 0) {
            delete arg;
            err = "cannot start shard " + std::to_string(i) + " on lcore " + std::to_string(lcore) +
                  " (busy)";
            return false;
        }
        shard_lcores_.push_back(lcore);
        i++;
    }
    if (i < shards_.size()) {
        err = "not enough worker lcores for " + std::to_string(shards_.size()) + " shards";
        return false;
    }
    return true;
}

/* The teardown race of DPDK 22.11's memif (<uroce/eal_intr_gate.h>). A
 * park that times out is counted in the gate; we go on as without it. */
void stack::hold_intr_gate() {
    if (gate_intr_) eal_intr_gate::instance().park(std::chrono::milliseconds(500));
}

stack::~stack() {
    hold_intr_gate();
    registry().erase(name_);
    shard_lcores_stop_.store(true);
    for (unsigned lcore : shard_lcores_)
        rte_eal_wait_lcore(lcore);
    for (size_t i = 1; i < shards_.size(); i++)
        if (shards_[i].ctx) close_device(shards_[i].ctx);
    shards_.clear();
    group_.reset();
    if (ctx_) close_device(ctx_);
    if (capture_) capture_->flush();
    eng_.reset();
    nb_.reset();
    capture_.reset();
    port_.reset();
    /* The interrupt thread stays parked. Let go now, it would handle the
     * peer's disconnect (its socket closing as that process exits) against
     * the port just closed, or run while exit() finalizes the libraries:
     * both end in a SIGSEGV in rte_intr_fd_get (seen at the end of
     * pingpong_e2e's memif cases under load). A later stack::create lets
     * it go. */
    if (tx_pool_) rte_mempool_free(tx_pool_);
}

mtu stack::max_mtu() const {
    switch (port_->max_ib_mtu()) {
    case 4096:
        return mtu::mtu_4096;
    case 2048:
        return mtu::mtu_2048;
    case 1024:
        return mtu::mtu_1024;
    case 512:
        return mtu::mtu_512;
    default:
        return mtu::mtu_256;
    }
}

std::optional<mac_addr> stack::resolve(const gid &peer, std::chrono::milliseconds timeout) {
    std::optional<mac_addr> mac;
    /* A port whose link comes up with its peer (memif) drops what we send before. */
    poll_until(*this, timeout,
               [&] { return port_->link_up() && (mac = nb_->resolve(peer)).has_value(); });
    if (mac) link_ready();
    return mac;
}

int stack::gid_index_for(const gid &peer) const {
    /* Same family as the peer; a link-local peer (fe80::/10) talks to our
     * link-local GID (index 0), any other IPv6 peer to a global address. */
    const bool peer_link_local = peer.raw[0] == 0xfe && (peer.raw[1] & 0xc0) == 0x80;
    for (size_t i = 0; i < addrs().gid_count(); i++) {
        gid g = *addrs().gid_at(i);
        if (g.is_ipv4_mapped() != peer.is_ipv4_mapped()) continue;
        if (!g.is_ipv4_mapped() && (i == 0) != peer_link_local) continue;
        return int(i);
    }
    return -1;
}

void stack::print_counters(FILE *f) const {
    std::fprintf(f, "uroce counters (%s): %s\n", name_.c_str(), port_->describe().c_str());
    const ethdev_counters &pc = port_->counters();
    std::fprintf(f,
                 "  port     rx %lu pkts %lu bytes, tx %lu pkts %lu bytes, tx ring full %lu, tx "
                 "too long %lu\n",
                 (unsigned long)pc.rx_pkts, (unsigned long)pc.rx_bytes, (unsigned long)pc.tx_pkts,
                 (unsigned long)pc.tx_bytes, (unsigned long)pc.tx_full,
                 (unsigned long)pc.tx_too_long);
    rte_eth_stats es{};
    if (rte_eth_stats_get(port_->port_id(), &es) == 0)
        std::fprintf(f,
                     "  pmd      ipackets %lu opackets %lu imissed %lu ierrors %lu oerrors %lu "
                     "rx_nombuf %lu\n",
                     (unsigned long)es.ipackets, (unsigned long)es.opackets,
                     (unsigned long)es.imissed, (unsigned long)es.ierrors,
                     (unsigned long)es.oerrors, (unsigned long)es.rx_nombuf);
    auto dump = [f](const char *what, const auto &c, const counter_desc *table, size_t n) {
        for (size_t i = 0; i < n; i++) {
            uint64_t v = counter_value(c, table[i]);
            if (!v) continue;
            std::fprintf(f, "  %-8s %-22s %12lu  %s\n", what, table[i].name, (unsigned long)v,
                         table[i].description);
        }
    };
    for (unsigned s = 0; s < shard_count(); s++) {
        const engine_counters &ec = eng(s).counters();
        if (group_) {
            const shard_counters &fc = shards_[s].sh->counters();
            std::fprintf(f, "  shard %u  fanout out %lu in %lu ring full %lu\n", s,
                         (unsigned long)fc.fanout_out, (unsigned long)fc.fanout_in,
                         (unsigned long)fc.fanout_ring_full);
        }
        std::fprintf(f, "  engine  ");
        for (size_t c = 0; c < size_t(frame_class::count); c++)
            std::fprintf(f, " rx_%s %lu", frame_class_name(frame_class(c)),
                         (unsigned long)ec.rx_by_class[c]);
        std::fprintf(f, " polls %lu idle %lu\n", (unsigned long)ec.polls,
                     (unsigned long)ec.idle_polls);
        const device *c = ctx(s);
        dump("device", device_counters(c), dev_counter_table, std::size(dev_counter_table));
        for_each_qp(c, [&](const qp *q) {
            char label[16];
            std::snprintf(label, sizeof(label), "qp 0x%x", qp_num(q));
            dump(label, qp_counters_of(q), qp_counter_table, std::size(qp_counter_table));
            const qp_cc_info cc = qp_cc_query(q);
            if (cc.paced) /* the reaction point's rate (<uroce/cc.h>) */
                std::fprintf(f,
                             "  %s  rate %lu Mb/s target %lu Mb/s lowest %lu Mb/s alpha %.4f%s\n",
                             label, (unsigned long)cc.rate_mbps, (unsigned long)cc.target_mbps,
                             (unsigned long)cc.lowest_mbps, cc.alpha,
                             cc.dcqcn ? "" : " (line rate, no DCQCN)");
        });
    }
}

void maybe_print_counters(const stack &st) {
    /* a plain load first: this runs once per poll in uroce-perf */
    if (counters_requested.load(std::memory_order_relaxed) && counters_requested.exchange(false))
        st.print_counters(stderr);
}

} // namespace uroce::app
