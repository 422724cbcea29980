/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --check: error counts, and the L2 address consistency check.
 *
 * The ICRC cannot see the Ethernet header (RoCEv2 covers IP onwards), and a
 * capture has no FCS, so a corrupt MAC address leaves a packet that parses
 * and verifies. What gives it away is the rest of the capture: one IP
 * address reached through one MAC address in every other frame. A RoCE
 * packet whose source or destination MAC disagrees with the MAC its IP
 * address shows in at least ten times as many frames is reported as
 * l2-addr-mismatch (group MACs included: a flipped I/G bit is damage too;
 * a multicast IP maps to one multicast MAC, so it stays consistent). Captures where that is
 * legitimate (an address moving between hosts, merged captures) can use --lenient.
 */
#ifndef UROCE_DUMP_CHECK_H
#define UROCE_DUMP_CHECK_H

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dump_analyze.h"

namespace uroce::dump {

struct flagged_frame {
    uint64_t number;
    std::string error;
    std::string detail;
};

class check_summary {
  public:
    /* How many offending frame numbers each error keeps for the summary. */
    static constexpr size_t max_examples = 8;

    explicit check_summary(bool l2_check) : l2_check_(l2_check) {}

    void add(const frame_report &r);
    /* End of capture: runs the L2 consistency check; returns what it flagged. */
    std::vector<flagged_frame> finish();

    bool failed() const { return bad_ > 0; }
    uint64_t bad() const { return bad_; }
    uint64_t count(const std::string &error) const;
    /* "check: ..." summary lines. */
    std::string format() const;

  private:
    struct error_count {
        uint64_t count = 0;
        std::vector<uint64_t> examples;
    };
    struct mac_use {
        uint64_t frames = 0;               /* all frames using this (IP, MAC) */
        std::vector<uint64_t> roce_frames; /* good RoCE frames using it (first few) */
        uint64_t roce_count = 0;
    };
    using ip_key = std::pair<uint8_t, std::array<uint8_t, 16>>;
    using mac_key = std::array<uint8_t, 6>;

    void count_error(uint64_t number, const std::string &error);
    void tally_l2(const frame_report &r, bool good_roce);

    bool l2_check_;
    uint64_t frames_ = 0, roce_ = 0, roce_ok_ = 0, snapped_ = 0, non_roce_ = 0, bad_ = 0;
    std::map<std::string, error_count> errors_;
    std::map<ip_key, std::map<mac_key, mac_use>> l2_;
};

} // namespace uroce::dump

#endif
