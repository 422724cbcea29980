/* SPDX-License-Identifier: BSD-3-Clause
 * The CM's end of the GSI QP1: 256-byte MADs to and from peers' QP1, over
 * the transport's QP1 (create_gsi_qp) and the neighbour table.
 *
 *   send(peer, mad)  the peer's MAC from the neighbour table: known, the MAD
 *                    goes out at once as a UD SEND_ONLY to the peer's QP1
 *                    (Q_Key 0x80010000, from QP1, P_Key 0xFFFF); not yet
 *                    (ARP / ND under way), it is parked, at most `park_cap`
 *                    at once, and sent when the MAC arrives or dropped when
 *                    resolution fails or takes longer than park_timeout;
 *                    every drop counted.
 *   poll(now, fn)    receive completions: fn(peer, payload, len) for each
 *                    MAD, the peer's GID from the GRH in front of it (IBTA
 *                    11.4.1.2: the first 40 bytes of a UD receive); the
 *                    buffer is posted again. Send completions free their
 *                    slot. Parked MADs whose MAC is known leave.
 *
 * Control path: a MAD at a time, copies into fixed buffers registered once.
 */
#ifndef UROCE_CM_GSI_H
#define UROCE_CM_GSI_H

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include <uroce/cm_mad.h>
#include <uroce/neigh.h>
#include <uroce/verbs.h>

namespace uroce {

struct cm_gsi_counters {
    uint64_t rx = 0;
    uint64_t tx = 0;
    uint64_t rx_error = 0;   /* receive completions in error */
    uint64_t parked = 0;     /* MADs that waited for the peer's MAC */
    uint64_t unresolved = 0; /* parked MADs dropped: no MAC */
    uint64_t queue_full = 0; /* MADs dropped: park queue or send slots full */
};

class cm_gsi {
  public:
    struct config {
        unsigned recv_depth = 256;
        unsigned send_depth = 256;
        unsigned park_cap = 256;
        uint64_t park_timeout_ns = 3'000'000'000ull; /* ARP/ND's own give-up is ~3 s */
    };
    cm_gsi(device *dev, neigh &nb, const config &cfg);
    ~cm_gsi();
    cm_gsi(const cm_gsi &) = delete;
    cm_gsi &operator=(const cm_gsi &) = delete;
    /* ok after construction? (else why). */
    verbs_error error() const { return err_; }
    /* MADs not yet out: parked for the peer's address, or posted to QP1
     * and not yet seen complete (poll() reaps the completions; a UD send
     * completes once its frame is queued to the port). */
    size_t unsent() const { return parked_.size() + (cfg_.send_depth - free_send_.size()); }

    /* A MAD to the peer's QP qpn (1) at GID `to`, from our GID `from`
     * (zero: the first of the peer's family). */
    void send(const gid &to, uint32_t qpn, const gid &from, const uint8_t *mad, uint64_t now_ns);

    /* fn(const gid &from, const gid &to, uint32_t src_qp, const uint8_t *mad, size_t len). */
    template <class Fn> unsigned poll(uint64_t now_ns, Fn &&fn) {
        unsigned work = reap_sends() + flush_parked(now_ns);
        wc w[16];
        int n;
        while ((n = poll_cq(rcq_, 16, w)) > 0) {
            for (int i = 0; i < n; i++) {
                uint8_t *buf = recv_buf(w[i].wr_id);
                if (w[i].status == wc_status::success && w[i].byte_len >= grh_len) {
                    cnt_.rx++;
                    fn(grh_addr(buf, false), grh_addr(buf, true), w[i].src_qp, buf + grh_len,
                       w[i].byte_len - grh_len);
                } else {
                    cnt_.rx_error++;
                }
                post_one_recv(w[i].wr_id);
            }
            work += unsigned(n);
        }
        return work;
    }

    const cm_gsi_counters &counters() const { return cnt_; }
    qp *gsi_qp() const { return qp_; }
    size_t parked() const { return parked_.size(); }

    static constexpr size_t grh_len = 40;
    static constexpr size_t recv_len = grh_len + mad_size;
    /* The sender's (or with dst, the receiver's) GID from a UD receive's
     * GRH: an IPv6 header, or for IPv4 20 zero bytes and the IPv4 header
     * (rxe, ibverbs). */
    static gid grh_addr(const uint8_t *grh, bool dst);

  private:
    struct parked_mad {
        gid to;
        gid from;
        uint32_t qpn;
        uint64_t deadline;
        std::array<uint8_t, mad_size> mad;
    };
    void setup();
    uint8_t *recv_buf(uint64_t i) { return recv_mem_.get() + i * recv_len; }
    void post_one_recv(uint64_t i);
    unsigned reap_sends();
    unsigned flush_parked(uint64_t now_ns);
    /* false: no send slot. */
    bool post(const gid &to, uint32_t qpn, const gid &from, const mac_addr &mac,
              const uint8_t *mad);
    ah *ah_for(const gid &to, const gid &from, const mac_addr &mac);
    int sgid_index(const gid &to, const gid &from) const;

    device *dev_;
    neigh &nb_;
    config cfg_;
    verbs_error err_ = verbs_error::ok;
    pd *pd_ = nullptr;
    cq *scq_ = nullptr;
    cq *rcq_ = nullptr;
    qp *qp_ = nullptr;
    mr *recv_mr_ = nullptr;
    mr *send_mr_ = nullptr;
    std::unique_ptr<uint8_t[]> recv_mem_;
    std::unique_ptr<uint8_t[]> send_mem_;
    std::vector<uint32_t> free_send_; /* send slots not in flight */
    std::deque<parked_mad> parked_;
    struct ah_entry {
        ah *h;
        mac_addr mac;
    };
    std::map<std::array<uint8_t, 16>, ah_entry> ahs_;
    std::vector<ah *> retired_ahs_; /* replaced while sends may still use them */
    cm_gsi_counters cnt_;
};

} // namespace uroce

#endif
