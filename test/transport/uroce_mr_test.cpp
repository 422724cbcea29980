/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: keys are a keyed permutation of (slot, generation), so
 * stale and guessed keys are refused; PD / access / bounds checks without
 * overflow.
 */
#include <bit>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "uroce_tp_fixture.h"

using namespace uroce;
using namespace uroce::test;

namespace {

TEST(mr_table_test, keys_and_staleness) {
    mr_table t;
    t.init(8, 42);
    pd p1, p2;
    mr m[8];
    std::set<uint32_t> keys;
    for (auto &x : m) {
        x.pd = &p1;
        x.addr = reinterpret_cast<uint8_t *>(0x10000);
        x.length = 4096;
        x.access = access_local_write | access_remote_read;
        ASSERT_TRUE(t.insert(&x));
        EXPECT_NE(x.lkey, 0u);
        EXPECT_EQ(t.lookup(x.lkey), &x);
        keys.insert(x.lkey);
    }
    EXPECT_EQ(keys.size(), 8u);
    mr extra;
    EXPECT_FALSE(t.insert(&extra)); /* full */
    EXPECT_EQ(t.lookup(0), nullptr);
    /* keys near a live one are refused: only the live key itself works */
    unsigned accepted = 0;
    for (unsigned byte = 0; byte < 256; ++byte)
        if (t.lookup((m[3].lkey & ~0xffu) | byte)) ++accepted;
    EXPECT_EQ(accepted, 1u);
    /* dereg + re-register in the same slot: the old key is dead */
    uint32_t old = m[3].lkey;
    t.remove(&m[3]);
    EXPECT_EQ(t.lookup(old), nullptr);
    mr again = m[3];
    ASSERT_TRUE(t.insert(&again));
    EXPECT_EQ(again.index, m[3].index);
    EXPECT_NE(again.lkey, old);
    EXPECT_EQ(t.lookup(old), nullptr);

    mr *out;
    uint64_t base = 0x10000;
    EXPECT_EQ(mr_check(t, again.lkey, &p1, access_remote_read, base, 4096, &out), mr_status::ok);
    EXPECT_EQ(mr_check(t, again.lkey, &p2, access_remote_read, base, 16, &out), mr_status::bad_pd);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, access_remote_write, base, 16, &out),
              mr_status::no_access);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, 0, base + 4096, 1, &out), mr_status::out_of_range);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, 0, base - 1, 2, &out), mr_status::out_of_range);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, 0, base + 1, UINT64_MAX, &out), mr_status::out_of_range);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, 0, UINT64_MAX - 2, 8, &out), mr_status::out_of_range);
    EXPECT_EQ(mr_check(t, again.lkey, &p1, 0, base + 4096, 0, &out), mr_status::ok);
}

/* The epoch counts keys that stopped working: the requester's skipped
 * look-ups (uroce_req.cpp, local_range_ok) hold only while it is unchanged. */
TEST(mr_table_test, epoch_moves_when_a_key_stops_working) {
    mr_table t;
    t.init(4, 7);
    pd p;
    mr a, b;
    a.pd = b.pd = &p;
    const uint64_t e0 = t.epoch();
    ASSERT_TRUE(t.insert(&a));
    ASSERT_TRUE(t.insert(&b));
    EXPECT_EQ(t.epoch(), e0); /* a new key breaks no earlier check */
    t.remove(&a);
    EXPECT_EQ(t.epoch(), e0 + 1);
    t.remove(&a); /* not in the table any more: nothing changes */
    EXPECT_EQ(t.epoch(), e0 + 1);
    t.invalidate(&b);
    EXPECT_EQ(t.epoch(), e0 + 2);
    EXPECT_EQ(t.lookup(b.lkey), nullptr);
}

/* The memo gives mr_check's verdicts, and a key that has gone is refused
 * even while it is the memo's. */
TEST(mr_table_test, memo_checks_as_mr_check_does) {
    mr_table t;
    t.init(4, 9);
    pd p1, p2;
    mr a, b;
    for (mr *x : {&a, &b}) {
        x->pd = &p1;
        x->addr = reinterpret_cast<uint8_t *>(0x20000);
        x->length = 4096;
        x->access = access_local_write;
        ASSERT_TRUE(t.insert(x));
    }
    mr_key_memo memo;
    mr *out = nullptr;
    EXPECT_EQ(mr_check(t, memo, 0, &p1, 0, 0x20000, 1, &out), mr_status::bad_key);
    for (int i = 0; i < 2; ++i) { /* the look-up, then the memo */
        EXPECT_EQ(mr_check(t, memo, a.lkey, &p1, access_local_write, 0x20000, 4096, &out),
                  mr_status::ok);
        EXPECT_EQ(out, &a);
        EXPECT_EQ(mr_check(t, memo, a.lkey, &p2, 0, 0x20000, 1, &out), mr_status::bad_pd);
        EXPECT_EQ(mr_check(t, memo, a.lkey, &p1, access_remote_write, 0x20000, 1, &out),
                  mr_status::no_access);
        EXPECT_EQ(mr_check(t, memo, a.lkey, &p1, 0, 0x20000, 4097, &out), mr_status::out_of_range);
    }
    EXPECT_EQ(memo.m, &a);
    /* another key goes; a's is looked up again and still works */
    t.remove(&b);
    EXPECT_EQ(mr_check(t, memo, a.lkey, &p1, 0, 0x20000, 1, &out), mr_status::ok);
    /* the memo's own key goes: refused, though the MR object still exists */
    const uint32_t old = a.lkey;
    t.remove(&a);
    EXPECT_EQ(mr_check(t, memo, old, &p1, 0, 0x20000, 1, &out), mr_status::bad_key);
    /* and one invalidated remotely */
    ASSERT_TRUE(t.insert(&b));
    EXPECT_EQ(mr_check(t, memo, b.lkey, &p1, 0, 0x20000, 1, &out), mr_status::ok);
    t.invalidate(&b);
    EXPECT_EQ(mr_check(t, memo, b.lkey, &p1, 0, 0x20000, 1, &out), mr_status::bad_key);
}

TEST(mr_table_test, keys_differ_across_seeds) {
    mr_table t1, t2;
    t1.init(4, 1);
    t2.init(4, 2);
    mr a, b;
    ASSERT_TRUE(t1.insert(&a));
    ASSERT_TRUE(t2.insert(&b));
    EXPECT_EQ(a.index, b.index);
    EXPECT_NE(a.lkey, b.lkey); /* same slot, different secret */
}

/* One slot registered and deregistered 2^16 times never issues the same
 * key twice, and each stale key is refused as soon as it is replaced. */
TEST(mr_table_test, no_key_reuse_within_2_16_reregistrations) {
    mr_table t;
    t.init(1, 5);
    std::unordered_set<uint32_t> seen;
    seen.reserve(1u << 17);
    mr m;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < (1u << 16); ++i) {
        ASSERT_TRUE(t.insert(&m));
        ASSERT_NE(m.lkey, 0u);
        ASSERT_TRUE(seen.insert(m.lkey).second) << "key reused after " << i << " registrations";
        ASSERT_EQ(t.lookup(m.lkey), &m);
        if (i) {
            ASSERT_EQ(t.lookup(prev), nullptr);
        }
        prev = m.lkey;
        t.remove(&m);
        ASSERT_EQ(t.lookup(prev), nullptr);
    }
}

/* Keys show no sequential structure: consecutive registrations differ in
 * about half their bits, and no bit field counts up with the slot. */
TEST(mr_table_test, keys_show_no_sequential_structure) {
    mr_table t;
    t.init(4096, 9);
    std::vector<mr> m(512);
    for (auto &x : m)
        ASSERT_TRUE(t.insert(&x));
    unsigned total = 0, min_bits = 32, steps_of_one = 0;
    for (size_t i = 1; i < m.size(); ++i) {
        uint32_t a = m[i - 1].lkey, b = m[i].lkey;
        unsigned d = unsigned(std::popcount(a ^ b));
        total += d;
        min_bits = std::min(min_bits, d);
        /* a 16-bit field of the key that counts up from one key to the next */
        for (unsigned shift = 0; shift <= 16; shift += 4)
            if ((((b >> shift) - (a >> shift)) & 0xffff) == 1) ++steps_of_one;
    }
    double mean = double(total) / double(m.size() - 1);
    EXPECT_GT(mean, 13.0);
    EXPECT_LT(mean, 19.0);
    EXPECT_GE(min_bits, 4u);
    EXPECT_LT(steps_of_one, 3u); /* chance alone: 511 * 5 / 2^16, about 0.04 */
}

/* An attacker holding one valid key tries the keys around it (the same
 * slot's other generations, neighbouring slots): with 256 MRs live, none
 * of 2^17 such guesses lands (chance: about 2^17 * 256 / 2^32 = 1/128). */
TEST(mr_table_test, keys_near_a_known_key_find_nothing) {
    mr_table t;
    t.init(4096, 13);
    std::vector<mr> m(256);
    for (auto &x : m)
        ASSERT_TRUE(t.insert(&x));
    const uint32_t known = m[100].lkey;
    unsigned hits = 0;
    for (uint32_t d = 1; d < (1u << 16); ++d) {
        if (t.lookup(known ^ d)) ++hits;        /* low bits */
        if (t.lookup(known + (d << 8))) ++hits; /* index << 8 style neighbours */
    }
    EXPECT_EQ(hits, 0u);
}

/* The key index under churn: random registrations and deregistrations, the
 * table often full; every live key is found, every dead one refused (the
 * open-addressing index's deletions keep every key reachable). */
TEST(mr_table_test, lookup_under_churn) {
    for (uint32_t max_mr : {1u, 7u, 64u, 1000u}) {
        mr_table t;
        t.init(max_mr, max_mr * 31 + 1);
        std::vector<mr> pool(max_mr);
        std::vector<mr *> live, idle;
        for (auto &x : pool)
            idle.push_back(&x);
        std::unordered_set<uint32_t> dead;
        std::mt19937 rng(max_mr);
        for (int step = 0; step < 20000; ++step) {
            bool add = !idle.empty() && (live.empty() || rng() % 5 < 3);
            if (add) {
                mr *x = idle.back();
                idle.pop_back();
                ASSERT_TRUE(t.insert(x));
                dead.erase(x->lkey);
                live.push_back(x);
            } else {
                size_t i = rng() % live.size();
                mr *x = live[i];
                live[i] = live.back();
                live.pop_back();
                t.remove(x);
                dead.insert(x->lkey);
                idle.push_back(x);
            }
            if (step % 97 == 0 || max_mr <= 7) {
                for (mr *x : live)
                    ASSERT_EQ(t.lookup(x->lkey), x) << max_mr << " step " << step;
            }
            if (step % 997 == 0) {
                for (uint32_t k : dead)
                    ASSERT_EQ(t.lookup(k), nullptr) << max_mr << " step " << step;
            }
        }
        mr extra;
        if (idle.empty()) {
            EXPECT_FALSE(t.insert(&extra));
        }
        EXPECT_EQ(t.lookup(0), nullptr);
    }
}

} // namespace
