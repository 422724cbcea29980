/* SPDX-License-Identifier: BSD-3-Clause
 * Protection domains and memory regions: the key table, access and bounds
 * checks (IBTA 10.6: a key is valid only for its PD, its access rights and
 * its range; rxe_mr.c's lookup_mr/mr_check_range).
 *
 * Keys (doc/security.md, "Memory keys"). A key names a table slot and
 * that slot's generation, hidden by a keyed permutation of 32-bit values:
 *
 *     key = E_s(generation << idx_bits | slot)
 *
 * idx_bits is the width of max_mr (at most 16, so generations have at
 * least 16 bits), slot is 1..max_mr, and E_s is a 6-round Feistel network
 * on two 16-bit halves whose round keys come from the device's secret s
 * (device_config::seed, or getrandom() when it is 0). Each registration in
 * a slot takes the next generation (the first one is random), so a slot
 * re-issues a key only after 2^(32 - idx_bits) >= 2^16 registrations; key 0
 * is never issued. Without s, a guess names a given live MR with
 * probability 2^-32, and keys issued one after the other differ in about
 * half their bits. lkey == rkey.
 *
 * Lookup does not invert E_s (some 18 ns, too much for once per packet):
 * live keys sit in an open-addressing index (linear probing, at most half
 * full) keyed by their low bits. Keys are outputs of a secret permutation,
 * so they spread evenly and a peer cannot choose which buckets fill up: a
 * lookup probes about two buckets (O(1) expected). Only live keys are in
 * the index, so a stale or guessed key, and an invalidated one (valid ==
 * false), fail without touching memory.
 */
#ifndef UROCE_MR_H
#define UROCE_MR_H

#include <cstdint>
#include <vector>

#include <uroce/verbs.h>

namespace uroce {

struct pd {
    device *dev = nullptr;
    uint32_t handle = 0;
    uint32_t usecnt = 0; /* objects that still use this PD */
};

struct mr {
    device *dev = nullptr;
    struct pd *pd = nullptr;
    uint8_t *addr = nullptr;
    uint64_t length = 0;
    unsigned access = 0;
    uint32_t lkey = 0;
    uint32_t rkey = 0;
    uint32_t index = 0;
    bool valid = false; /* false after remote invalidation (SEND_WITH_INV) */
};

enum class mr_status : uint8_t { ok, bad_key, bad_pd, no_access, out_of_range };

class mr_table {
  public:
    /* max_mr < 2^16 slots; seed 0: a secret from getrandom(). */
    void init(uint32_t max_mr, uint64_t seed);
    /* Allocate a slot and a fresh key for m; false when full. */
    bool insert(mr *m);
    void remove(mr *m);
    /* A remote invalidation (SEND with Invalidate): the key stops working. */
    void invalidate(mr *m) {
        m->valid = false;
        ++epoch_;
    }
    /* Counts the keys that stopped working (remove, invalidate). A check
     * that passed at an epoch still holds while the epoch is the same: the
     * requester checks a WQE's local memory once when it issues it, and its
     * packets skip the look-up until a key goes (uroce_req.cpp,
     * local_range_ok). */
    uint64_t epoch() const { return epoch_; }

    mr *lookup(uint32_t key) const {
        for (uint32_t h = key & index_mask_;; h = (h + 1) & index_mask_) {
            const key_entry &e = index_[h];
            if (e.key == 0) return nullptr; /* empty bucket: not a live key (nor key 0) */
            if (e.key == key) {
                mr *m = slots_[e.slot];
                return m->valid ? m : nullptr;
            }
        }
    }

  private:
    struct key_entry {
        uint32_t key = 0; /* 0: empty */
        uint32_t slot = 0;
    };

    static constexpr unsigned rounds = 6;
    static uint16_t round_fn(uint64_t k, uint32_t x) {
        uint64_t t = (k ^ x) * 0xff51afd7ed558ccdull;
        t ^= t >> 32;
        t *= 0xc4ceb9fe1a85ec53ull;
        return uint16_t(t >> 48);
    }
    uint32_t encrypt(uint32_t v) const {
        uint32_t l = v >> 16, r = v & 0xffff;
        for (unsigned i = 0; i < rounds; ++i) {
            uint32_t t = r;
            r = l ^ round_fn(round_keys_[i], r);
            l = t;
        }
        return l << 16 | r;
    }
    void index_add(uint32_t key, uint32_t slot);
    void index_erase(uint32_t key);

    std::vector<mr *> slots_;
    std::vector<uint32_t> gen_; /* the generation of each slot's current (or last) key */
    std::vector<uint32_t> free_;
    std::vector<key_entry> index_; /* live keys, a power of two >= 2 x max_mr buckets */
    uint32_t index_mask_ = 0;
    uint64_t round_keys_[rounds] = {};
    uint32_t idx_bits_ = 0;
    uint32_t gen_mask_ = 0;
    uint64_t epoch_ = 1;
};

/* [va, va+len) inside m, without overflow. */
static inline bool mr_in_range(const mr *m, uint64_t va, uint64_t len) {
    uint64_t base = reinterpret_cast<uint64_t>(m->addr);
    return va >= base && len <= m->length && va - base <= m->length - len;
}

/* m grants need over [va, va+len) to PD p. */
static inline mr_status mr_allows(mr *m, const pd *p, unsigned need, uint64_t va, uint64_t len,
                                  mr **out) {
    if (m->pd != p) return mr_status::bad_pd;
    if ((m->access & need) != need) return mr_status::no_access;
    if (!mr_in_range(m, va, len)) return mr_status::out_of_range;
    *out = m;
    return mr_status::ok;
}

/* Resolve (key, va, len) to a host pointer, checking PD, access and range.
 * need is a set of access_flags (0 for local reads). */
static inline mr_status mr_check(const mr_table &t, uint32_t key, const pd *p, unsigned need,
                                 uint64_t va, uint64_t len, mr **out) {
    mr *m = t.lookup(key);
    if (!m) return mr_status::bad_key;
    return mr_allows(m, p, need, va, len, out);
}

/* The last key a QP role resolved, and the table's epoch then: while no key
 * has stopped working since, that key still names the same live MR, so the
 * next check of it skips the key index (two cold lines per packet with
 * thousands of keys; 1.5-2% of a 64 B SEND with one). Key 0 is never
 * issued and epoch 0 never current, so a fresh memo matches nothing. */
struct mr_key_memo {
    uint32_t key = 0;
    mr *m = nullptr;
    uint64_t epoch = 0;
};

/* mr_check through a memo: the same verdicts, PD, access and range checked
 * every time. */
static inline mr_status mr_check(const mr_table &t, mr_key_memo &memo, uint32_t key, const pd *p,
                                 unsigned need, uint64_t va, uint64_t len, mr **out) {
    if (key != memo.key || memo.epoch != t.epoch()) [[unlikely]] {
        mr *m = t.lookup(key);
        if (!m) return mr_status::bad_key;
        memo = {key, m, t.epoch()};
    }
    return mr_allows(memo.m, p, need, va, len, out);
}

} // namespace uroce

#endif
