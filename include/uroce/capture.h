/* SPDX-License-Identifier: BSD-3-Clause
 * Capture frames to a pcap file (nanosecond timestamps, Ethernet), readable
 * by Wireshark, tshark and uroce-dump: what every app's --pcap writes.
 */
#ifndef UROCE_PCAP_WRITER_H
#define UROCE_PCAP_WRITER_H

#include <uroce/export.h>

#include <cstdint>
#include <memory>
#include <string>

struct rte_mbuf;

namespace uroce {

class pcap_writer {
  public:
    /* nullptr with err set when the file cannot be created. */
    UROCE_API static std::unique_ptr<pcap_writer> open(const std::string &path, std::string &err,
                                                       uint32_t snaplen = 65535);
    UROCE_API ~pcap_writer();
    pcap_writer(const pcap_writer &) = delete;
    pcap_writer &operator=(const pcap_writer &) = delete;

    /* One frame, from a contiguous buffer or an mbuf chain (segments are
     * gathered; the mbuf is not modified). Time is the wall clock. */
    UROCE_API void write(const void *frame, uint32_t len);
    UROCE_API void write(const rte_mbuf *m);
    void write_burst(rte_mbuf *const *pkts, uint16_t n) {
        for (uint16_t i = 0; i < n; i++)
            write(pkts[i]);
    }
    /* The same, stamped ts_ns (nanoseconds since the epoch of the caller's
     * clock) instead of the wall clock: a run on simulated time (a manual
     * clock) records its own time, so its graphs mean something. */
    UROCE_API void write_at(uint64_t ts_ns, const rte_mbuf *m);
    void write_burst_at(uint64_t ts_ns, rte_mbuf *const *pkts, uint16_t n) {
        for (uint16_t i = 0; i < n; i++)
            write_at(ts_ns, pkts[i]);
    }
    UROCE_API void flush();
    uint64_t frames() const { return frames_; }
    uint64_t truncated() const { return truncated_; }

  private:
    pcap_writer() = default;
    void dump(const void *bytes, uint32_t caplen, uint32_t len, uint64_t ts_ns);
    struct state;
    std::unique_ptr<state> st_;
    uint32_t snaplen_ = 65535;
    uint64_t frames_ = 0;
    uint64_t truncated_ = 0;
};

} // namespace uroce

#endif
