// SPDX-License-Identifier: GPL-2.0
/* A CE marker for perf_ecn_test.sh: a tc egress program (direct action)
 * that sets the IP ECN field of ECT RoCEv2 (UDP 4791) IPv4 frames to CE
 * with probability PCT %, fixing the header checksum (RFC 1624). It stands
 * in for a marking qdisc (red ecn, fq_codel ce_threshold) on kernels built
 * without them. Built by the test: clang -O2 -target bpf -DPCT=n. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#ifndef PCT
#define PCT 5
#endif
SEC("tc")
int mark_ce(struct __sk_buff *skb) {
    /* AF_PACKET TX_RING skbs keep the frame in page frags: pull the headers */
    bpf_skb_pull_data(skb, 14 + 20 + 8);
    void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
    struct ethhdr *eth = data;
    if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP)) return TC_ACT_OK;
    struct iphdr *ip = (void *)(eth + 1);
    if ((void *)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP) return TC_ACT_OK;
    if ((ip->tos & 3) == 0 || (ip->tos & 3) == 3) return TC_ACT_OK;
    struct udphdr *udp = (void *)(ip + 1);
    if ((void *)(udp + 1) > end || udp->dest != bpf_htons(4791)) return TC_ACT_OK;
    if (bpf_get_prandom_u32() % 100 >= PCT) return TC_ACT_OK;
    __u16 old_w = bpf_htons((__u16)(ip->version << 12 | ip->ihl << 8 | ip->tos));
    __u8 tos = ip->tos | 3;
    __u16 new_w = bpf_htons((__u16)(ip->version << 12 | ip->ihl << 8 | tos));
    bpf_l3_csum_replace(skb, ETH_HLEN + offsetof(struct iphdr, check), old_w, new_w, 2);
    bpf_skb_store_bytes(skb, ETH_HLEN + offsetof(struct iphdr, tos), &tos, 1, 0);
    return TC_ACT_OK;
}
char LICENSE[] SEC("license") = "GPL";
