/* SPDX-License-Identifier: BSD-3-Clause
 * Protection domains and memory regions: the key table, access and bounds
 * checks (IBTA 10.6: a key is valid only for its PD, its access rights and
 * its range; rxe_mr.c's lookup_mr/mr_check_range).
 *
 * Keys are hardware style: key = (table index << 8) | key byte. The key byte
 * is random and changes each time a slot is reused, so a stale key (after
 * dereg_mr) or a guessed one fails the lookup and never touches memory.
 * lkey == rkey. Key 0 is never issued.
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
    void init(uint32_t max_mr, uint64_t seed);
    /* Allocate a slot and a fresh key for m; false when full. */
    bool insert(mr *m);
    void remove(mr *m);

    mr *lookup(uint32_t key) const {
        uint32_t idx = key >> 8;
        if (idx >= slots_.size()) return nullptr;
        mr *m = slots_[idx];
        return (m && m->lkey == key && m->valid) ? m : nullptr;
    }

  private:
    std::vector<mr *> slots_;
    std::vector<uint8_t> last_byte_;
    std::vector<uint32_t> free_;
    uint64_t rng_ = 0;
};

/* [va, va+len) inside m, without overflow. */
static inline bool mr_in_range(const mr *m, uint64_t va, uint64_t len) {
    uint64_t base = reinterpret_cast<uint64_t>(m->addr);
    return va >= base && len <= m->length && va - base <= m->length - len;
}

/* Resolve (key, va, len) to a host pointer, checking PD, access and range.
 * need is a set of access_flags (0 for local reads). */
static inline mr_status mr_check(const mr_table &t, uint32_t key, const pd *p, unsigned need,
                                 uint64_t va, uint64_t len, mr **out) {
    mr *m = t.lookup(key);
    if (!m) return mr_status::bad_key;
    if (m->pd != p) return mr_status::bad_pd;
    if ((m->access & need) != need) return mr_status::no_access;
    if (!mr_in_range(m, va, len)) return mr_status::out_of_range;
    *out = m;
    return mr_status::ok;
}

} // namespace uroce

#endif
