/* SPDX-License-Identifier: BSD-3-Clause */
#include "uroce_mr.h"

namespace uroce {

static uint64_t splitmix64(uint64_t &s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void mr_table::init(uint32_t max_mr, uint64_t seed) {
    /* index 0 is reserved so that key 0 (and keys < 256) are never valid */
    slots_.assign(size_t(max_mr) + 1, nullptr);
    last_byte_.assign(size_t(max_mr) + 1, 0);
    free_.clear();
    for (uint32_t i = max_mr; i >= 1; --i)
        free_.push_back(i);
    rng_ = seed;
}

bool mr_table::insert(mr *m) {
    if (free_.empty()) return false;
    uint32_t idx = free_.back();
    free_.pop_back();
    uint8_t byte;
    do {
        byte = uint8_t(splitmix64(rng_));
    } while (byte == last_byte_[idx]); /* a re-used slot never re-issues the last key */
    last_byte_[idx] = byte;
    m->index = idx;
    m->lkey = m->rkey = (idx << 8) | byte;
    m->valid = true;
    slots_[idx] = m;
    return true;
}

void mr_table::remove(mr *m) {
    if (m->index == 0 || m->index >= slots_.size() || slots_[m->index] != m) return;
    slots_[m->index] = nullptr;
    free_.push_back(m->index);
    m->valid = false;
}

} // namespace uroce
