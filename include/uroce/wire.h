/* SPDX-License-Identifier: BSD-3-Clause
 * The RoCEv2 wire format in one include: the headers (<uroce/hdr.h>), the
 * opcode table (<uroce/opcode.h>), the parser (<uroce/parse.h>) and the
 * builder (<uroce/build.h>), GIDs (<uroce/gid.h>), MAC addresses
 * (<uroce/mac.h>), the UDP source port from the flow label (<uroce/flow.h>)
 * and byte-order access (<uroce/byteorder.h>). doc/wire.md describes them.
 */
#ifndef UROCE_WIRE_H
#define UROCE_WIRE_H

#include <uroce/export.h>

#include <uroce/build.h>
#include <uroce/byteorder.h>
#include <uroce/flow.h>
#include <uroce/gid.h>
#include <uroce/hdr.h>
#include <uroce/mac.h>
#include <uroce/opcode.h>
#include <uroce/parse.h>

#endif
