/* SPDX-License-Identifier: BSD-3-Clause
 * libFuzzer target: the engine's classification and the shards' dispatch:
 * classify_frame, frame_shard, shard::rx_burst (fan-out into the owners'
 * inboxes), shard::poll (inbox to engine) and engine::rx_burst (RoCEv2 to
 * the device, ARP/ICMP/ICMPv6 to the neighbour code on shard 0, the rest
 * counted and freed).
 *
 * Per input: a shard_group of 2-4 shards (first input byte), each with its
 * engine and a device opened on it with its slice of the QPN space
 * (shard_qpn_range), shard 0 with the neighbour code too (10.99.0.1/24,
 * fd00:99::1/64). Then records [shard][len lo][len hi][len bytes of a
 * frame]: the frame arrives at shard (shard & 3) % count; consecutive
 * records for the same shard form one burst (up to 40: longer than the
 * engine's 32); bit 7 ends the burst, lets 1 ms pass and polls every
 * shard; bit 6 splits the frame into two segments after 14 + (len & 31)
 * bytes (classification reads the first segment only, by design).
 *
 * Oracle (besides ASan/UBSan): frame_shard names an existing shard, shard 0
 * for neighbour traffic, the receiving shard for what nobody serves, and
 * qpn_shard of the BTH's destination QPN for RoCEv2; every frame the strict
 * parser accepts (parse_frame) is classified RoCEv2 and goes to the owner
 * of its QPN; after the inboxes are drained every engine has counted, per
 * class, exactly the frames predicted for it (nothing lost, duplicated or
 * delivered to the wrong shard) and the fan-out counters balance; and
 * tearing everything down gives every mbuf back to the pool.
 */
#include <memory>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include <uroce/clock.h>
#include <uroce/engine.h>
#include <uroce/neigh.h>
#include <uroce/parse.h>
#include <uroce/shard.h>
#include <uroce/verbs.h>

namespace uroce::fuzz {
namespace {

/* The port: takes and frees everything. */
class sink_netdev final : public netdev {
  public:
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override {
        rte_pktmbuf_free_bulk(pkts, n);
        return n;
    }
    const uint8_t *mac() const override { return mac_; }
    netdev_caps caps() const override { return {9000, false}; }

  private:
    uint8_t mac_[6] = {0x02, 0, 0, 0, 0, 0x01};
};

constexpr size_t n_class = size_t(frame_class::count);

struct stack {
    manual_clock clk{1'000'000'000};
    sink_netdev port;
    std::unique_ptr<shard_group> group;
    std::vector<std::unique_ptr<engine>> engines;
    std::vector<std::unique_ptr<shard>> shards;
    std::vector<device *> devs;
    std::unique_ptr<neigh> nb;
    std::vector<std::array<uint64_t, n_class>> expected;

    explicit stack(unsigned count) {
        static unsigned serial = 0;
        std::string err;
        group = shard_group::create("fz" + std::to_string(serial++), count, err);
        FUZZ_REQUIRE(group != nullptr);
        local_addr_table addrs;
        addrs.set_mac(mac_addr::from_bytes(port.mac()));
        FUZZ_REQUIRE(addrs.add("10.99.0.1/24"));
        FUZZ_REQUIRE(addrs.add("fd00:99::1/64"));
        neigh_config nc;
        nc.max_entries = 16;
        nc.pool = eal_pool();
        nc.announce_on_start = false;
        nb = std::make_unique<neigh>(nc, addrs);
        for (unsigned i = 0; i < count; i++) {
            engines.push_back(std::make_unique<engine>(port));
            device_config dc;
            dc.dev = engines.back().get();
            dc.pool = eal_pool();
            dc.gids[0] = gid::from_ipv4(0x0a630001);
            dc.gids[1] = *gid::parse("fd00:99::1");
            dc.num_gids = 2;
            dc.clock = &clk;
            dc.seed = 1;
            dc.max_qp = 8;
            dc.max_mr = 8;
            FUZZ_REQUIRE(shard_qpn_range(dc, i));
            device *d = open_device(dc);
            FUZZ_REQUIRE(d != nullptr);
            devs.push_back(d);
            engines.back()->attach(d, i == 0 ? nb.get() : nullptr);
            shards.push_back(std::make_unique<shard>(*group, i, *engines.back()));
        }
        expected.resize(count);
    }

    ~stack() {
        shards.clear();
        group.reset(); /* frees what is still queued */
        for (device *d : devs)
            FUZZ_REQUIRE(close_device(d) == verbs_error::ok);
        engines.clear();
        nb.reset();
    }

    unsigned count() const { return unsigned(shards.size()); }

    /* What must happen to m when it arrives at shard self. */
    void predict(const rte_mbuf *m, unsigned self) {
        uint32_t udp_off = 0;
        frame_class c = classify_frame(m, udp_off);
        FUZZ_REQUIRE(size_t(c) < n_class);
        unsigned owner = frame_shard(m, count(), self);
        FUZZ_REQUIRE(owner < count());
        const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
        switch (c) {
        case frame_class::neighbour:
            FUZZ_REQUIRE(owner == 0);
            break;
        case frame_class::roce:
            FUZZ_REQUIRE(udp_off + 8 <= m->data_len);
            if (m->data_len >= udp_off + 8 + 8) {
                const uint8_t *q = p + udp_off + 8 + 5;
                FUZZ_REQUIRE(owner == qpn_shard(uint32_t(q[0]) << 16 | q[1] << 8 | q[2], count()));
            } else {
                FUZZ_REQUIRE(owner == self);
            }
            break;
        default:
            FUZZ_REQUIRE(owner == self);
        }
        /* what the strict parser takes, the engine gives the transport, and
         * the shard owning the destination QPN */
        roce_packet pk;
        if (m->nb_segs == 1 && parse_frame(p, m->data_len, pk) == parse_error::ok) {
            FUZZ_REQUIRE(c == frame_class::roce);
            FUZZ_REQUIRE(owner == qpn_shard(pk.dest_qp(), count()));
        }
        expected[owner][size_t(c)]++;
    }

    void poll_all() {
        for (int round = 0; round < 64; round++) {
            unsigned moved = 0;
            for (auto &s : shards)
                moved += s->poll();
            if (!moved) break;
        }
    }

    void check() {
        uint64_t out = 0, in = 0, full = 0;
        for (unsigned i = 0; i < count(); i++) {
            const engine_counters &ec = engines[i]->counters();
            uint64_t total = 0;
            for (size_t c = 0; c < n_class; c++) {
                if (ec.rx_by_class[c] != expected[i][c]) {
                    std::fprintf(
                        stderr, "fuzz_engine: shard %u counted %llu %s frames, expected %llu\n", i,
                        (unsigned long long)ec.rx_by_class[c], frame_class_name(frame_class(c)),
                        (unsigned long long)expected[i][c]);
                    std::abort();
                }
                total += ec.rx_by_class[c];
            }
            FUZZ_REQUIRE(ec.rx_frames == total);
            out += shards[i]->counters().fanout_out;
            in += shards[i]->counters().fanout_in;
            full += shards[i]->counters().fanout_ring_full;
        }
        FUZZ_REQUIRE(full == 0); /* the inboxes hold far more than an input has */
        FUZZ_REQUIRE(out == in);
    }
};

void run(const uint8_t *data, size_t size) {
    byte_reader in(data, size);
    stack st(2 + in.u8() % 3);
    std::vector<rte_mbuf *> burst;
    unsigned burst_shard = 0;
    auto flush = [&] {
        if (!burst.empty()) st.shards[burst_shard]->rx_burst(burst.data(), uint16_t(burst.size()));
        burst.clear();
    };
    for (int records = 0; !in.empty() && records < 256; records++) {
        const uint8_t sel = in.u8();
        size_t len = in.u16();
        const uint8_t *frame = in.take(len);
        const unsigned self = (sel & 3) % st.count();
        if (self != burst_shard || burst.size() >= 40) flush();
        burst_shard = self;
        rte_mbuf *m = sel & 0x40 ? split_mbuf(frame, len, 14 + (len & 31)) : mbuf_of(frame, len);
        if (!m) continue;
        st.predict(m, self);
        burst.push_back(m);
        if (sel & 0x80) {
            flush();
            st.clk.advance(1'000'000);
            st.poll_all();
        }
    }
    flush();
    st.poll_all();
    st.check();
}

} // namespace
} // namespace uroce::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace uroce::fuzz;
    if (size > 200000) return 0;
    rte_mempool *pool = eal_pool();
    const unsigned avail0 = rte_mempool_avail_count(pool);
    run(data, size);
    if (rte_mempool_avail_count(pool) != avail0) {
        std::fprintf(stderr, "fuzz_engine: %d mbufs leaked\n",
                     int(avail0) - int(rte_mempool_avail_count(pool)));
        std::abort();
    }
    return 0;
}
