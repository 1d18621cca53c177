#!/usr/bin/env bash
# The dtypes of 2026 and big-endian archives from the command line (issue 27): inspect,
# convert, diff and shrink of the torch 2.6 / safetensors 0.4.5 files in fixtures/dtypes and
# of source-following safetensors files (tests/interop/test_dtypes.py writes one; torch 2.6's
# verdicts on the outputs are checked there); one-line refusals where a format cannot hold a
# dtype, with no output left behind.
#
#   ZEROFOLD=build/zerofold bash tests/cli/dtypes_test.sh
source "$(dirname "$0")/lib.sh"

D=$F/dtypes
mkdir -p "$T/w"
cd "$T/w" || exit 1

# st_header FILE: the safetensors header's tensors as "name dtype shape" lines, by name.
st_header() {
  "$PY" - "$1" <<'EOF'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n])
h.pop("__metadata__", None)
for k in sorted(h):
    print(k, h[k]["dtype"], h[k]["shape"])
EOF
}

# writes_st FILE NAME:DTYPE:SHAPE:HEX...: a safetensors file laid out from the format
# (safetensors/src/tensor.rs at 24b0b28: Metadata::validate), tensors in argument order.
write_st() {
  "$PY" - "$@" <<'EOF'
import json, struct, sys
header, data = {}, b""
for spec in sys.argv[2:]:
    name, dtype, shape, hexbytes = spec.split(":")
    raw = bytes.fromhex(hexbytes)
    header[name] = {"dtype": dtype, "shape": json.loads(shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(text)) + text + data)
EOF
}

# make_big IN OUT: IN (a torch zip) made big-endian as a big-endian torch would have written
# it: each storage's bytes reversed in runs of the element size torch 2.6 swaps it by on load
# (serialization.py persistent_load lines 1918-1921, load_tensor 1891-1895; storage.py byteswap
# 420-426: the storage class's dtype, half for complex, none for UntypedStorage), and a
# byteorder record saying "big". The pickle is read with stub classes only (no code runs).
make_big() {
  "$PY" - "$1" "$2" <<'EOF'
import pickle, sys, zipfile
SIZES = {"DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2, "LongStorage": 8,
         "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1, "ByteStorage": 1, "BoolStorage": 1,
         "ComplexFloatStorage": 4, "ComplexDoubleStorage": 8, "UntypedStorage": 1}
units = {}
class Stub(dict):  # takes items (SETITEMS) and state (BUILD), runs nothing
    def __init__(self, *a, **k): pass
    def __setstate__(self, state): pass
def stub(module, name):
    return type(name, (Stub,), {"__module__": module})
class Scan(pickle.Unpickler):
    def find_class(self, module, name):
        return stub(module, name)
    def persistent_load(self, pid):
        units[pid[2]] = SIZES[pid[1].__name__]
        return None
zin = zipfile.ZipFile(sys.argv[1])
top = zin.namelist()[0].split("/")[0]
Scan(zin.open(top + "/data.pkl")).load()
with zipfile.ZipFile(sys.argv[2], "w") as zout:
    for n in zin.namelist():
        data = zin.read(n)
        rel = n[len(top) + 1:]
        if rel.startswith("data/"):
            u = units[rel[5:]]
            data = b"".join(data[i:i + u][::-1] for i in range(0, len(data), u))
        if rel != "byteorder":
            zout.writestr(n, data)
    zout.writestr(top + "/byteorder", b"big")
EOF
}

# --- torch 2.6's _rebuild_tensor_v3 dtypes ------------------------------------------------
run_z inspect "$D/torch26_v3_dtypes.pt"
expect "inspect v3 dtypes" 0 ""
for dt in uint16 uint32 uint64 float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz complex32; do
  expect_true "inspect lists $dt" "grep -q ' $dt ' '$OUT'"
done
run_z convert "$D/torch26_v3_dtypes.pt" v3.safetensors
expect "complex32 has no safetensors dtype" 1 "zerofold: $D/torch26_v3_dtypes.pt: c32: unsupported: complex32 tensors have no safetensors dtype
"
expect_empty_dir "refused convert" "$T/w"
run_z convert --only 'u*,f8*' "$D/torch26_v3_dtypes.pt" v3.safetensors
expect "convert v3 dtypes to safetensors" 0 ""
expect_true "v3 dtypes' codes" "[ \"\$(st_header v3.safetensors)\" = \"f8_e4m3fn F8_E4M3 [2, 4]
f8_e4m3fnuz F8_E4M3FNUZ [6]
f8_e5m2 F8_E5M2 [2, 4]
f8_e5m2fnuz F8_E5M2FNUZ [6]
u16 U16 [4]
u16_view U16 [4]
u32 U32 [4]
u64 U64 [4]\" ]"
run_z convert v3.safetensors v3.pt
expect "safetensors of v3 dtypes to torch" 0 ""
run_z diff "$D/torch26_v3_dtypes.pt" v3.pt --only 'u*,f8*'
expect "v3 dtypes survive the round trip" 0 ""
run_z diff v3.safetensors v3.pt
expect "safetensors and torch agree bit for bit" 0 ""
run_z convert --to torch "$D/torch26_v3_dtypes.pt" v3all.pt
expect "torch to torch keeps every v3 dtype" 0 ""
run_z diff "$D/torch26_v3_dtypes.pt" v3all.pt
expect "torch to torch is equal" 0 ""
run_z shrink "$D/torch26_v3_dtypes.pt" v3shrunk.pt
expect "shrink of v3 dtypes" 0 ""

# --- safetensors written by safetensors 0.4.5 (uint16/32/64, float8) ----------------------
for f in st_unsigned st_f8; do
  run_z convert "$D/$f.safetensors" "$f.out.safetensors"
  expect "$f: safetensors to safetensors (no torch-1.13 limit)" 0 ""
  run_z diff "$D/$f.safetensors" "$f.out.safetensors"
  expect "$f: equal after safetensors to safetensors" 0 ""
  run_z convert "$D/$f.safetensors" "$f.pt"
  expect "$f: safetensors to torch" 0 ""
  run_z diff "$D/$f.safetensors" "$f.pt"
  expect "$f: equal after safetensors to torch" 0 ""
done
# torch 2.6 pickles the state dict st_f8.safetensors loads to byte for byte as zerofold does.
expect_true "st_f8.pt's data.pkl is torch 2.6's" "\"\$PY\" -c '
import sys, zipfile
def pkl(p):
    z = zipfile.ZipFile(p)
    return z.read([n for n in z.namelist() if n.endswith(\"/data.pkl\")][0])
sys.exit(pkl(\"st_f8.pt\") != pkl(\"$D/torch26_st_f8.pt\"))'"

# --- source-following: F4, F8_E8M0, the FNUZ types, F6 ------------------------------------
rm -f -- *
write_st new.safetensors e8m0:F8_E8M0:[4]:007f80ff f4:F4:[2,4]:2143f78e fnuz:F8_E4M3FNUZ:[3]:008044 \
  fnuz5:F8_E5M2FNUZ:[2]:42c4
run_z inspect new.safetensors
expect "inspect new dtypes" 0 ""
expect_true "F4 listed as torch reads it" "grep -Eq '^  f4 +float4_e2m1fn_x2 \\[2, 2\\] ' '$OUT'"
expect_true "F8_E8M0 listed" "grep -Eq '^  e8m0 +float8_e8m0fnu \\[4\\] ' '$OUT'"
run_z convert new.safetensors new.pt
expect "new dtypes to torch" 0 ""
run_z convert new.pt back.safetensors
expect "and back" 0 ""
expect_true "F4 shape and codes come back" "[ \"\$(st_header back.safetensors)\" = \"\$(st_header new.safetensors)\" ]"
run_z diff new.safetensors back.safetensors
expect "new dtypes: bit for bit" 0 ""
run_z diff new.safetensors new.pt
expect "new dtypes: safetensors vs torch" 0 ""
run_z convert new.safetensors copy.safetensors
expect "new dtypes: safetensors to safetensors" 0 ""
run_z diff new.safetensors copy.safetensors
expect "new dtypes: copy equal" 0 ""
rm -f -- *
write_st odd.safetensors f4:F4:[2,3]:010203
run_z convert odd.safetensors odd.pt
expect "F4 with an odd last dimension" 1 "zerofold: odd.safetensors: f4 @ 9: unsupported: F4 tensor of shape [2, 3] has no torch shape: torch's float4_e2m1fn_x2 holds two F4 values per element, so the last dimension must be even
"
write_st f6.safetensors w:F6_E2M3:[4]:010203
run_z inspect f6.safetensors
expect "inspect F6" 0 ""
expect_true "F6 listed by its code" "grep -Eq '^  w +F6_E2M3 +\\[4\\] ' '$OUT'"
run_z convert f6.safetensors f6.pt
expect "F6 in torch: refused" 1 "zerofold: f6.safetensors: w @ 9: unsupported: dtype F6_E2M3 has no torch dtype
"
run_z convert --to torch f6.safetensors f6dir/
expect "F6 in torch shards: refused" 1 "zerofold: f6.safetensors: w @ 9: unsupported: dtype F6_E2M3 has no torch dtype
"
expect_true "no output" "[ ! -e f6.pt ] && [ ! -e odd.pt ] && [ ! -e f6dir ]"
# Safetensors to safetensors keeps what torch cannot hold, byte for byte.
write_st f6all.safetensors w:F6_E2M3:[4]:010203 v:F6_E3M2:[2,4]:000102030405 f4:F4:[2,3]:070809 x:F32:[1]:0000803f
run_z convert --verify f6all.safetensors f6out.safetensors
expect "F6 and odd F4: safetensors to safetensors" 0 ""
expect_true "codes and shapes kept" "[ \"\$(st_header f6out.safetensors)\" = \"f4 F4 [2, 3]
v F6_E3M2 [2, 4]
w F6_E2M3 [4]
x F32 [1]\" ]"
run_z diff f6all.safetensors f6out.safetensors
expect "F6: equal bit for bit" 0 ""
write_st f6other.safetensors w:F6_E2M3:[4]:010204 v:F6_E3M2:[2,4]:000102030405 f4:F4:[2,3]:070809 x:F32:[1]:0000803f
run_z diff f6all.safetensors f6other.safetensors
expect "F6: a changed byte is found" 1 ""
expect_true "diff names the tensor" "grep -q '^! w: ' '$OUT'"

# --- big-endian archives --------------------------------------------------------------------
rm -f -- *
run_z inspect "$D/torch26_big.pt"
expect "inspect big-endian" 0 ""
expect_true "inspect says big" "[ \"\$(tail -n 1 '$OUT')\" = '  byteorder big: values are read byte-swapped, as torch 2.x loads them' ]"
run_z inspect "$D/torch26_little.pt"
expect_true "and not for little" "! grep -q byteorder '$OUT'"
run_z diff "$D/torch26_little.pt" "$D/torch26_big.pt"
expect "diff swaps big-endian storages" 0 ""
expect_true "diff: all equal" "grep -q '10 tensors in both: 10 equal, 0 different' '$OUT'"
run_z convert "$D/torch26_big.pt" big.safetensors
expect "convert big-endian to safetensors" 0 ""
"$Z" convert "$D/torch26_little.pt" little.safetensors >/dev/null 2>&1 || fail "convert little"
expect_true "the same file as from the little-endian one" "cmp -s big.safetensors little.safetensors"
run_z convert --to torch "$D/torch26_big.pt" big.pt
expect "convert big-endian to torch" 0 ""
expect_true "records little" "[ \"\$(unzip -p big.pt '*/byteorder')\" = little ]"
run_z diff big.pt "$D/torch26_little.pt"
expect "converted equals little" 0 ""
run_z convert --to torch --verify "$D/torch26_big.pt" bigv.pt
expect "convert --verify of big-endian" 0 ""
run_z shrink "$D/torch26_big.pt" shrunk.pt
expect "shrink big-endian" 0 ""
expect_true "shrink keeps the record" "[ \"\$(unzip -p shrunk.pt '*/byteorder')\" = big ]"
expect_true "shrink keeps the bytes" "[ \"\$(unzip -p shrunk.pt '*/data/0' | od -An -tx1)\" = \"\$(unzip -p '$D/torch26_big.pt' '*/data/0' | od -An -tx1)\" ]"
run_z diff shrunk.pt "$D/torch26_little.pt"
expect "shrunk reads as torch loads it" 0 ""
run_z shrink --verify --force "$D/torch26_big.pt" shrunk.pt
expect "shrink --verify of big-endian" 0 ""
"$Z" shrink --quiet - - <"$D/torch26_big.pt" >streamed.pt 2>"$ERR"
RC=$?
expect "plain shrink of a big-endian stream" 0 ""
expect_true "passes unchanged" "cmp -s streamed.pt '$D/torch26_big.pt'"
"$Z" convert --to torch - - <"$D/torch26_big.pt" >streamed2.pt 2>"$ERR"
RC=$?
expect "convert of a big-endian stream" 1 "zerofold: <stdin>: unsupported: byteorder record says big-endian; from a stream only a plain shrink takes it (save it to a file first)
"
expect_true "writes nothing" "[ ! -s streamed2.pt ]"

# merge: a DeepSpeed ZeRO-1 checkpoint whose every file is big-endian merges to the same model.
rm -rf -- *
cp -r "$F/deepspeed/zero1_ws2_fp16/ckpt" little
cp -r little big
for f in big/global_step2/*.pt; do make_big "little/global_step2/${f##*/}" "$f" || fail "make_big $f"; done
run_z diff little/global_step2/mp_rank_00_model_states.pt big/global_step2/mp_rank_00_model_states.pt
expect "big-endian model states read as the little ones" 0 ""
run_z merge --quiet little out_little
expect "merge little" 0 ""
run_z merge --quiet big out_big
expect "merge big-endian" 0 ""
expect_true "the same merged model" "cmp -s out_little/pytorch_model.bin out_big/pytorch_model.bin"

zf_finish
