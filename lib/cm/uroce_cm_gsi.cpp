/* SPDX-License-Identifier: BSD-3-Clause
 * The CM's end of the GSI QP1 (uroce_cm_gsi.h).
 */
#include "uroce_cm_gsi.h"

#include <cstring>

namespace uroce {

cm_gsi::cm_gsi(device *dev, neigh &nb, const config &cfg) : dev_(dev), nb_(nb), cfg_(cfg) {
    setup();
}

void cm_gsi::setup() {
    device *dev = dev_;
    const config &cfg = cfg_;
    auto fail = [this](verbs_error e) { err_ = e == verbs_error::ok ? verbs_error::nomem : e; };
    /* Each step's failure leaves err_ set and the rest undone (the
     * destructor frees what exists). */
    verbs_error e = verbs_error::ok;
    if (!dev || cfg.recv_depth == 0 || cfg.send_depth == 0) return fail(verbs_error::inval);
    if (!(pd_ = alloc_pd(dev, &e))) return fail(e);
    if (!(scq_ = create_cq(dev, int(cfg.send_depth), nullptr, &e))) return fail(e);
    if (!(rcq_ = create_cq(dev, int(cfg.recv_depth), nullptr, &e))) return fail(e);
    qp_init_attr ia;
    ia.send_cq = scq_;
    ia.recv_cq = rcq_;
    ia.qp_type = qp_type::ud;
    ia.cap.max_send_wr = cfg.send_depth;
    ia.cap.max_recv_wr = cfg.recv_depth;
    ia.sq_sig_all = 1;
    if (!(qp_ = create_gsi_qp(pd_, ia, &e))) return fail(e);
    qp_connect_attr ca;
    ca.qkey = gsi_qkey;
    if ((e = connect_qp(qp_, ca)) != verbs_error::ok) return fail(e);
    recv_mem_ = std::make_unique<uint8_t[]>(size_t(cfg.recv_depth) * recv_len);
    send_mem_ = std::make_unique<uint8_t[]>(size_t(cfg.send_depth) * mad_size);
    if (!(recv_mr_ = reg_mr(pd_, recv_mem_.get(), size_t(cfg.recv_depth) * recv_len,
                            access_local_write, &e)))
        return fail(e);
    if (!(send_mr_ = reg_mr(pd_, send_mem_.get(), size_t(cfg.send_depth) * mad_size, 0, &e)))
        return fail(e);
    for (unsigned i = 0; i < cfg.recv_depth; i++)
        post_one_recv(i);
    for (unsigned i = cfg.send_depth; i > 0; i--)
        free_send_.push_back(i - 1);
}

cm_gsi::~cm_gsi() {
    if (qp_) destroy_qp(qp_);
    for (auto &[g, e] : ahs_)
        destroy_ah(e.h);
    for (ah *h : retired_ahs_)
        destroy_ah(h);
    if (recv_mr_) dereg_mr(recv_mr_);
    if (send_mr_) dereg_mr(send_mr_);
    if (scq_) destroy_cq(scq_);
    if (rcq_) destroy_cq(rcq_);
    if (pd_) dealloc_pd(pd_);
}

gid cm_gsi::grh_addr(const uint8_t *grh, bool dst) {
    if ((grh[0] >> 4) == 6) return gid::from_bytes(grh + (dst ? 24 : 8)); /* IPv6 header */
    return gid::from_ipv4(load_be32(grh + 20 + (dst ? 16 : 12)));         /* IPv4 at 20 */
}

void cm_gsi::post_one_recv(uint64_t i) {
    sge s{reinterpret_cast<uint64_t>(recv_buf(i)), uint32_t(recv_len), mr_lkey(recv_mr_)};
    recv_wr r;
    r.wr_id = i;
    r.sg_list = &s;
    r.num_sge = 1;
    recv_wr *bad = nullptr;
    post_recv(qp_, &r, &bad); /* cannot fail: one buffer per slot of the queue */
}

unsigned cm_gsi::reap_sends() {
    wc w[16];
    unsigned work = 0;
    int n;
    while ((n = poll_cq(scq_, 16, w)) > 0) {
        for (int i = 0; i < n; i++)
            free_send_.push_back(uint32_t(w[i].wr_id));
        work += unsigned(n);
    }
    /* Replaced address handles go once nothing is in flight. */
    if (!retired_ahs_.empty() && free_send_.size() == cfg_.send_depth) {
        for (ah *h : retired_ahs_)
            destroy_ah(h);
        retired_ahs_.clear();
    }
    return work;
}

/* Our GID to send from: the one given, else the first of the peer's family. */
int cm_gsi::sgid_index(const gid &to, const gid &from) const {
    int first = -1;
    for (int i = 0; i < 16; i++) {
        gid g;
        if (query_gid(dev_, 1, i, &g) != verbs_error::ok) break;
        if (!from.is_zero() && g == from) return i;
        if (first < 0 && g.is_ipv4_mapped() == to.is_ipv4_mapped()) first = i;
    }
    return first;
}

ah *cm_gsi::ah_for(const gid &to, const gid &from, const mac_addr &mac) {
    /* Keyed by the peer; a different MAC (or source) makes a new handle. */
    auto it = ahs_.find(to.raw);
    if (it != ahs_.end()) {
        if (it->second.mac == mac) return it->second.h;
        retired_ahs_.push_back(it->second.h);
        ahs_.erase(it);
    }
    const int idx = sgid_index(to, from);
    if (idx < 0) return nullptr;
    ah_attr a;
    a.grh.dgid = to;
    a.grh.sgid_index = uint8_t(idx);
    a.grh.hop_limit = 64;
    mac.copy_to(a.dmac);
    ah *h = create_ah(pd_, a);
    if (h) ahs_.emplace(to.raw, ah_entry{h, mac});
    return h;
}

bool cm_gsi::post(const gid &to, uint32_t qpn, const gid &from, const mac_addr &mac,
                  const uint8_t *mad) {
    if (free_send_.empty()) reap_sends();
    if (free_send_.empty()) return false;
    ah *h = ah_for(to, from, mac);
    if (!h) return false;
    const uint32_t slot = free_send_.back();
    uint8_t *buf = send_mem_.get() + size_t(slot) * mad_size;
    std::memcpy(buf, mad, mad_size);
    sge s{reinterpret_cast<uint64_t>(buf), uint32_t(mad_size), mr_lkey(send_mr_)};
    send_wr w;
    w.wr_id = slot;
    w.sg_list = &s;
    w.num_sge = 1;
    w.opcode = wr_opcode::send;
    w.send_flags = send_signaled;
    w.wr.ud.ah = h;
    w.wr.ud.remote_qpn = qpn;
    w.wr.ud.remote_qkey = gsi_qkey;
    send_wr *bad = nullptr;
    if (post_send(qp_, &w, &bad) != verbs_error::ok) return false;
    free_send_.pop_back();
    cnt_.tx++;
    return true;
}

void cm_gsi::send(const gid &to, uint32_t qpn, const gid &from, const uint8_t *mad,
                  uint64_t now_ns) {
    if (std::optional<mac_addr> mac = nb_.resolve(to)) {
        if (!post(to, qpn, from, *mac, mad)) cnt_.queue_full++;
        return;
    }
    if (parked_.size() >= cfg_.park_cap) {
        cnt_.queue_full++;
        return;
    }
    parked_mad p;
    p.to = to;
    p.from = from;
    p.qpn = qpn;
    p.deadline = now_ns + cfg_.park_timeout_ns;
    std::memcpy(p.mad.data(), mad, mad_size);
    parked_.push_back(p);
    cnt_.parked++;
}

unsigned cm_gsi::flush_parked(uint64_t now_ns) {
    unsigned work = 0;
    for (auto it = parked_.begin(); it != parked_.end();) {
        std::optional<neigh_entry_view> e = nb_.lookup(it->to);
        const bool usable = e && e->state != neigh_state::incomplete &&
                            e->state != neigh_state::failed && e->state != neigh_state::none;
        if (usable) {
            if (!post(it->to, it->qpn, it->from, e->mac, it->mad.data())) cnt_.queue_full++;
        } else if (e && e->state == neigh_state::incomplete && now_ns < it->deadline) {
            ++it;
            continue;
        } else {
            cnt_.unresolved++; /* resolution failed, gone, or too slow */
        }
        it = parked_.erase(it);
        work++;
    }
    return work;
}

} // namespace uroce
