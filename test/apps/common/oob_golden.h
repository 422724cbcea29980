/* SPDX-License-Identifier: BSD-3-Clause
 * Test helpers for the out-of-band exchanges:
 *  - read a captured TCP exchange, either a tshark "follow,tcp,hex" dump
 *    (test/apps/common/data/oob-*.txt, copied from /work/shared/golden) or
 *    the TCP segments of a pcap (the .pcap files in test/golden), as an ordered list of
 *    chunks (one per segment) tagged client->server or server->client;
 *  - replay one side of such a capture over a socket (a scripted peer),
 *    recording what the other side sends.
 */
#ifndef UROCE_TEST_OOB_GOLDEN_H
#define UROCE_TEST_OOB_GOLDEN_H

#include <cctype>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "pcap_frames.h"
#include "uroce_oob.h"

namespace uroce::test {

struct tcp_chunk {
    bool from_client; /* Node 0 in the dump = the side that connected */
    std::vector<uint8_t> bytes;
};

struct tcp_capture {
    std::vector<tcp_chunk> chunks;
    std::vector<uint8_t> stream(bool from_client) const {
        std::vector<uint8_t> s;
        for (const auto &c : chunks)
            if (c.from_client == from_client) s.insert(s.end(), c.bytes.begin(), c.bytes.end());
        return s;
    }
    std::vector<size_t> sizes(bool from_client) const {
        std::vector<size_t> s;
        for (const auto &c : chunks)
            if (c.from_client == from_client) s.push_back(c.bytes.size());
        return s;
    }
};

inline std::string oob_data_path(const char *name) {
    return std::string(UROCE_OOB_DATA_DIR) + "/" + name;
}

/* tshark -z follow,tcp,hex: "OOOOOOOO  hh hh .. hh  hh .. hh  ascii", lines
 * of the second node indented by a tab. Byte i sits at column 10 + 3*i (+1
 * after the 8th byte). Consecutive lines of one direction whose offsets
 * continue each other belong to one chunk only when the previous line was
 * full (16 bytes); a short line ends a segment. */
inline tcp_capture read_follow_dump(const std::string &path, std::string &err) {
    tcp_capture cap;
    std::ifstream in(path);
    if (!in) {
        err = "cannot open " + path;
        return cap;
    }
    std::string line;
    bool in_data = false;
    bool continuing = false;
    bool last_dir = true;
    auto is_hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
    while (std::getline(in, line)) {
        if (line.rfind("Node 1:", 0) == 0) {
            in_data = true;
            continue;
        }
        if (!in_data) continue;
        if (line.rfind("=====", 0) == 0) break;
        bool server = !line.empty() && line[0] == '\t';
        std::string l = server ? line.substr(1) : line;
        if (l.size() < 12 || !is_hex(l[0])) continue;
        std::vector<uint8_t> bytes;
        for (size_t i = 0; i < 16; ++i) {
            size_t col = 10 + 3 * i + (i >= 8 ? 1 : 0);
            if (col + 1 >= l.size() || !is_hex(l[col]) || !is_hex(l[col + 1])) break;
            bytes.push_back(static_cast<uint8_t>(std::stoi(l.substr(col, 2), nullptr, 16)));
        }
        bool from_client = !server;
        if (continuing && last_dir == from_client && !cap.chunks.empty()) {
            auto &b = cap.chunks.back().bytes;
            b.insert(b.end(), bytes.begin(), bytes.end());
        } else {
            cap.chunks.push_back({from_client, bytes});
        }
        continuing = bytes.size() == 16;
        last_dir = from_client;
    }
    return cap;
}

/* TCP payloads of a pcap to/from `server_port` (IPv4 over Ethernet),
 * retransmissions dropped by sequence number. */
inline tcp_capture read_pcap_tcp(const std::string &path, uint16_t server_port, std::string &err) {
    tcp_capture cap;
    auto frames = read_pcap_frames(path, err);
    std::map<bool, uint32_t> next_seq;
    for (const auto &f : frames) {
        const auto &b = f.bytes;
        size_t off = 14;
        if (b.size() < off) continue;
        uint16_t et = static_cast<uint16_t>(b[12] << 8 | b[13]);
        if (et == 0x8100 && b.size() >= 18) {
            et = static_cast<uint16_t>(b[16] << 8 | b[17]);
            off = 18;
        }
        if (et != 0x0800 || b.size() < off + 20) continue;
        size_t ihl = (b[off] & 0xf) * 4u;
        size_t tot = static_cast<size_t>(b[off + 2] << 8 | b[off + 3]);
        if (b[off + 9] != 6 || b.size() < off + tot) continue;
        size_t t = off + ihl;
        uint16_t sport = static_cast<uint16_t>(b[t] << 8 | b[t + 1]);
        uint16_t dport = static_cast<uint16_t>(b[t + 2] << 8 | b[t + 3]);
        if (sport != server_port && dport != server_port) continue;
        uint32_t seq = static_cast<uint32_t>(b[t + 4]) << 24 |
                       static_cast<uint32_t>(b[t + 5]) << 16 |
                       static_cast<uint32_t>(b[t + 6]) << 8 | b[t + 7];
        size_t thl = (b[t + 12] >> 4) * 4u;
        size_t plen = tot - ihl - thl;
        bool from_client = dport == server_port;
        bool syn = b[t + 13] & 0x02;
        if (syn) {
            next_seq[from_client] = seq + 1;
            continue;
        }
        if (plen == 0) continue;
        if (next_seq.count(from_client) && seq != next_seq[from_client])
            continue; /* retransmission */
        next_seq[from_client] = seq + static_cast<uint32_t>(plen);
        cap.chunks.push_back(
            {from_client, std::vector<uint8_t>(b.begin() + static_cast<long>(t + thl),
                                               b.begin() + static_cast<long>(t + thl + plen))});
    }
    return cap;
}

/* Plays `as_client`'s side of `cap` on `sock`: writes that side's chunks and
 * reads, chunk by chunk, what the other side sends, in capture order. Returns
 * the bytes received from the other side; stops at the first failure. */
inline std::vector<uint8_t> replay(oob::tcp_socket &sock, const tcp_capture &cap, bool as_client,
                                   std::string &err,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::vector<uint8_t> got;
    for (const auto &c : cap.chunks) {
        if (c.from_client == as_client) {
            auto r = sock.write_all(c.bytes, timeout, "replay");
            if (!r) {
                err = r.message();
                return got;
            }
        } else {
            std::vector<uint8_t> buf(c.bytes.size());
            auto r = sock.read_exact(buf, timeout, "replay");
            if (!r) {
                err = r.message();
                return got;
            }
            got.insert(got.end(), buf.begin(), buf.end());
        }
    }
    return got;
}

} // namespace uroce::test

#endif
