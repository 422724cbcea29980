/* SPDX-License-Identifier: BSD-3-Clause
 * Per-QP state on transparent huge pages (why: uroce_hugemem.h).
 */
#include "uroce_hugemem.h"

#include <array>
#include <bit>
#include <cstdlib>
#include <mutex>

#include <sys/mman.h>

#include "uroce_env.h"

#if defined(__SANITIZE_ADDRESS__)
#define UROCE_HUGEMEM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UROCE_HUGEMEM_HEAP 1
#endif
#endif

namespace uroce {

namespace {

constexpr size_t huge_page = size_t(2) << 20;
constexpr size_t small_page = 4096;
constexpr unsigned min_class_log2 = 6;  /* 64 B: hugemem_align */
constexpr unsigned max_class_log2 = 18; /* 256 KiB: eight to a chunk at least */
constexpr unsigned n_classes = max_class_log2 - min_class_log2 + 1;
static_assert((size_t(1) << min_class_log2) == hugemem_align);

constexpr size_t round_up(size_t n, size_t to) {
    return (n + to - 1) & ~(to - 1);
}

/* The size class of a block of bytes (at most the largest class). */
constexpr unsigned class_of(size_t bytes) {
    const unsigned log2 = unsigned(std::bit_width(bytes <= 1 ? size_t(0) : bytes - 1));
    return log2 <= min_class_log2 ? 0 : log2 - min_class_log2;
}
static_assert(class_of(1) == 0 && class_of(64) == 0 && class_of(65) == 1 && class_of(3200) == 6 &&
              class_of(size_t(1) << max_class_log2) == n_classes - 1);

constexpr size_t class_bytes(unsigned c) {
    return size_t(1) << (c + min_class_log2);
}

/* UROCE_HUGEMEM=0 leaves the chunks on 4 KiB pages: in a guest whose
 * host maps its memory with small pages (a shadow-paged guest, where the
 * whole heap on huge pages measured slower) they buy nothing. */
bool huge_pages_wanted() {
    static const bool wanted = env_switch("UROCE_HUGEMEM").value_or(true);
    return wanted;
}

/* A mapping of len bytes (a multiple of 4 KiB) that starts on a huge page
 * and is marked for huge pages, or nullptr. mmap aligns to 4 KiB only, so
 * map one huge page more and cut off what is outside the aligned part. A
 * length that is not a multiple of 2 MiB ends on 4 KiB pages: the kernel
 * puts no huge page past the mapping's end, so nothing is faulted in that
 * the block does not touch. */
void *map_huge_aligned(size_t len) {
    const size_t over = len + huge_page;
    void *raw = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up(start, huge_page);
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + over;
    if (end > aligned + len) munmap(reinterpret_cast<void *>(aligned + len), end - aligned - len);
    void *p = reinterpret_cast<void *>(aligned);
    /* A hint: without transparent huge pages the kernel says EINVAL and the
     * chunk stays on 4 KiB pages, which work the same, only slower. */
    if (huge_pages_wanted()) madvise(p, len, MADV_HUGEPAGE);
    return p;
}

struct free_block {
    free_block *next;
};

class arena {
  public:
    void *alloc(size_t bytes) {
        std::lock_guard lock(mu_);
        if (bytes > class_bytes(n_classes - 1)) return alloc_large(bytes);
        const unsigned c = class_of(bytes);
        void *p = free_[c];
        if (p)
            free_[c] = free_[c]->next;
        else
            p = carve(class_bytes(c)); /* throws with nothing counted */
        stats_.in_use_bytes += class_bytes(c);
        return p;
    }

    void free(void *p, size_t bytes) noexcept {
        if (!p) return;
        std::lock_guard lock(mu_);
        if (bytes > class_bytes(n_classes - 1)) {
            const size_t len = round_up(bytes, small_page);
            munmap(p, len);
            stats_.large_bytes -= len;
            stats_.in_use_bytes -= len;
            return;
        }
        const unsigned c = class_of(bytes);
        stats_.in_use_bytes -= class_bytes(c);
        push(c, p);
    }

    hugemem_stats stats() {
        std::lock_guard lock(mu_);
        return stats_;
    }

  private:
    void *alloc_large(size_t bytes) {
        /* no mapping is that long, and rounding it up would wrap */
        if (bytes > (SIZE_MAX >> 1)) throw std::bad_alloc();
        const size_t len = round_up(bytes, small_page);
        void *p = map_huge_aligned(len);
        if (!p) throw std::bad_alloc();
        stats_.large_bytes += len;
        stats_.in_use_bytes += len;
        return p;
    }

    /* sz bytes from the current chunk, or from a new one. */
    void *carve(size_t sz) {
        if (chunk_left_ < sz) {
            /* What is left of the chunk goes to the free lists, largest
             * class first (every offset in it is a multiple of 64). */
            give_back_tail();
            void *chunk = map_huge_aligned(huge_page);
            if (!chunk) throw std::bad_alloc();
            stats_.chunk_bytes += huge_page;
            chunk_next_ = static_cast<uint8_t *>(chunk);
            chunk_left_ = huge_page;
        }
        void *p = chunk_next_;
        chunk_next_ += sz;
        chunk_left_ -= sz;
        return p;
    }

    void push(unsigned c, void *p) {
        free_block *b = static_cast<free_block *>(p);
        b->next = free_[c];
        free_[c] = b;
    }

    /* The rest of the current chunk, cut into the largest classes that fit:
     * a multiple of 64 bytes, so nothing is lost. */
    void give_back_tail() {
        for (unsigned c = n_classes; c-- > 0 && chunk_left_;) {
            while (chunk_left_ >= class_bytes(c)) {
                push(c, chunk_next_);
                chunk_next_ += class_bytes(c);
                chunk_left_ -= class_bytes(c);
            }
        }
    }

    std::mutex mu_;
    std::array<free_block *, n_classes> free_{};
    uint8_t *chunk_next_ = nullptr;
    size_t chunk_left_ = 0;
    hugemem_stats stats_;
};

#ifndef UROCE_HUGEMEM_HEAP
/* One arena for the process: a block may be freed by another device's
 * thread than the one that made it (a QP destroyed from the control
 * thread), and the chunks outlive every device. Never destroyed, so that a
 * QP freed during static destruction still finds it. */
arena &the_arena() {
    static arena *a = new arena;
    return *a;
}
#endif

} // namespace

#ifdef UROCE_HUGEMEM_HEAP
void *hugemem_alloc(size_t bytes) {
    return ::operator new (bytes ? bytes : 1, std::align_val_t{hugemem_align});
}

void hugemem_free(void *p, size_t) noexcept {
    ::operator delete (p, std::align_val_t{hugemem_align});
}

hugemem_stats hugemem_get_stats() {
    hugemem_stats s;
    s.sanitizer_heap = true;
    return s;
}
#else
void *hugemem_alloc(size_t bytes) {
    return the_arena().alloc(bytes);
}

void hugemem_free(void *p, size_t bytes) noexcept {
    the_arena().free(p, bytes);
}

hugemem_stats hugemem_get_stats() {
    return the_arena().stats();
}
#endif

} // namespace uroce
