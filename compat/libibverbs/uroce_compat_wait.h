/* SPDX-License-Identifier: BSD-3-Clause
 * compat: the wait behind a blocking event call of either library
 * (ibv_get_async_event, rdma_get_cm_event). The kernel-backed libraries
 * read(2) their fd; ours poll(2) it until the queue behind it has an event.
 */
#ifndef UROCE_COMPAT_WAIT_H
#define UROCE_COMPAT_WAIT_H

#include <fcntl.h>
#include <poll.h>

#include <cerrno>

namespace uroce::compat {

/* Waits until fd is readable, as a blocking read(2) of it would: 0. -1 with
 * errno EAGAIN at once if the application made fd non-blocking, or with
 * poll's errno (EINTR: a signal ended the wait). */
inline int wait_readable(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK)) {
        errno = EAGAIN;
        return -1;
    }
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, -1) < 0 ? -1 : 0;
}

} // namespace uroce::compat

#endif
