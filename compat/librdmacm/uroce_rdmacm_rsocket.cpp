/* SPDX-License-Identifier: BSD-3-Clause
 * compat/librdmacm: rsockets (<rdma/rsocket.h>) are not provided: each
 * call fails with ENOSYS and one line on stderr. They are exported so
 * binaries that link them (perftest imports rpoll) load.
 */
#include <rdma/rsocket.h>

#include <cerrno>

#include "uroce_rdmacm.h"

using uroce::compat::rdmacm::unsupported;

namespace {
int no() {
    return unsupported("rsockets");
}
} // namespace

extern "C" {

int rsocket(int, int, int) {
    return no();
}
int rbind(int, const sockaddr *, socklen_t) {
    return no();
}
int rlisten(int, int) {
    return no();
}
int raccept(int, sockaddr *, socklen_t *) {
    return no();
}
int rconnect(int, const sockaddr *, socklen_t) {
    return no();
}
int rshutdown(int, int) {
    return no();
}
int rclose(int) {
    return no();
}
ssize_t rrecv(int, void *, size_t, int) {
    return no();
}
ssize_t rrecvfrom(int, void *, size_t, int, sockaddr *, socklen_t *) {
    return no();
}
ssize_t rrecvmsg(int, msghdr *, int) {
    return no();
}
ssize_t rsend(int, const void *, size_t, int) {
    return no();
}
ssize_t rsendto(int, const void *, size_t, int, const sockaddr *, socklen_t) {
    return no();
}
ssize_t rsendmsg(int, const msghdr *, int) {
    return no();
}
ssize_t rread(int, void *, size_t) {
    return no();
}
ssize_t rreadv(int, const iovec *, int) {
    return no();
}
ssize_t rwrite(int, const void *, size_t) {
    return no();
}
ssize_t rwritev(int, const iovec *, int) {
    return no();
}
int rpoll(pollfd *, nfds_t, int) {
    return no();
}
int rselect(int, fd_set *, fd_set *, fd_set *, timeval *) {
    return no();
}
int rgetpeername(int, sockaddr *, socklen_t *) {
    return no();
}
int rgetsockname(int, sockaddr *, socklen_t *) {
    return no();
}
int rsetsockopt(int, int, int, const void *, socklen_t) {
    return no();
}
int rgetsockopt(int, int, int, void *, socklen_t *) {
    return no();
}
int rfcntl(int, int, ...) {
    return no();
}
off_t riomap(int, void *, size_t, int, int, off_t) {
    return no();
}
int riounmap(int, void *, size_t) {
    return no();
}
size_t riowrite(int, const void *, size_t, off_t, int) {
    no();
    return 0;
}

} // extern "C"
