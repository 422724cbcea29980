/* SPDX-License-Identifier: BSD-3-Clause
 * class neigh, the public face of lib/neigh: forwards to the implementation
 * (neigh_proto, uroce_neigh_proto.h, over the cache of uroce_neigh_cache.h),
 * and the counter, drop and state names for telemetry. Design and RFC
 * mapping: doc/neigh.md.
 */
#include <uroce/neigh.h>

#include <cinttypes>
#include <iterator>

#include "uroce_neigh_proto.h"

namespace uroce {

/* ================================================================ names */

namespace {
constexpr const char *drop_names[] = {
#define UROCE_X(name, desc) #name,
    UROCE_NEIGH_DROPS(UROCE_X)
#undef UROCE_X
};
constexpr const char *drop_descs[] = {
#define UROCE_X(name, desc) desc,
    UROCE_NEIGH_DROPS(UROCE_X)
#undef UROCE_X
};
constexpr const char *counter_names[] = {
#define UROCE_X(name, desc) #name,
    UROCE_NEIGH_COUNTERS(UROCE_X)
#undef UROCE_X
};
constexpr const char *counter_descs[] = {
#define UROCE_X(name, desc) desc,
    UROCE_NEIGH_COUNTERS(UROCE_X)
#undef UROCE_X
};
static_assert(std::size(drop_names) == size_t(neigh_drop::count));
static_assert(sizeof(neigh_counters) == std::size(counter_names) * sizeof(uint64_t));
} // namespace

const char *neigh_drop_name(neigh_drop d) {
    return size_t(d) < std::size(drop_names) ? drop_names[size_t(d)] : "?";
}

const char *neigh_drop_description(neigh_drop d) {
    return size_t(d) < std::size(drop_descs) ? drop_descs[size_t(d)] : "?";
}

const char *const *neigh_counter_names(size_t &n) {
    n = std::size(counter_names);
    return counter_names;
}

const char *const *neigh_counter_descriptions(size_t &n) {
    n = std::size(counter_descs);
    return counter_descs;
}

/* ================================================================ neigh */

neigh::neigh(const neigh_config &cfg, const local_addr_table &addrs)
    : p_(std::make_unique<neigh_proto>(cfg, addrs)) {}

neigh::~neigh() = default;

local_addr_table &neigh::addrs() {
    return p_->addrs();
}
const local_addr_table &neigh::addrs() const {
    return p_->addrs();
}
const neigh_config &neigh::config() const {
    return p_->config();
}

void neigh::process_burst(rte_mbuf **in, uint16_t n, rte_mbuf **tx_out, uint16_t &n_tx) {
    p_->process_burst(in, n, tx_out, n_tx);
}
bool neigh::is_neigh_frame(const rte_mbuf *m) {
    return neigh_proto::is_neigh_frame(m);
}

std::optional<mac_addr> neigh::resolve(const gid &next_hop) {
    return p_->resolve(next_hop);
}
bool neigh::send_or_hold(rte_mbuf *m, const gid &next_hop, rte_mbuf **tx_out, uint16_t &n_tx) {
    return p_->send_or_hold(m, next_hop, tx_out, n_tx);
}
void neigh::confirm(const gid &ip) {
    p_->confirm(ip);
}
bool neigh::add_static(const gid &ip, const mac_addr &mac) {
    return p_->add_static(ip, mac);
}
bool neigh::remove(const gid &ip) {
    return p_->remove(ip);
}
void neigh::flush() {
    p_->flush();
}
std::optional<neigh_entry_view> neigh::lookup(const gid &ip) const {
    return p_->lookup(ip);
}
size_t neigh::size() const {
    return p_->size();
}
void neigh::visit(void (*fn)(void *ctx, const neigh_entry_view &v), void *ctx) const {
    p_->visit(fn, ctx);
}
void neigh::dump(FILE *f) const {
    p_->dump(f);
}

void neigh::poll(uint64_t now_ns, rte_mbuf **tx_out, uint16_t &n_tx, uint16_t tx_cap) {
    p_->poll(now_ns, tx_out, n_tx, tx_cap);
}
uint64_t neigh::now() const {
    return p_->now();
}
void neigh::announce() {
    p_->announce();
}

const neigh_counters &neigh::counters() const {
    return p_->counters();
}
uint64_t neigh::drops(neigh_drop d) const {
    return p_->drops(d);
}
uint64_t neigh::drops_total() const {
    return p_->drops_total();
}

void neigh::dump_counters(FILE *f) const {
    size_t n;
    const char *const *names = neigh_counter_names(n);
    const uint64_t *v = reinterpret_cast<const uint64_t *>(&p_->counters());
    for (size_t i = 0; i < n; i++)
        if (v[i]) std::fprintf(f, "neigh.%s %" PRIu64 "\n", names[i], v[i]);
    for (size_t i = 0; i < size_t(neigh_drop::count); i++)
        if (uint64_t d = p_->drops(neigh_drop(i)))
            std::fprintf(f, "neigh.drop.%s %" PRIu64 "\n", neigh_drop_name(neigh_drop(i)), d);
}

} // namespace uroce
