/* SPDX-License-Identifier: BSD-3-Clause
 * The poll-mode engine: run to completion on one lcore.
 *
 *   frames in  --rx_burst()-->  classify  --RoCEv2-->  transport (device)
 *                                         --ARP/ICMP/ICMPv6/ND--> neighbours
 *                                         --anything else--> counted, freed
 *   poll():  transport progress (send queues, timers, ACKs), neighbour timers
 *   frames out: every frame the transport or the neighbour code sends goes
 *   through the engine's own tx_burst (it is the transport's netdev), which
 *   captures it (--pcap) and hands it to the real port.
 *
 * It knows no NIC: its input is whatever the owner hands to rx_burst() and
 * its output a netdev. <uroce/ethdev.h> runs it over a DPDK port
 * (ethdev_engine_poll); a custom dataplane calls rx_burst() and poll() from
 * its own loop and gives its own netdev for output.
 */
#ifndef UROCE_ENGINE_H
#define UROCE_ENGINE_H

#include <uroce/export.h>

#include <cstdint>

#include <rte_mbuf.h>

#include <uroce/hdr.h>
#include <uroce/netdev.h>

namespace uroce {

class device;
class neigh;
class pcap_writer;

/* Where a received frame goes. */
enum class frame_class : uint8_t {
    roce,      /* UDP to port 4791 over IPv4/IPv6 */
    neighbour, /* ARP, ICMP, ICMPv6 (echo, NS/NA) */
    runt,      /* too short for the headers it announces */
    not_ip,    /* neither IPv4, IPv6 nor ARP */
    not_udp,   /* IP, but TCP or another protocol we do not serve */
    other_udp, /* UDP to another port */
    count
};

UROCE_API const char *frame_class_name(frame_class c);

/* Looks at just enough of the first segment to route the frame; full
 * validation is the parser's job (the transport counts its errors). For
 * RoCEv2 frames udp_off is the UDP header's offset (the BTH follows it). */
static inline frame_class classify_frame(const rte_mbuf *m, uint32_t &udp_off) {
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    const uint32_t len = m->data_len;
    if (len < sizeof(eth_hdr)) return frame_class::runt;
    uint32_t off = sizeof(eth_hdr);
    uint16_t type = reinterpret_cast<const eth_hdr *>(p)->ether_type();
    for (int tags = 0; (type == ether_type_vlan || type == ether_type_qinq) && tags < 2; tags++) {
        if (len < off + sizeof(vlan_hdr)) return frame_class::runt;
        type = reinterpret_cast<const vlan_hdr *>(p + off)->ether_type();
        off += sizeof(vlan_hdr);
    }
    uint8_t proto;
    if (type == ether_type_ipv4) {
        if (len < off + sizeof(ipv4_hdr)) return frame_class::runt;
        const auto *ip = reinterpret_cast<const ipv4_hdr *>(p + off);
        proto = ip->protocol;
        off += uint32_t(ip->header_length());
        if (proto == 1) return frame_class::neighbour; /* ICMP */
    } else if (type == ether_type_ipv6) {
        if (len < off + sizeof(ipv6_hdr)) return frame_class::runt;
        proto = reinterpret_cast<const ipv6_hdr *>(p + off)->next_header;
        off += sizeof(ipv6_hdr);
        if (proto == 58) return frame_class::neighbour; /* ICMPv6, including ND */
    } else if (type == ether_type_arp) {
        return frame_class::neighbour;
    } else {
        return frame_class::not_ip;
    }
    if (proto != ip_proto_udp) return frame_class::not_udp;
    if (len < off + sizeof(udp_hdr)) return frame_class::runt;
    udp_off = off;
    return reinterpret_cast<const udp_hdr *>(p + off)->dst_port() == rocev2_udp_port
               ? frame_class::roce
               : frame_class::other_udp;
}

static inline frame_class classify_frame(const rte_mbuf *m) {
    uint32_t udp_off;
    return classify_frame(m, udp_off);
}

struct engine_counters {
    uint64_t rx_frames = 0;
    uint64_t rx_by_class[size_t(frame_class::count)] = {};
    uint64_t tx_frames = 0;
    uint64_t tx_bytes = 0;
    uint64_t tx_port_full = 0; /* neighbour replies the port did not take (freed) */
    uint64_t polls = 0;
    uint64_t idle_polls = 0; /* polls with no frame received or sent since the one before */
};

/* Something more the loop drives, after the neighbours and before the
 * transport's progress (so what it posts leaves in the same iteration):
 * the CM on QP1 (<uroce/cm.h>) hooks in here, so the engine needs no
 * knowledge of it. Runs on the engine's thread. */
class UROCE_API engine_poller {
  public:
    virtual ~engine_poller() = default;
    /* Returns how much work it did (0 when idle). */
    virtual unsigned poll(uint64_t now_ns) = 0;
};

/* Exported whole: a user constructs and destroys it, so its vtable is theirs too. */
class UROCE_API engine final : public netdev {
  public:
    static constexpr uint16_t burst = 32;

    /* out: where frames go (the port); capture: optional --pcap writer. */
    explicit engine(netdev &out, pcap_writer *capture = nullptr);

    /* The transport and the neighbour code it drives; the device must have
     * been opened with this engine as its netdev (device_config::dev). */
    void attach(device *dev, neigh *nb) {
        dev_ = dev;
        neigh_ = nb;
    }

    /* Add or remove a poller (at most max_pollers); false when full or not found. */
    static constexpr unsigned max_pollers = 4;
    bool add_poller(engine_poller *p) {
        if (n_pollers_ == max_pollers) return false;
        pollers_[n_pollers_++] = p;
        return true;
    }
    bool remove_poller(engine_poller *p) {
        for (unsigned i = 0; i < n_pollers_; i++)
            if (pollers_[i] == p) {
                pollers_[i] = pollers_[--n_pollers_];
                return true;
            }
        return false;
    }

    /* Hand received frames in; every mbuf is consumed. */
    void rx_burst(rte_mbuf **pkts, uint16_t n);
    /* Progress without input; returns the frames sent since the last call. */
    unsigned poll();

    /* netdev: frames from the transport (and neighbour replies) go out here. */
    uint16_t tx_burst(rte_mbuf **pkts, uint16_t n) override;
    const uint8_t *mac() const override { return out_.mac(); }
    netdev_caps caps() const override { return out_.caps(); }

    const engine_counters &counters() const { return cnt_; }
    device *dev() const { return dev_; }
    neigh *neighbours() const { return neigh_; }
    uint64_t now_ns() const;

  private:
    netdev &out_;
    pcap_writer *capture_;
    device *dev_ = nullptr;
    neigh *neigh_ = nullptr;
    engine_counters cnt_;
    /* Since the last poll(): frames sent, and frames received (for
     * idle_polls); two halves of one word, the size the field always had. */
    uint32_t sent_since_poll_ = 0;
    uint32_t rx_since_poll_ = 0;
    engine_poller *pollers_[max_pollers] = {};
    unsigned n_pollers_ = 0;
};

} // namespace uroce

#endif
