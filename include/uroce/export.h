/* SPDX-License-Identifier: BSD-3-Clause
 * What every public header includes first: the language check and the
 * export macro.
 *
 * liburoce.so is built with -fvisibility=hidden, so only what is marked
 * UROCE_API (the functions and classes of include/uroce/) is exported. A
 * polymorphic class is exported whole (its vtable and type_info belong to
 * its users too); its private helpers are marked UROCE_LOCAL. The
 * rest of the library (the transport's internals, the CRC engines, ...) is
 * not part of the ABI (doc/abi.md).
 */
#ifndef UROCE_EXPORT_H
#define UROCE_EXPORT_H

#if !defined(__cplusplus) || __cplusplus < 202002L
#error                                                                                             \
    "uroce's headers need C++20: compile with -std=c++20 or later (pkg-config --variable=cxx_std uroce)"
#endif

#define UROCE_API __attribute__((visibility("default")))
/* A private member of an exported class that is not part of the API. */
#define UROCE_LOCAL __attribute__((visibility("hidden")))

#endif
