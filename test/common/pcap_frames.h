/* SPDX-License-Identifier: BSD-3-Clause
 * Test helper: every frame of a capture, read with libpcap.
 */
#ifndef UROCE_TEST_PCAP_FRAMES_H
#define UROCE_TEST_PCAP_FRAMES_H

#include <pcap/pcap.h>

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::test {

struct captured_frame {
    size_t number; /* 1-based, as tshark numbers frames */
    std::vector<uint8_t> bytes;
};

/* Ethernet frames of a pcap/pcapng file; empty with err set when it cannot be read. */
static inline std::vector<captured_frame> read_pcap_frames(const std::string &path,
                                                           std::string &err) {
    std::vector<captured_frame> frames;
    char errbuf[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(path.c_str(), errbuf);
    if (!p) {
        err = errbuf;
        return frames;
    }
    struct pcap_pkthdr *h;
    const u_char *data;
    size_t n = 0;
    while (pcap_next_ex(p, &h, &data) == 1)
        frames.push_back({++n, std::vector<uint8_t>(data, data + h->caplen)});
    pcap_close(p);
    return frames;
}

static inline std::string golden_path(const char *name) {
    return std::string(UROCE_TEST_GOLDEN_DIR) + "/" + name;
}

} // namespace uroce::test

#endif
