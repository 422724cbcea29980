/* SPDX-License-Identifier: BSD-3-Clause
 * The engine over a DPDK port: one iteration of the run-to-completion loop.
 *
 *     while (!stop) ethdev_engine_poll(eng, port);
 *
 * A custom dataplane that owns the port calls eng.rx_burst() with the frames
 * it wants the stack to see and eng.poll() instead. With several shards,
 * lcore i runs  while (!stop) ethdev_shard_poll(shard_i, port);
 */
#ifndef UROCE_ETHDEV_ENGINE_H
#define UROCE_ETHDEV_ENGINE_H

#include "uroce_engine.h"
#include "uroce_ethdev.h"
#include "uroce_shard.h"

namespace uroce {

/* Receive a burst, dispatch it, run the stack's timers and send queues.
 * Returns the frames received plus sent: 0 means the loop was idle. */
static inline unsigned ethdev_engine_poll(engine &eng, ethdev_port &port, uint16_t queue = 0) {
    rte_mbuf *pkts[engine::burst];
    uint16_t n = port.rx_burst(queue, pkts, engine::burst);
    eng.rx_burst(pkts, n);
    return n + eng.poll();
}

/* One iteration of shard sh's loop on its lcore: its RX queue when it has
 * one (without RSS only shard 0 reads the port), the fan-out, its inbox,
 * its engine's progress. Returns 0 when the iteration was idle. */
static inline unsigned ethdev_shard_poll(shard &sh, ethdev_port &port) {
    uint16_t n = 0;
    if (sh.index() < port.rx_queues()) {
        rte_mbuf *pkts[engine::burst];
        n = port.rx_burst(uint16_t(sh.index()), pkts, engine::burst);
        sh.rx_burst(pkts, n);
    }
    return n + sh.poll();
}

} // namespace uroce

#endif
