/* SPDX-License-Identifier: BSD-3-Clause
 * The driver interface: everything the transport needs from a NIC.
 *
 * The transport knows nothing of any one NIC. A driver (the DPDK ethdev
 * driver, <uroce/ethdev.h>; the in-memory test link, drivers/memlink; a
 * custom dataplane's own port) implements this class, and an engine
 * (<uroce/engine.h>) runs the receive side over it:
 *
 *     n = driver.rx_burst(pkts, 32);   // however the driver receives
 *     eng.rx_burst(pkts, n);           // classified, handed to the device (which frees them)
 *     eng.poll();                      // send queues, timers, ACK flush
 *
 * Contract for tx_burst: the driver takes ownership of the first k mbufs it
 * accepts (returns k) and frees them when sent; the caller keeps the rest
 * (the transport queues them and offers them again on its next flush,
 * producing no more while its queue is full: back-pressure, no drop). Frames are complete Ethernet
 * frames, single- or multi-segment, ICRC included; with caps().ipv4_csum_offload the IPv4 header
 * checksum is left 0 and RTE_MBUF_F_TX_IP_CKSUM set.
 */
#ifndef UROCE_NETDEV_H
#define UROCE_NETDEV_H

#include <uroce/export.h>

#include <cstdint>

struct rte_mbuf;

namespace uroce {

struct netdev_caps {
    uint32_t max_frame_len = 1514;  /* largest frame tx_burst accepts (FCS excluded) */
    bool ipv4_csum_offload = false; /* NIC fills the IPv4 header checksum */
};

class UROCE_API netdev {
  public:
    virtual ~netdev() = default;
    /* Send up to n frames; returns how many the driver took. */
    virtual uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) = 0;
    /* The port's MAC address (6 bytes). */
    virtual const uint8_t *mac() const = 0;
    virtual netdev_caps caps() const = 0;
};

} // namespace uroce

#endif
