/* SPDX-License-Identifier: BSD-3-Clause
 * Memory for the transport's per-QP state on transparent huge pages: the
 * QPs themselves, their send and receive rings and responder resources, and
 * the CQ rings.
 *
 * Why: every packet reads its QP's lines, one of its send or receive WQEs
 * and often its CQ's ring. With thousands of QPs those are tens of
 * thousands of distinct 4 KiB pages (a QP alone is most of one), far past
 * the second-level TLB (1.5-3 K entries), so every QP's first access also
 * paid a page walk; in a guest with nested paging a walk is up to 24
 * memory references. On 2 MiB pages the state of 8192 QPs spans a few
 * hundred pages, which the TLB holds: 4096 QPs +8-11% on an Intel Xeon
 * guest (doc/performance.md, "Twelfth pass").
 *
 * The memory comes from 2 MiB-aligned chunks of the process's own anonymous
 * mappings, marked MADV_HUGEPAGE, so the kernel backs them with huge pages
 * whenever transparent huge pages are "always" or "madvise" (Debian's
 * default) and a huge page is free, and with 4 KiB pages otherwise: nothing
 * to reserve, no hugetlbfs, no EAL. Blocks are carved in power-of-two size
 * classes (64 B to 256 KiB) and kept on a free list per class when freed;
 * larger blocks are mappings of their own. Control path only (QP and CQ
 * creation, resize, destruction): one mutex, never taken per packet.
 * UROCE_HUGEMEM=0 in the environment keeps the chunks on 4 KiB pages.
 *
 * Under AddressSanitizer every block is an ordinary heap allocation, so
 * that overflows and uses after free of the rings are still caught.
 */
#ifndef UROCE_HUGEMEM_H
#define UROCE_HUGEMEM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace uroce {

/* Alignment of every block: a cache line. */
inline constexpr size_t hugemem_align = 64;

/* bytes of memory aligned to hugemem_align, not initialized; throws
 * std::bad_alloc when the system has none (or bytes is beyond any mapping). */
void *hugemem_alloc(size_t bytes);
/* Gives back a block from hugemem_alloc(bytes), with the same bytes. */
void hugemem_free(void *p, size_t bytes) noexcept;

/* What the allocator holds, for tests and the memory figures. */
struct hugemem_stats {
    size_t chunk_bytes = 0;      /* 2 MiB chunks mapped (never unmapped) */
    size_t large_bytes = 0;      /* blocks above the largest class: mappings of their own */
    size_t in_use_bytes = 0;     /* blocks handed out and not freed, as rounded up */
    bool sanitizer_heap = false; /* built with ASan: blocks come from the heap */
};
hugemem_stats hugemem_get_stats();

/* An array of n value-initialized T in hugemem, owned like unique_ptr<T[]>. */
template <class T> struct hugemem_delete {
    size_t n = 0;
    void operator()(T *p) const noexcept {
        std::destroy_n(p, n);
        hugemem_free(p, n * sizeof(T));
    }
};
template <class T> using hugemem_array = std::unique_ptr<T[], hugemem_delete<T>>;

template <class T> hugemem_array<T> make_hugemem_array(size_t n) {
    static_assert(alignof(T) <= hugemem_align);
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length(); /* as new T[n] */
    T *p = static_cast<T *>(hugemem_alloc(n * sizeof(T)));
    try {
        std::uninitialized_value_construct_n(p, n);
    } catch (...) {
        hugemem_free(p, n * sizeof(T));
        throw;
    }
    return hugemem_array<T>(p, hugemem_delete<T>{n});
}

/* Class-level operator new/delete for a struct that lives in hugemem:
 * std::make_unique<T>() and delete then use it unchanged. */
#define UROCE_HUGEMEM_OPERATORS(T)                                                                 \
    static void *operator new(size_t bytes) {                                                      \
        return ::uroce::hugemem_alloc(bytes);                                                      \
    }                                                                                              \
    static void *operator new(size_t bytes, std::align_val_t) {                                    \
        static_assert(alignof(T) <= ::uroce::hugemem_align);                                       \
        return ::uroce::hugemem_alloc(bytes);                                                      \
    }                                                                                              \
    static void operator delete(void *p, size_t bytes) noexcept {                                  \
        ::uroce::hugemem_free(p, bytes);                                                           \
    }                                                                                              \
    static void operator delete(void *p, size_t bytes, std::align_val_t) noexcept {                \
        ::uroce::hugemem_free(p, bytes);                                                           \
    }

} // namespace uroce

#endif
