#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# uroce as a user gets it: install the build into a scratch prefix, then
#  1. only include/uroce/ is installed, and every header in it compiles on
#     its own with -Wall -Wextra -Werror (no internal header behind it);
#  2. liburoce.so has a versioned SONAME and exports only namespace uroce;
#  3. the pkg-config file gives no -I into DPDK (system headers only) and
#     lists no TBB;
#  4. test/consumer/consumer.cpp builds with exactly what pkg-config gives
#     (nothing from the source or build tree) under -Werror, and runs.
# Usage: consumer_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
work=$(mktemp -d /tmp/uroce-consumer.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

meson install -C "$build" --destdir "$work/root" --no-rebuild --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"))')
libdir=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"))')
root="$work/root"
inc="$root$prefix/include/uroce"
lib="$root$prefix/$libdir"

# 1. the installed headers are exactly the public ones
installed=$(cd "$inc" && ls | sort)
public=$(cd "$src/include/uroce" && ls | sort)
[ "$installed" = "$public" ] || fail "installed headers differ from include/uroce: $(diff <(echo "$installed") <(echo "$public") | tr '\n' ' ')"
if find "$root$prefix/include" -name 'uroce_*.h' | grep -q .; then
  fail "internal headers installed: $(find "$root$prefix/include" -name 'uroce_*.h' | tr '\n' ' ')"
fi
export PKG_CONFIG_PATH="$lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags uroce)
std=$(pkg-config --variable=cxx_std uroce)
for h in "$inc"/*.h; do
  echo "#include <uroce/$(basename "$h")>" > "$work/one.cpp"
  c++ -std="$std" -Wall -Wextra -Werror $cflags -fsyntax-only "$work/one.cpp" ||
    fail "<uroce/$(basename "$h")> does not compile on its own"
done
echo "1. $(echo "$installed" | wc -l) public headers installed, each self-contained under -Werror"
# ... and a C++17 user is told why, not given a page of errors
echo '#include <uroce/verbs.h>' > "$work/old.cpp"
if c++ -std=c++17 $cflags -fsyntax-only "$work/old.cpp" 2> "$work/old.err"; then
  fail "a C++17 build of <uroce/verbs.h> should stop with the C++20 message"
fi
grep -q 'need C++20' "$work/old.err" || fail "C++17: no clear message: $(head -3 "$work/old.err")"

# 2. SONAME and exports
so=$(ls "$lib"/liburoce.so.*.*.* | head -1)
soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
[[ "$soname" =~ ^liburoce\.so\.[0-9]+$ ]] || fail "SONAME is '$soname'"
nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^UROCE_' > "$work/syms"
n=$(wc -l < "$work/syms")
c++filt < "$work/syms" | grep -v -E '^(typeinfo for |typeinfo name for |vtable for )?uroce::' > "$work/foreign" || true
[ ! -s "$work/foreign" ] || fail "exported outside namespace uroce: $(head -5 "$work/foreign" | tr '\n' ' ')"
if c++filt < "$work/syms" | grep -q -E 'uroce::(device::|qp::|req_|resp_|comp_|crc32_detail|timer_wheel|mr_table)'; then
  fail "internal symbols exported: $(c++filt < "$work/syms" | grep -E 'uroce::(device::|req_|resp_|comp_|crc32_detail)' | head -3 | tr '\n' ' ')"
fi
echo "2. $soname exports $n symbols, all of namespace uroce (version node $(nm -D --defined-only "$so" | awk '$3 ~ /^UROCE_/ {print $3}'))"

# 3. the pkg-config file
if grep -q -- '-I[^ ]*dpdk' <<< "$cflags"; then fail "DPDK comes in as -I, not as system headers: $cflags"; fi
if pkg-config --print-requires --print-requires-private uroce | grep -q .; then
  fail "pkg-config requires: $(pkg-config --print-requires --print-requires-private uroce | tr '\n' ' ')"
fi
if pkg-config --libs uroce | grep -q tbb; then fail "TBB in the link line"; fi
echo "3. pkg-config: $cflags | $(pkg-config --libs uroce)"

# 4. the consumer
cp "$src/test/consumer/consumer.cpp" "$work/"
(cd "$work" && c++ -std="$std" -Wall -Wextra -Werror consumer.cpp -o consumer \
   $(pkg-config --cflags --libs uroce) -Wl,-rpath,"$lib") || fail "the consumer does not build"
if ldd "$work/consumer" | grep -q "$build"; then fail "the consumer links from the build tree"; fi
"$work/consumer" || fail "the consumer failed"
echo "4. consumer built against the installed prefix and ran"
