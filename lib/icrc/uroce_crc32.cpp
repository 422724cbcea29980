/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: CRC-32 run-time dispatch, and the zero-extension/combine helpers.
 *
 * The engine is a function pointer chosen once, before main(), from CPUID
 * (or the UROCE_CRC32_PATH environment variable). It starts out pointing at
 * the scalar engine (constant-initialized), so a static constructor in another
 * translation unit that runs before ours still gets correct results.
 */
#include <uroce/crc32.h>
#include "crc32_fold_consts.h"
#include "crc32_internal.h"

#include <atomic>
#include <cpuid.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uroce {
namespace {

using crc32_fn = uint32_t (*)(uint32_t, const void *, size_t);
using masked_fn = uint32_t (*)(uint32_t, const uint8_t *, const uint8_t *, size_t);

struct cpu_caps {
    bool clmul;  /* PCLMULQDQ + SSSE3 + SSE4.1 */
    bool avx;    /* AVX with YMM state enabled by the OS (VEX encoding usable) */
    bool vclmul; /* plus AVX2 + VPCLMULQDQ */
};

/* XGETBV(0) without needing target("xsave") on this function. */
uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}

cpu_caps detect_caps() {
    cpu_caps c{false, false, false};
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return c;
    const bool ssse3 = ecx & (1u << 9);
    const bool sse41 = ecx & (1u << 19);
    const bool pclmul = ecx & (1u << 1);
    const bool osxsave = ecx & (1u << 27);
    const bool avx = ecx & (1u << 28);
    c.clmul = pclmul && ssse3 && sse41;
    if (!c.clmul || !osxsave || !avx) return c;
    /* The OS must save XMM (bit 1) and YMM (bit 2) state, else ymm use faults
     * or gets corrupted on context switch. */
    if ((read_xcr0() & 0x6u) != 0x6u) return c;
    c.avx = true;
    if (__get_cpuid_max(0, nullptr) < 7) return c;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const bool avx2 = ebx & (1u << 5);
    const bool vpclmulqdq = ecx & (1u << 10); /* CPUID.(EAX=7,ECX=0):ECX[10] */
    c.vclmul = avx2 && vpclmulqdq;
    return c;
}

const cpu_caps &caps() {
    static const cpu_caps c = detect_caps();
    return c;
}

crc32_fn fn_of(crc32_path p) {
    switch (p) {
    case crc32_path::clmul:
        return caps().avx ? crc32_detail::crc32_update_clmul_vex
                          : crc32_detail::crc32_update_clmul_sse;
    case crc32_path::vclmul:
        return crc32_update_vclmul;
    case crc32_path::scalar:
    default:
        return crc32_update_scalar;
    }
}

masked_fn masked_fn_of(crc32_path p) {
    if (p == crc32_path::scalar) return crc32_detail::crc32_update_masked_scalar;
    return caps().avx ? crc32_detail::crc32_update_masked_clmul_vex
                      : crc32_detail::crc32_update_masked_clmul_sse;
}

/* Constant-initialized: valid even before the constructor below runs. */
std::atomic<crc32_fn> g_fn{crc32_update_scalar};
std::atomic<masked_fn> g_masked_fn{crc32_detail::crc32_update_masked_scalar};
std::atomic<crc32_path> g_path{crc32_path::scalar};

__attribute__((constructor)) void crc32_dispatch_init() {
    crc32_path p = crc32_best_path();
    if (const char *env = std::getenv("UROCE_CRC32_PATH"); env && *env) {
        bool known = false;
        for (crc32_path c : {crc32_path::scalar, crc32_path::clmul, crc32_path::vclmul}) {
            if (std::strcmp(env, crc32_path_name(c)) == 0) {
                known = true;
                if (crc32_path_supported(c))
                    p = c;
                else
                    std::fprintf(stderr,
                                 "uroce: UROCE_CRC32_PATH=%s not supported by this CPU, using %s\n",
                                 env, crc32_path_name(p));
            }
        }
        if (!known)
            std::fprintf(
                stderr,
                "uroce: unknown UROCE_CRC32_PATH=%s (scalar|pclmulqdq|vpclmulqdq-avx2), using %s\n",
                env, crc32_path_name(p));
    }
    crc32_set_path(p);
}

/* Reflected-form multiply mod P: register bit i is the coefficient of x^(31-i). */
constexpr uint32_t mulmod(uint32_t a, uint32_t b) {
    uint32_t r = 0;
    for (int i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i)) /* coefficient of x^i in a */
            r ^= b;
        b = (b >> 1) ^ ((b & 1u) ? crc32_detail::poly_reflected : 0u); /* b *= x */
    }
    return r;
}

struct pow_table {
    uint32_t v[64];
};

/* v[k] = x^(8 * 2^k) mod P, reflected. */
constexpr pow_table make_pow_table() {
    pow_table t{};
    t.v[0] = 0x80000000u >> 8; /* x^8 */
    for (int k = 1; k < 64; k++)
        t.v[k] = mulmod(t.v[k - 1], t.v[k - 1]);
    return t;
}

constexpr pow_table pow2k = make_pow_table();

/* x^(8 len) mod P, reflected. */
uint32_t xpow8n(uint64_t len) {
    uint32_t r = 0x80000000u; /* x^0 */
    for (int k = 0; len; k++, len >>= 1)
        if (len & 1u) r = mulmod(r, pow2k.v[k]);
    return r;
}

} // namespace

uint32_t crc32_update(uint32_t reg, const void *data, size_t len) {
    return g_fn.load(std::memory_order_relaxed)(reg, data, len);
}

bool crc32_path_supported(crc32_path p) {
    switch (p) {
    case crc32_path::scalar:
        return true;
    case crc32_path::clmul:
        return caps().clmul;
    case crc32_path::vclmul:
        return caps().vclmul;
    }
    return false;
}

crc32_path crc32_best_path() {
    if (caps().vclmul) return crc32_path::vclmul;
    if (caps().clmul) return crc32_path::clmul;
    return crc32_path::scalar;
}

crc32_path crc32_active_path() {
    return g_path.load(std::memory_order_relaxed);
}

bool crc32_set_path(crc32_path p) {
    if (!crc32_path_supported(p)) return false;
    g_path.store(p, std::memory_order_relaxed);
    g_fn.store(fn_of(p), std::memory_order_relaxed);
    g_masked_fn.store(masked_fn_of(p), std::memory_order_relaxed);
    return true;
}

const char *crc32_path_name(crc32_path p) {
    switch (p) {
    case crc32_path::scalar:
        return "scalar";
    case crc32_path::clmul:
        return "pclmulqdq";
    case crc32_path::vclmul:
        return "vpclmulqdq-avx2";
    }
    return "unknown";
}

namespace crc32_detail {

bool cpu_has_avx() {
    return caps().avx;
}

uint32_t crc32_update_masked(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n) {
    return g_masked_fn.load(std::memory_order_relaxed)(reg, p, mask, n);
}

uint32_t crc32_update_masked_scalar(uint32_t reg, const uint8_t *p, const uint8_t *mask, size_t n) {
    uint8_t buf[64];
    while (n) {
        const size_t k = n < sizeof(buf) ? n : sizeof(buf);
        for (size_t i = 0; i < k; i++)
            buf[i] = p[i] | mask[i];
        reg = crc32_update_scalar(reg, buf, k);
        p += k;
        mask += k;
        n -= k;
    }
    return reg;
}

} // namespace crc32_detail

uint32_t crc32_zeros(uint32_t reg, uint64_t len) {
    return mulmod(reg, xpow8n(len));
}

uint32_t crc32_ieee_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    /* With J = all ones: reg(A||B) = reg(A) x^(8|B|) + B x^32, and both
     * finals are reg ^ J; the J terms cancel to crc_a x^(8|B|) + crc_b. */
    return mulmod(crc_a, xpow8n(len_b)) ^ crc_b;
}

} // namespace uroce
