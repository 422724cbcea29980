/* SPDX-License-Identifier: BSD-3-Clause
 * CM MADs: strict acceptance of a MAD as a CM message (<uroce/cm_mad.h>).
 * The GSI QP hands every UD payload it receives to parse_cm_mad() before
 * the CM looks at a single field: a MAD that is too short, of another
 * class or version, not a Send(), or of an attribute the CM does not know
 * is refused with its own error, which the CM counts (IBTA 13.4.4: a
 * class manager ignores MADs it does not support; IBTA 12.6: the CM's).
 */
#include <uroce/cm_mad.h>

namespace uroce {

const char *mad_error_name(mad_error e) {
    switch (e) {
    case mad_error::ok:
        return "ok";
    case mad_error::short_mad:
        return "short-mad";
    case mad_error::bad_base_version:
        return "bad-base-version";
    case mad_error::not_cm_class:
        return "not-cm-class";
    case mad_error::bad_class_version:
        return "bad-class-version";
    case mad_error::bad_method:
        return "bad-method";
    case mad_error::unknown_attribute:
        return "unknown-attribute";
    case mad_error::count:
        break;
    }
    return "unknown";
}

mad_error parse_cm_mad(const uint8_t *p, size_t len, cm_mad_view &out) {
    /* A UD payload may be padded to 4 bytes, never shorter than the MAD
     * (IBTA 13.4.2: every MAD is 256 bytes). */
    if (len < mad_size) return mad_error::short_mad;
    const auto *h = reinterpret_cast<const mad_hdr *>(p);
    if (h->base_version != mad_base_version) return mad_error::bad_base_version;
    if (h->mgmt_class != mad_class_cm) return mad_error::not_cm_class;
    if (h->class_version != cm_class_version) return mad_error::bad_class_version;
    if (h->method != mad_method_send) return mad_error::bad_method;
    const cm_attr_info *info = cm_attr_lookup(h->attr_id());
    if (!info) return mad_error::unknown_attribute;
    out.hdr = h;
    out.msg = p + mad_hdr_size;
    out.info = info;
    return mad_error::ok;
}

} // namespace uroce
