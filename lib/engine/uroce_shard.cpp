/* SPDX-License-Identifier: BSD-3-Clause
 * Shards: the inboxes and the fan-out of received frames to their owners.
 */
#include <uroce/shard.h>

#include <cstdio>

#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_ring.h>

namespace uroce {

std::unique_ptr<shard_group> shard_group::create(const std::string &name, unsigned count,
                                                 std::string &err, unsigned ring_size) {
    if (count == 0 || count > max_shards) {
        err = "shards: " + std::to_string(count) + " asked, 1.." + std::to_string(max_shards) +
              " possible";
        return nullptr;
    }
    std::unique_ptr<shard_group> g(new shard_group());
    for (unsigned i = 0; i < count; i++) {
        char ring_name[RTE_RING_NAMESIZE];
        std::snprintf(ring_name, sizeof(ring_name), "%s_sh%u", name.c_str(), i);
        /* Multi-producer: every shard may hand frames to this one; single
         * consumer: only shard i dequeues. */
        rte_ring *r = rte_ring_create(ring_name, ring_size, int(rte_socket_id()), RING_F_SC_DEQ);
        if (!r) {
            err = std::string("shards: cannot create ring ") + ring_name + ": " +
                  rte_strerror(rte_errno);
            return nullptr;
        }
        g->inboxes_.push_back(r);
    }
    return g;
}

shard_group::~shard_group() {
    for (rte_ring *r : inboxes_) {
        void *m = nullptr; /* set by every dequeue that returns 0; GCC cannot always tell */
        while (rte_ring_dequeue(r, &m) == 0)
            rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
        rte_ring_free(r);
    }
}

void shard::rx_burst(rte_mbuf **pkts, uint16_t n) {
    const unsigned count = group_.count();
    while (n > 0) {
        const uint16_t chunk = n < engine::burst ? n : engine::burst;
        rte_mbuf *mine[engine::burst], *theirs[engine::burst];
        uint16_t owner[engine::burst];
        uint16_t n_mine = 0, n_theirs = 0;
        for (uint16_t i = 0; i < chunk; i++) {
            const unsigned o = frame_shard(pkts[i], count, index_);
            if (o == index_) {
                mine[n_mine++] = pkts[i];
            } else {
                owner[n_theirs] = uint16_t(o);
                theirs[n_theirs++] = pkts[i];
            }
        }
        if (n_theirs) hand_over(theirs, owner, n_theirs);
        if (n_mine) eng_.rx_burst(mine, n_mine);
        pkts += chunk;
        n = uint16_t(n - chunk);
    }
}

/* One burst enqueue per destination shard, in arrival order within each. */
void shard::hand_over(rte_mbuf **pkts, const uint16_t *owner, uint16_t n) {
    bool done[engine::burst] = {};
    for (uint16_t i = 0; i < n; i++) {
        if (done[i]) continue;
        const uint16_t dst = owner[i];
        void *batch[engine::burst];
        unsigned k = 0;
        for (uint16_t j = i; j < n; j++)
            if (!done[j] && owner[j] == dst) {
                batch[k++] = pkts[j];
                done[j] = true;
            }
        const unsigned sent = rte_ring_enqueue_burst(group_.inbox(dst), batch, k, nullptr);
        cnt_.fanout_out += sent;
        if (sent < k) {
            /* The owner is behind: drop here, counted, as a full port queue
             * would (the sender retransmits). */
            cnt_.fanout_ring_full += k - sent;
            rte_pktmbuf_free_bulk(reinterpret_cast<rte_mbuf **>(batch + sent), k - sent);
        }
    }
}

unsigned shard::poll() {
    rte_mbuf *in[engine::burst];
    const unsigned n = rte_ring_dequeue_burst(group_.inbox(index_), reinterpret_cast<void **>(in),
                                              engine::burst, nullptr);
    if (n) {
        cnt_.fanout_in += n;
        eng_.rx_burst(in, uint16_t(n));
    }
    return n + eng_.poll();
}

} // namespace uroce
