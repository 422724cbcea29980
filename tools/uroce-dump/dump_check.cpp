/* SPDX-License-Identifier: BSD-3-Clause
 * uroce-dump --check.
 */
#include "dump_check.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "dump_format.h"

namespace uroce::dump {

namespace {
/* An (IP, MAC) pair is an outlier when the dominant MAC of that IP is used
 * in at least this many times more frames. */
inline constexpr uint64_t l2_outlier_ratio = 10;
} // namespace

void check_summary::count_error(uint64_t number, const std::string &error) {
    error_count &e = errors_[error];
    e.count++;
    if (e.examples.size() < max_examples) e.examples.push_back(number);
    bad_++;
}

void check_summary::tally_l2(const frame_report &r, bool good_roce) {
    const frame_addrs &a = r.addrs;
    if (!a.has_mac || a.ip_version == 0) return;
    auto use = [&](const uint8_t *ip, const uint8_t *mac) {
        ip_key k{a.ip_version, {}};
        std::memcpy(k.second.data(), ip, a.ip_version == 4 ? 4 : 16);
        mac_key m;
        std::memcpy(m.data(), mac, 6);
        mac_use &u = l2_[k][m];
        u.frames++;
        if (good_roce) {
            u.roce_count++;
            if (u.roce_frames.size() < max_examples) u.roce_frames.push_back(r.number);
        }
    };
    use(a.src_ip, a.src_mac);
    use(a.dst_ip, a.dst_mac);
}

void check_summary::add(const frame_report &r) {
    frames_++;
    if (r.cls != frame_class::roce) {
        non_roce_++;
        tally_l2(r, false);
        return;
    }
    roce_++;
    if (r.snapped) {
        snapped_++;
        return;
    }
    if (!r.error.empty()) {
        count_error(r.number, r.error);
        return;
    }
    roce_ok_++;
    tally_l2(r, true);
}

std::vector<flagged_frame> check_summary::finish() {
    std::vector<flagged_frame> out;
    if (!l2_check_) return out;
    for (const auto &[ip, macs] : l2_) {
        const mac_key *dom = nullptr;
        uint64_t dom_frames = 0;
        for (const auto &[m, u] : macs)
            if (u.frames > dom_frames) {
                dom = &m;
                dom_frames = u.frames;
            }
        for (const auto &[m, u] : macs) {
            if (&m == dom || u.roce_count == 0 || u.frames * l2_outlier_ratio > dom_frames)
                continue;
            std::string ip_s = ip_text(ip.second.data(), ip.first);
            char detail[200];
            std::snprintf(detail, sizeof detail,
                          "%s uses MAC %s here but %s in %" PRIu64 " other frames", ip_s.c_str(),
                          mac_text(m.data()).c_str(), mac_text(dom->data()).c_str(), dom_frames);
            for (uint64_t n : u.roce_frames)
                out.push_back({n, err_l2_mismatch, detail});
            /* Frames past the example list are counted, not listed. */
            for (uint64_t i = 0; i < u.roce_count; i++)
                count_error(i < u.roce_frames.size() ? u.roce_frames[i] : 0, err_l2_mismatch);
            roce_ok_ -= std::min(roce_ok_, u.roce_count);
        }
    }
    std::sort(out.begin(), out.end(),
              [](const flagged_frame &a, const flagged_frame &b) { return a.number < b.number; });
    /* Examples were collected per (IP, MAC) pair; keep them sorted and non-zero. */
    if (auto it = errors_.find(err_l2_mismatch); it != errors_.end()) {
        auto &ex = it->second.examples;
        ex.erase(std::remove(ex.begin(), ex.end(), 0), ex.end());
        std::sort(ex.begin(), ex.end());
        ex.erase(std::unique(ex.begin(), ex.end()), ex.end());
    }
    return out;
}

uint64_t check_summary::count(const std::string &error) const {
    auto it = errors_.find(error);
    return it == errors_.end() ? 0 : it->second.count;
}

std::string check_summary::format() const {
    char line[256];
    std::string s;
    std::snprintf(line, sizeof line,
                  "check: %" PRIu64 " frames: %" PRIu64 " RoCE (%" PRIu64 " ok, %" PRIu64
                  " bad, %" PRIu64 " snapped and not verified), %" PRIu64 " non-RoCE\n",
                  frames_, roce_, roce_ok_, bad_, snapped_, non_roce_);
    s += line;
    if (bad_ == 0) {
        s += "check: OK\n";
        return s;
    }
    std::snprintf(line, sizeof line, "check: FAILED: %" PRIu64 " bad RoCE packet%s\n", bad_,
                  bad_ == 1 ? "" : "s");
    s += line;
    for (const auto &[name, e] : errors_) {
        std::snprintf(line, sizeof line, "  %-22s %8" PRIu64 "  frame%s", name.c_str(), e.count,
                      e.examples.size() == 1 ? "" : "s");
        s += line;
        for (size_t i = 0; i < e.examples.size(); i++) {
            s += i ? ',' : ' ';
            s += std::to_string(e.examples[i]);
        }
        if (e.count > e.examples.size()) s += ",...";
        s += "\n";
    }
    return s;
}

} // namespace uroce::dump
