/* SPDX-License-Identifier: BSD-3-Clause
 * uroce: CRC-32 run-time dispatch, and the zero-extension/combine helpers.
 *
 * The engine is a function pointer chosen once, before main(), from CPUID
 * (or the UROCE_CRC32_PATH environment variable). It starts out pointing at
 * the scalar engine (constant-initialized), so a static constructor in another
 * translation unit that runs before ours still gets correct results.
 *
 * DPDK's max SIMD bitwidth gates the 512-bit engine, but EAL is not up when
 * our constructor runs (the limit reads 0 then). So while the limit is
 * unknown, the pointer for vpclmulqdq-avx512 is a probe: calls too short for
 * zmm code go straight to the engine; a longer one first reads the limit
 * and, once EAL has set it, re-runs the choice (crc32_refresh_path) and drops
 * the probe. After that there is no per-call cost (doc/icrc.md, "Dispatch").
 */
#include <uroce/crc32.h>
#include <uroce/icrc.h>
#include "crc32_fold_consts.h"
#include "crc32_internal.h"

#include <atomic>
#include <tuple>
#include <cpuid.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

/* DPDK 22.11 <rte_vect.h>: experimental, and declared without extern "C" (a
 * C++ caller would look for a mangled name), so declared here. */
extern "C" uint16_t rte_vect_get_max_simd_bitwidth(void);

namespace uroce {
namespace {

using crc32_fn = uint32_t (*)(uint32_t, const void *, size_t);
using masked_fn = uint32_t (*)(uint32_t, const uint8_t *, const uint8_t *, size_t);
using copy_fn = uint32_t (*)(uint32_t, void *, const void *, size_t);
using place_fn = uint32_t (*)(uint32_t, const void *, void *, const void *, size_t);

constexpr crc32_path all_paths[] = {crc32_path::scalar, crc32_path::clmul, crc32_path::vclmul,
                                    crc32_path::vclmul512};

struct cpu_caps {
    bool clmul;     /* PCLMULQDQ + SSSE3 + SSE4.1 */
    bool avx;       /* AVX with YMM state enabled by the OS (VEX encoding usable) */
    bool vclmul;    /* plus AVX2 + VPCLMULQDQ */
    bool vclmul512; /* plus AVX-512F/BW/VL/VBMI with opmask and ZMM state enabled by the OS */
};

/* XGETBV(0) without needing target("xsave") on this function. */
uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}

cpu_caps detect_caps() {
    cpu_caps c{false, false, false, false};
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
    const uint64_t xcr0 = read_xcr0();
    if ((xcr0 & 0x6u) != 0x6u) return c;
    c.avx = true;
    if (__get_cpuid_max(0, nullptr) < 7) return c;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const bool avx2 = ebx & (1u << 5);
    const bool vpclmulqdq = ecx & (1u << 10); /* CPUID.(EAX=7,ECX=0):ECX[10] */
    c.vclmul = avx2 && vpclmulqdq;
    /* CPUID.(EAX=7,ECX=0):EBX[16] AVX512F, [30] AVX512BW, [31] AVX512VL,
     * ECX[1] AVX512_VBMI (VPERMB; every CPU with 512-bit VPCLMULQDQ has it:
     * Ice Lake and later, Zen 4 and later); and XCR0 bits 5..7: opmask,
     * upper halves of zmm0-15, zmm16-31. */
    const bool avx512 =
        (ebx & (1u << 16)) && (ebx & (1u << 30)) && (ebx & (1u << 31)) && (ecx & (1u << 1));
    c.vclmul512 = c.vclmul && avx512 && (xcr0 & 0xE6u) == 0xE6u;
    return c;
}

const cpu_caps &caps() {
    static const cpu_caps c = detect_caps();
    return c;
}

/* DPDK's max SIMD bitwidth: 0 until rte_eal_init has set it (it needs no
 * initialised EAL to be read: a field of a static struct). */
unsigned simd_limit() {
    return rte_vect_get_max_simd_bitwidth();
}

bool zmm_allowed(unsigned limit) {
    return limit == 0 || limit >= 512; /* RTE_VECT_SIMD_512 */
}

bool supported_under(crc32_path p, unsigned limit) {
    switch (p) {
    case crc32_path::scalar:
        return true;
    case crc32_path::clmul:
        return caps().clmul;
    case crc32_path::vclmul:
        return caps().vclmul;
    case crc32_path::vclmul512:
        return caps().vclmul512 && zmm_allowed(limit);
    }
    return false;
}

crc32_path best_under(unsigned limit) {
    for (crc32_path p : {crc32_path::vclmul512, crc32_path::vclmul, crc32_path::clmul})
        if (supported_under(p, limit)) return p;
    return crc32_path::scalar;
}

/* One operation's engines, one per path (the 128-bit one in its SSE and
 * VEX encodings), and the zmm engine's stand-in while DPDK's limit is
 * unknown (zmm_probe below). crc32_update, crc32_copy_update and
 * crc32_update_place each have one, chosen alike. */
template <class Fn> struct engine_set {
    Fn scalar, clmul_sse, clmul_vex, vclmul, vclmul512, vclmul512_probe;
};

template <class Fn> Fn choose(const engine_set<Fn> &e, crc32_path p, unsigned limit) {
    switch (p) {
    case crc32_path::clmul:
        return caps().avx ? e.clmul_vex : e.clmul_sse;
    case crc32_path::vclmul:
        return e.vclmul;
    case crc32_path::vclmul512:
        return limit ? e.vclmul512 : e.vclmul512_probe;
    case crc32_path::scalar:
    default:
        return e.scalar;
    }
}

/* vpclmulqdq-avx512 while DPDK's limit is unknown (see the top of the
 * file): a call too short for zmm code goes to the 256-bit engine; a longer
 * one reads the limit, and once EAL has set it, re-runs the choice and
 * calls the operation again through its new pointer. The length is the
 * operation's last argument. */
template <auto Ymm, auto Zmm, auto Dispatched> struct zmm_probe;
template <class... Args, uint32_t (*Ymm)(uint32_t, Args...), uint32_t (*Zmm)(uint32_t, Args...),
          uint32_t (*Dispatched)(uint32_t, Args...)>
struct zmm_probe<Ymm, Zmm, Dispatched> {
    static uint32_t call(uint32_t reg, Args... args) {
        const size_t len = std::get<sizeof...(Args) - 1>(std::forward_as_tuple(args...));
        if (len < crc32_detail::crc32_zmm_min) return Ymm(reg, args...);
        if (simd_limit() != 0) [[unlikely]] {
            crc32_refresh_path();
            return Dispatched(reg, args...);
        }
        return Zmm(reg, args...);
    }
};

constexpr engine_set<crc32_fn> update_engines{
    crc32_update_scalar,
    crc32_detail::crc32_update_clmul_sse,
    crc32_detail::crc32_update_clmul_vex,
    crc32_update_vclmul,
    crc32_update_vclmul512,
    zmm_probe<crc32_update_vclmul, crc32_update_vclmul512, crc32_update>::call};

constexpr engine_set<copy_fn> copy_engines{
    crc32_copy_update_scalar,
    crc32_detail::crc32_copy_update_clmul_sse,
    crc32_detail::crc32_copy_update_clmul_vex,
    crc32_copy_update_vclmul,
    crc32_copy_update_vclmul512,
    zmm_probe<crc32_copy_update_vclmul, crc32_copy_update_vclmul512, crc32_copy_update>::call};

constexpr engine_set<place_fn> place_engines{
    crc32_update_place_scalar,
    crc32_detail::crc32_update_place_clmul_sse,
    crc32_detail::crc32_update_place_clmul_vex,
    crc32_update_place_vclmul,
    crc32_update_place_vclmul512,
    zmm_probe<crc32_update_place_vclmul, crc32_update_place_vclmul512, crc32_update_place>::call};

masked_fn masked_fn_of(crc32_path p, unsigned limit) {
    /* The ICRC's masked calls are at most 256 bytes: the 128-bit short form
     * (from 96 bytes the 256-bit one where VPCLMULQDQ is), or with zmm the
     * direct form (doc/icrc.md). While the limit is unknown the zmm form is
     * not used: the probe only sees crc32_update calls. */
    if (p == crc32_path::scalar) return crc32_detail::crc32_update_masked_scalar;
    if (p == crc32_path::vclmul512 && limit) return crc32_detail::crc32_update_masked_vclmul512;
    if (p == crc32_path::vclmul || p == crc32_path::vclmul512)
        return crc32_detail::crc32_update_masked_vclmul;
    return caps().avx ? crc32_detail::crc32_update_masked_clmul_vex
                      : crc32_detail::crc32_update_masked_clmul_sse;
}

/* The ICRC's header call follows the masked update's choice. */
crc32_detail::icrc_masked_fn icrc_masked_fn_of(crc32_path p, unsigned limit) {
    if (p == crc32_path::scalar) return crc32_detail::icrc_masked_scalar;
    if (p == crc32_path::vclmul512 && limit) return crc32_detail::icrc_masked_vclmul512;
    if (p == crc32_path::vclmul || p == crc32_path::vclmul512)
        return crc32_detail::icrc_masked_vclmul;
    return caps().avx ? crc32_detail::icrc_masked_clmul_vex : crc32_detail::icrc_masked_clmul_sse;
}

/* Constant-initialized: valid even before the constructor below runs. */
std::atomic<crc32_fn> g_fn{crc32_update_scalar};
std::atomic<masked_fn> g_masked_fn{crc32_detail::crc32_update_masked_scalar};
std::atomic<copy_fn> g_copy_fn{crc32_copy_update_scalar};
std::atomic<place_fn> g_place_fn{crc32_update_place_scalar};
std::atomic<crc32_path> g_path{crc32_path::scalar};
/* The path asked for (UROCE_CRC32_PATH or crc32_set_path), if any: what
 * crc32_refresh_path() goes back to when the limit allows it again. */
std::atomic<bool> g_forced{false};
std::atomic<crc32_path> g_requested{crc32_path::scalar};

void install(crc32_path p, unsigned limit) {
    g_path.store(p, std::memory_order_relaxed);
    g_fn.store(choose(update_engines, p, limit), std::memory_order_relaxed);
    g_masked_fn.store(masked_fn_of(p, limit), std::memory_order_relaxed);
    crc32_detail::g_icrc_masked_fn.store(icrc_masked_fn_of(p, limit), std::memory_order_relaxed);
    g_copy_fn.store(choose(copy_engines, p, limit), std::memory_order_relaxed);
    g_place_fn.store(choose(place_engines, p, limit), std::memory_order_relaxed);
}

__attribute__((constructor)) void crc32_dispatch_init() {
    const unsigned limit = simd_limit();
    crc32_path p = best_under(limit);
    bool forced = false;
    if (const char *env = std::getenv("UROCE_CRC32_PATH"); env && *env) {
        bool known = false;
        for (crc32_path c : all_paths) {
            if (std::strcmp(env, crc32_path_name(c)) == 0) {
                known = true;
                if (supported_under(c, limit)) {
                    p = c;
                    forced = true;
                } else {
                    std::fprintf(stderr,
                                 "uroce: UROCE_CRC32_PATH=%s not supported by this CPU, using %s\n",
                                 env, crc32_path_name(p));
                }
            }
        }
        if (!known)
            std::fprintf(stderr,
                         "uroce: unknown UROCE_CRC32_PATH=%s "
                         "(scalar|pclmulqdq|vpclmulqdq-avx2|vpclmulqdq-avx512), using %s\n",
                         env, crc32_path_name(p));
    }
    g_requested.store(p, std::memory_order_relaxed);
    g_forced.store(forced, std::memory_order_relaxed);
    install(p, limit);
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

uint32_t crc32_copy_update(uint32_t reg, void *dst, const void *src, size_t len) {
    return g_copy_fn.load(std::memory_order_relaxed)(reg, dst, src, len);
}

uint32_t crc32_update_place(uint32_t reg, const void *data, void *dst, const void *src,
                            size_t len) {
    return g_place_fn.load(std::memory_order_relaxed)(reg, data, dst, src, len);
}

bool crc32_path_supported(crc32_path p) {
    return supported_under(p, simd_limit());
}

crc32_path crc32_best_path() {
    return best_under(simd_limit());
}

crc32_path crc32_active_path() {
    return g_path.load(std::memory_order_relaxed);
}

bool crc32_set_path(crc32_path p) {
    const unsigned limit = simd_limit();
    if (!supported_under(p, limit)) return false;
    g_requested.store(p, std::memory_order_relaxed);
    g_forced.store(true, std::memory_order_relaxed);
    install(p, limit);
    return true;
}

crc32_path crc32_refresh_path() {
    const unsigned limit = simd_limit();
    crc32_path p = best_under(limit);
    if (g_forced.load(std::memory_order_relaxed)) {
        const crc32_path want = g_requested.load(std::memory_order_relaxed);
        if (supported_under(want, limit))
            p = want;
        else if (g_path.load(std::memory_order_relaxed) == want)
            std::fprintf(stderr,
                         "uroce: crc32 path %s not allowed (DPDK max SIMD bitwidth %u), "
                         "using %s\n",
                         crc32_path_name(want), limit, crc32_path_name(p));
    }
    install(p, limit);
    return p;
}

const char *crc32_path_name(crc32_path p) {
    switch (p) {
    case crc32_path::scalar:
        return "scalar";
    case crc32_path::clmul:
        return "pclmulqdq";
    case crc32_path::vclmul:
        return "vpclmulqdq-avx2";
    case crc32_path::vclmul512:
        return "vpclmulqdq-avx512";
    }
    return "unknown";
}

namespace crc32_detail {

/* Constant-initialized like the others (defined outside the anonymous
 * namespace: uroce_icrc.cpp loads it inline). */
std::atomic<icrc_masked_fn> g_icrc_masked_fn{icrc_masked_scalar};

uint32_t icrc_masked_scalar(const uint8_t *p, const uint8_t *mask, size_t n) {
    return crc32_update_masked_scalar(icrc_seed, p, mask, n);
}

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
