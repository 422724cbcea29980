/* SPDX-License-Identifier: BSD-3-Clause */
#include <uroce/capture.h>

#include <pcap/pcap.h>

#include <ctime>
#include <vector>

#include <rte_mbuf.h>

namespace uroce {

struct pcap_writer::state {
    pcap_t *dead = nullptr;
    pcap_dumper_t *dumper = nullptr;
    std::vector<uint8_t> gather; /* flattening buffer for mbuf chains */
};

std::unique_ptr<pcap_writer> pcap_writer::open(const std::string &path, std::string &err,
                                               uint32_t snaplen) {
    std::unique_ptr<pcap_writer> w(new pcap_writer());
    w->st_ = std::make_unique<state>();
    w->snaplen_ = snaplen;
    /* Nanosecond precision: a burst of back-to-back packets stays ordered and distinct. */
    w->st_->dead =
        pcap_open_dead_with_tstamp_precision(DLT_EN10MB, int(snaplen), PCAP_TSTAMP_PRECISION_NANO);
    if (!w->st_->dead) {
        err = "pcap: cannot allocate a capture handle";
        return nullptr;
    }
    w->st_->dumper = pcap_dump_open(w->st_->dead, path.c_str());
    if (!w->st_->dumper) {
        err = "pcap: cannot write '" + path + "': " + pcap_geterr(w->st_->dead);
        return nullptr;
    }
    w->st_->gather.resize(snaplen);
    return w;
}

pcap_writer::~pcap_writer() {
    if (!st_) return;
    if (st_->dumper) pcap_dump_close(st_->dumper);
    if (st_->dead) pcap_close(st_->dead);
}

static uint64_t wall_ns() {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void pcap_writer::dump(const void *bytes, uint32_t caplen, uint32_t len, uint64_t ts_ns) {
    struct pcap_pkthdr h = {};
    h.ts.tv_sec = time_t(ts_ns / 1000000000ull);
    h.ts.tv_usec = suseconds_t(ts_ns % 1000000000ull); /* nanoseconds: PCAP_TSTAMP_PRECISION_NANO */
    h.len = len;
    h.caplen = caplen;
    if (caplen < len) truncated_++;
    pcap_dump(reinterpret_cast<u_char *>(st_->dumper), &h, static_cast<const u_char *>(bytes));
    frames_++;
}

void pcap_writer::write(const void *frame, uint32_t len) {
    dump(frame, len < snaplen_ ? len : snaplen_, len, wall_ns());
}

void pcap_writer::write(const rte_mbuf *m) {
    write_at(wall_ns(), m);
}

void pcap_writer::write_at(uint64_t ts_ns, const rte_mbuf *m) {
    uint32_t cap = m->pkt_len < snaplen_ ? m->pkt_len : snaplen_;
    /* rte_pktmbuf_read copies into the gather buffer only when the bytes span segments. */
    dump(rte_pktmbuf_read(m, 0, cap, st_->gather.data()), cap, m->pkt_len, ts_ns);
}

void pcap_writer::flush() {
    pcap_dump_flush(st_->dumper);
}

} // namespace uroce
