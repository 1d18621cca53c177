#!/usr/bin/env bash
# `meson install` puts down what an embedder needs, and nothing of the C++
# inside: into a temp destdir, then a C program is built with pkg-config
# alone (`cc p.c $(pkg-config --cflags --libs zerofold)`) and run.
#   - libzerofold.so has a versioned soname and exports zf_* names only;
#   - libzerofold.a, include/zerofold/zerofold.h and zerofold.pc are there,
#     the .pc with zstd and xxhash as private requirements;
#   - the program converts a fixture through the C API, and the output is
#     the CLI's, byte for byte;
#   - `pkg-config --static --libs zerofold` is complete: `cc -static p.c
#     $(pkg-config --static --cflags --libs zerofold)` links a fully static
#     program against libzerofold.a, which runs and writes the same bytes.
#
#   bash tests/capi/install_test.sh [BUILD_DIR]   (default: build)
source "$(dirname "$0")/../cli/lib.sh"
BUILD=${1:-$ZF_ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ZF_ROOT/$BUILD ;; esac

D=$T/destdir
if ! meson install -C "$BUILD" --destdir "$D" --no-rebuild >"$T/install.log" 2>&1; then
  bad "meson install: $(tail -5 "$T/install.log")"
  zf_finish
  exit 1
fi
prefix=$(meson introspect "$BUILD" --buildoptions | "$PY" -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
libdir=$(meson introspect "$BUILD" --buildoptions | "$PY" -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"][0])')
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
L=$D$libdir

expect_true "libzerofold.a installed" "[ -f '$L/libzerofold.a' ]"
expect_true "zerofold.h installed" "[ -f '$D$prefix/include/zerofold/zerofold.h' ]"
expect_true "zerofold.pc installed" "[ -f '$L/pkgconfig/zerofold.pc' ]"
so=$(readlink -f "$L/libzerofold.so")
soname=$(objdump -p "$so" | awk '/SONAME/ {print $2}')
expect_true "soname $soname is versioned" "[ '$soname' = libzerofold.so.0 ] && [ -e '$L/$soname' ]"
others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^zf_' | head -5)
expect_true "exports only zf_* names (also: $others)" "[ -z '$others' ]"
expect_true "exports the C API" "nm -D --defined-only '$so' | grep -q ' zf_convert$'"
expect_true "zerofold.pc: Requires.private zstd and xxhash" \
  "grep -q '^Requires.private: .*libzstd' '$L/pkgconfig/zerofold.pc' && grep -q '^Requires.private: .*libxxhash' '$L/pkgconfig/zerofold.pc'"

cat >"$T/p.c" <<'CEOF'
#include <stdio.h>
#include <zerofold/zerofold.h>

int main(int argc, char** argv) {
  char message[512] = "";
  zf_error err = {0};
  err.message = message;
  err.message_size = sizeof message;
  zf_shrink_report report;
  if (argc != 3) return 2;
  if (zf_convert(argv[1], argv[2], NULL, &report, &err) != ZF_OK) {
    fprintf(stderr, "p: %s: %s\n", zf_code_name(err.code), message);
    return 1;
  }
  printf("zerofold %s: %llu tensors\n", zf_version(), (unsigned long long)report.tensors);
  return 0;
}
CEOF
export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D
if cc -std=c99 -Wall -Werror "$T/p.c" $(pkg-config --cflags --libs zerofold) -o "$T/p" 2>"$ERR"; then ok; else
  bad "cc p.c \$(pkg-config --cflags --libs zerofold): $(cat "$ERR")"
fi
LD_LIBRARY_PATH=$L "$T/p" "$F/torch/views.pt" "$T/p.safetensors" >"$OUT" 2>"$ERR"
expect_true "the program runs ($(cat "$ERR"))" "grep -q '^zerofold [0-9.]*: [0-9]* tensors$' '$OUT'"
expect_true "the program links the installed library" \
  "LD_LIBRARY_PATH='$L' ldd '$T/p' | grep -q '$L/libzerofold.so.0'"
"$Z" convert "$F/torch/views.pt" "$T/cli.safetensors" >/dev/null 2>&1
expect_true "its output is the CLI's" "cmp -s '$T/p.safetensors' '$T/cli.safetensors'"

# Fully static: libzerofold.a, the C++ runtime, libm, zstd and xxhash, all
# named by the .pc.
if cc -static -std=c99 -Wall -Werror "$T/p.c" $(pkg-config --static --cflags --libs zerofold) -o "$T/p_static" \
    2>"$ERR"; then ok; else
  bad "cc -static p.c \$(pkg-config --static --cflags --libs zerofold): $(grep -o 'undefined reference to .*' "$ERR" | sort -u | head -5) $(tail -2 "$ERR")"
fi
expect_true "the static program has no dynamic section" "[ -x '$T/p_static' ] && LC_ALL=C readelf -d '$T/p_static' | grep -q 'no dynamic section'"
"$T/p_static" "$F/torch/views.pt" "$T/p_static.safetensors" >"$OUT" 2>"$ERR"
expect_true "the static program runs ($(cat "$ERR"))" "grep -q '^zerofold [0-9.]*: [0-9]* tensors$' '$OUT'"
expect_true "its output is the CLI's" "cmp -s '$T/p_static.safetensors' '$T/cli.safetensors'"

zf_finish
