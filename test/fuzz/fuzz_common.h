/* SPDX-License-Identifier: BSD-3-Clause
 * Shared by the libFuzzer targets in test/fuzz: the requirement macro (an
 * abort is what libFuzzer and the replay test report as a failure), a small
 * reader that takes fields off the front of the fuzzer's bytes (the gcc
 * replay build has no <fuzzer/FuzzedDataProvider.h>), and DPDK's EAL with
 * one mbuf pool, started once per process for the targets that need mbufs.
 */
#ifndef UROCE_FUZZ_COMMON_H
#define UROCE_FUZZ_COMMON_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define FUZZ_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);    \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

namespace uroce::fuzz {

/* Fields off the front of the input; once it runs dry every read gives 0. */
class byte_reader {
  public:
    byte_reader(const uint8_t *data, size_t size) : p_(data), n_(size) {}
    size_t left() const { return n_; }
    bool empty() const { return n_ == 0; }
    uint8_t u8() {
        if (!n_) return 0;
        n_--;
        return *p_++;
    }
    uint16_t u16() { return uint16_t(u8() | u8() << 8); }
    uint32_t u32() { return uint32_t(u16()) | uint32_t(u16()) << 16; }
    /* Up to n bytes (fewer at the end). */
    const uint8_t *take(size_t &n) {
        if (n > n_) n = n_;
        const uint8_t *r = p_;
        p_ += n;
        n_ -= n;
        return r;
    }

  private:
    const uint8_t *p_;
    size_t n_;
};

} // namespace uroce::fuzz

#ifdef UROCE_FUZZ_WITH_EAL
#include <iterator>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UROCE_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UROCE_FUZZ_ASAN 1
#endif
#ifdef UROCE_FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace uroce::fuzz {

/* EAL (no hugepages, no PCI) once per process, and a pool without a
 * per-lcore cache, so rte_mempool_avail_count() is exact and a leaked mbuf
 * shows as soon as the input that leaked it returns. */
inline rte_mempool *eal_pool() {
    static rte_mempool *pool = [] {
        const char *argv[] = {"uroce_fuzz",  "--no-huge",      "-m", "512", "--no-pci",
                              "--no-shconf", "--no-telemetry", "-l", "0",   "--log-level=*:error"};
        if (rte_eal_init(int(std::size(argv)), const_cast<char **>(argv)) < 0) {
            std::fprintf(stderr, "fuzz: rte_eal_init: %s\n", rte_strerror(rte_errno));
            std::abort();
        }
        /* room for a 4096-byte MTU frame plus headers, like the transport tests */
        rte_mempool *mp = rte_pktmbuf_pool_create("uroce_fuzz", 8191, 0, 0,
                                                  RTE_PKTMBUF_HEADROOM + 4096 + 512, SOCKET_ID_ANY);
        if (!mp) {
            std::fprintf(stderr, "fuzz: mbuf pool: %s\n", rte_strerror(rte_errno));
            std::abort();
        }
        return mp;
    }();
    return pool;
}

/* An mbuf holding a copy of the bytes (nullptr when they do not fit). */
inline rte_mbuf *mbuf_of(const uint8_t *data, size_t len) {
    rte_mbuf *m = rte_pktmbuf_alloc(eal_pool());
    FUZZ_REQUIRE(m != nullptr);
    if (len > rte_pktmbuf_tailroom(m)) {
        rte_pktmbuf_free(m);
        return nullptr;
    }
    char *p = rte_pktmbuf_append(m, uint16_t(len));
    FUZZ_REQUIRE(p != nullptr);
    if (len) std::memcpy(p, data, len);
    return m;
}

/* Two segments: the first `split` bytes, then the rest. */
inline rte_mbuf *split_mbuf(const uint8_t *data, size_t len, size_t split) {
    if (split >= len) return mbuf_of(data, len);
    rte_mbuf *a = mbuf_of(data, split);
    rte_mbuf *b = mbuf_of(data + split, len - split);
    if (!a || !b) {
        rte_pktmbuf_free(a);
        rte_pktmbuf_free(b);
        return nullptr;
    }
    FUZZ_REQUIRE(rte_pktmbuf_chain(a, b) == 0);
    return a;
}

inline void poison(const void *p, size_t n) {
#ifdef UROCE_FUZZ_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}
inline void unpoison(const void *p, size_t n) {
#ifdef UROCE_FUZZ_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#else
    (void)p, (void)n;
#endif
}

} // namespace uroce::fuzz
#endif

#endif
