/* SPDX-License-Identifier: BSD-3-Clause
 * Test helper: bring an RC QP from RESET to RTS (INIT, RTR, RTS) with the
 * attributes ibv_rc_pingpong and perftest use, for tests that need a
 * connected pair and are not about the state machine itself
 * (test/transport/uroce_qp_test.cpp is).
 */
#ifndef UROCE_TEST_RC_CONNECT_H
#define UROCE_TEST_RC_CONNECT_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include <uroce/verbs.h>

namespace uroce::test {

/* Where the QP sends and what it starts from. */
struct rc_peer {
    uint32_t qpn = 0;
    gid dgid;
    uint8_t sgid_index = 0;
    uint8_t dmac[6] = {};
    uint32_t sq_psn = 0; /* our first PSN */
    uint32_t rq_psn = 0; /* the peer's first PSN */
    mtu path_mtu = mtu::mtu_4096;
    uint8_t rd_atomic = 4; /* max_rd_atomic and max_dest_rd_atomic */
    uint8_t min_rnr_timer = 12;
    uint8_t hop_limit = 64;
};

inline ::testing::AssertionResult rc_connect(qp *q, const rc_peer &p) {
    qp_attr at;
    at.qp_state = qp_state::init;
    at.port_num = 1;
    at.qp_access_flags = access_remote_write | access_remote_read | access_remote_atomic;
    if (verbs_error e = modify_qp(
            q, at, qp_attr_state | qp_attr_pkey_index | qp_attr_port | qp_attr_access_flags);
        e != verbs_error::ok)
        return ::testing::AssertionFailure() << "to INIT: " << verbs_error_str(e);
    at = qp_attr{};
    at.qp_state = qp_state::rtr;
    at.path_mtu = p.path_mtu;
    at.dest_qp_num = p.qpn;
    at.rq_psn = p.rq_psn;
    at.max_dest_rd_atomic = p.rd_atomic;
    at.min_rnr_timer = p.min_rnr_timer;
    at.ah_attr.grh.dgid = p.dgid;
    at.ah_attr.grh.sgid_index = p.sgid_index;
    at.ah_attr.grh.hop_limit = p.hop_limit;
    std::memcpy(at.ah_attr.dmac, p.dmac, sizeof(p.dmac));
    if (verbs_error e =
            modify_qp(q, at,
                      qp_attr_state | qp_attr_av | qp_attr_path_mtu | qp_attr_dest_qpn |
                          qp_attr_rq_psn | qp_attr_max_dest_rd_atomic | qp_attr_min_rnr_timer);
        e != verbs_error::ok)
        return ::testing::AssertionFailure() << "to RTR: " << verbs_error_str(e);
    at = qp_attr{};
    at.qp_state = qp_state::rts;
    at.sq_psn = p.sq_psn;
    at.timeout = 14;
    at.retry_cnt = 7;
    at.rnr_retry = 7;
    at.max_rd_atomic = p.rd_atomic;
    if (verbs_error e =
            modify_qp(q, at,
                      qp_attr_state | qp_attr_sq_psn | qp_attr_timeout | qp_attr_retry_cnt |
                          qp_attr_rnr_retry | qp_attr_max_qp_rd_atomic);
        e != verbs_error::ok)
        return ::testing::AssertionFailure() << "to RTS: " << verbs_error_str(e);
    return ::testing::AssertionSuccess();
}

} // namespace uroce::test

#endif
