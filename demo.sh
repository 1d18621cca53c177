#!/usr/bin/env bash
# The README's first command: installs the build tools if missing (Debian 12),
# builds zerofold, and shrinks the bundled bloated checkpoint (a DeepSpeed
# ZeRO-2 model saved as Hugging Face shards, each carrying whole flat buffers),
# printing the sizes before and after.
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(meson ninja-build pkg-config g++ libzstd-dev libxxhash-dev doctest-dev)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
[ -d build ] || meson setup build >/dev/null
meson compile -C build zerofold:executable >/dev/null

IN=fixtures/deepspeed/bloat_zero2_ws2_bf16
OUT=$(mktemp -d)/shrunk
echo "== zerofold inspect $IN   (bytes stored vs bytes the tensors reference)"
./build/zerofold inspect "$IN" | grep -E '^[^ ]|stored|tied'
echo
echo "== zerofold shrink $IN $OUT"
./build/zerofold shrink "$IN" "$OUT"
echo
echo "== the shrunk shards: every tensor in exactly sized storage"
./build/zerofold inspect "$OUT" | grep -E 'stored'
