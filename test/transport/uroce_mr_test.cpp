/* SPDX-License-Identifier: BSD-3-Clause
 * Memory regions: hardware-style keys (index << 8 | random byte), stale and
 * guessed keys refused, PD / access / bounds checks without overflow.
 */
#include <set>

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
        EXPECT_NE(x.lkey >> 8, 0u);
        EXPECT_EQ(t.lookup(x.lkey), &x);
        keys.insert(x.lkey);
    }
    EXPECT_EQ(keys.size(), 8u);
    mr extra;
    EXPECT_FALSE(t.insert(&extra)); /* full */
    EXPECT_EQ(t.lookup(0), nullptr);
    /* every other key byte on the same index is refused */
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
    EXPECT_EQ(again.lkey >> 8, old >> 8);
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

TEST(mr_table_test, keys_differ_across_seeds) {
    mr_table t1, t2;
    t1.init(4, 1);
    t2.init(4, 2);
    mr a, b;
    ASSERT_TRUE(t1.insert(&a));
    ASSERT_TRUE(t2.insert(&b));
    EXPECT_EQ(a.lkey >> 8, b.lkey >> 8);
    EXPECT_NE(a.lkey, b.lkey); /* same index, different key byte */
}

} // namespace
