/* SPDX-License-Identifier: BSD-3-Clause
 * The key table: slots, generations and the keyed permutation that turns
 * them into keys (uroce_mr.h, doc/security.md).
 */
#include "uroce_mr.h"

#include <sys/random.h>

#include <bit>

#include <rte_cycles.h>

namespace uroce {

static uint64_t splitmix64(uint64_t &s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The secret when the caller gives none: the kernel's CSPRNG; the TSC only
 * if getrandom() fails (then keys are as guessable as the boot time). */
static uint64_t random_seed() {
    uint64_t s = 0;
    if (getrandom(&s, sizeof(s), 0) != ssize_t(sizeof(s)) || s == 0) s = rte_rdtsc() | 1;
    return s;
}

void mr_table::init(uint32_t max_mr, uint64_t seed) {
    /* index 0 is reserved: no key decrypts to a usable slot 0 */
    slots_.assign(size_t(max_mr) + 1, nullptr);
    gen_.assign(size_t(max_mr) + 1, 0);
    free_.clear();
    for (uint32_t i = max_mr; i >= 1; --i)
        free_.push_back(i);
    idx_bits_ = uint32_t(std::bit_width(max_mr));
    index_.assign(std::bit_ceil(size_t(max_mr) * 2 + 2), key_entry{});
    index_mask_ = uint32_t(index_.size() - 1);
    gen_mask_ = uint32_t((uint64_t(1) << (32 - idx_bits_)) - 1);
    uint64_t rng = seed ? seed : random_seed();
    for (auto &k : round_keys_)
        k = splitmix64(rng);
    for (auto &g : gen_)
        g = uint32_t(splitmix64(rng)) & gen_mask_;
}

bool mr_table::insert(mr *m) {
    if (free_.empty()) return false;
    uint32_t idx = free_.back();
    free_.pop_back();
    uint32_t key;
    do {
        gen_[idx] = (gen_[idx] + 1) & gen_mask_;
        key = encrypt(gen_[idx] << idx_bits_ | idx);
    } while (key == 0); /* key 0 is never issued */
    m->index = idx;
    m->lkey = m->rkey = key;
    m->valid = true;
    slots_[idx] = m;
    index_add(key, idx);
    return true;
}

void mr_table::remove(mr *m) {
    if (m->index == 0 || m->index >= slots_.size() || slots_[m->index] != m) return;
    index_erase(m->lkey);
    slots_[m->index] = nullptr;
    free_.push_back(m->index);
    m->valid = false;
    ++epoch_;
}

/* Linear probing. Live keys are distinct (E_s is a bijection and slots are
 * distinct) and the index is at most half full, so a free bucket exists. */
void mr_table::index_add(uint32_t key, uint32_t slot) {
    uint32_t h = key & index_mask_;
    while (index_[h].key != 0)
        h = (h + 1) & index_mask_;
    index_[h] = key_entry{key, slot};
}

/* Backward-shift deletion: entries after the hole that could live in it
 * move up, so every live key stays reachable from its home bucket without
 * tombstones. */
void mr_table::index_erase(uint32_t key) {
    uint32_t hole = key & index_mask_;
    while (index_[hole].key != key) {
        if (index_[hole].key == 0) return; /* not there */
        hole = (hole + 1) & index_mask_;
    }
    for (uint32_t j = (hole + 1) & index_mask_; index_[j].key != 0; j = (j + 1) & index_mask_) {
        uint32_t home = index_[j].key & index_mask_;
        /* entry j stays if its home lies cyclically in (hole, j] */
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (!stays) {
            index_[hole] = index_[j];
            hole = j;
        }
    }
    index_[hole] = key_entry{};
}

} // namespace uroce
