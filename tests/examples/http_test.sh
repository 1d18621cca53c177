#!/usr/bin/env bash
# examples/http/http_convert against a real nginx (Debian's nginx-light),
# started by this test on a free loopback port with its own config, prefix
# and logs in a temp folder, and stopped at exit. nginx serves a bloated
# torch file (16 params, views of one 64 MiB flat buffer: the output needs
# half of it), a normal one (every byte a tensor's), a Hugging Face folder
# (listed through autoindex JSON) and a Distributed Checkpoint folder.
#   - each conversion over HTTP is byte-identical to the CLI's of the same file;
#   - from nginx's access log: the bytes requested against the bytes the
#     output needs (its tensor data), and the requests inspect (metadata
#     only) makes, printed as figures; the bloated file must cost less than
#     its size, and metadata a handful of requests;
#   - the read plan (convert --dry-run --json) against the ranges the run
#     over HTTP requested: every planned byte, and little else.
#
#   ZEROFOLD=build/zerofold HTTP_CONVERT=build/examples/http/http_convert bash tests/examples/http_test.sh
source "$(dirname "$0")/../cli/lib.sh"
H=${HTTP_CONVERT:-$ZF_ROOT/build/examples/http/http_convert}
NGINX=${NGINX:-/usr/sbin/nginx}
[ -x "$H" ] || { bad "no $H (build with libcurl4-openssl-dev installed)"; zf_finish; exit 1; }
[ -x "$NGINX" ] || { bad "no $NGINX (Debian package nginx-light)"; zf_finish; exit 1; }

W=$T/www
mkdir -p "$W" "$T/nginx"
chmod 755 "$T"
"$PY" - "$W" <<'PYEOF' || { echo "FAIL: generating inputs"; exit 1; }
import sys, torch
w = sys.argv[1]
flat = torch.arange(16 << 20, dtype=torch.float32)
torch.save({f"p{i}": flat[i << 20:(i << 20) + (1 << 19)] for i in range(16)}, f"{w}/bloated.pt")
torch.save({f"layer{i}.weight": torch.full((512, 512), float(i)) for i in range(8)}, f"{w}/normal.pt")
PYEOF
cp -r "$F/hf/bloated" "$W/hf"
cp -r "$F/dcp/dim0_ws2/ckpt" "$W/dcp"

# A free port, then nginx in the foreground of its own process, one process.
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/nginx/nginx.conf" <<NGINX
daemon off;
master_process off;
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 64; }
http {
  log_format zf '\$request_method \$status \$body_bytes_sent "\$http_range" \$request_uri';
  access_log $T/nginx/access.log zf;
  client_body_temp_path $T/nginx/body;
  server {
    listen 127.0.0.1:$PORT;
    root $W;
    autoindex on;
    autoindex_format json;
  }
}
NGINX
"$NGINX" -p "$T/nginx" -c "$T/nginx/nginx.conf" -e "$T/nginx/error.log" &
NGINX_PID=$!
trap 'kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null; rm -rf "$T"' EXIT
for ((i = 0; i < 200; i++)); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" 2>/dev/null && break; sleep 0.05; done
URL=http://127.0.0.1:$PORT
LOG=$T/nginx/access.log

# log_since LINE: the access log's lines after LINE.
lines() { wc -l <"$LOG"; }
since() { tail -n +$(($1 + 1)) "$LOG"; }
# tensor_bytes FILE.safetensors: the data after the header.
tensor_bytes() { "$PY" -c 'import struct,sys,os; f=open(sys.argv[1],"rb"); n=struct.unpack("<Q", f.read(8))[0]; print(os.path.getsize(sys.argv[1]) - 8 - n)' "$1"; }

# convert NAME SRC OUT [FLAGS]: over HTTP and by path; both outputs equal;
# prints the figures; sets GOT (bytes requested) and NEED (tensor bytes).
convert_case() {
  local name=$1 src=$2 out=$3; shift 3
  local before; before=$(lines)
  if ! "$H" "$@" "$URL/$src" "$T/http_$out" >"$OUT" 2>"$ERR"; then bad "$name: http_convert: $(cat "$ERR")"; return; fi
  "$Z" convert "$@" "$W/$src" "$T/path_$out" >/dev/null 2>&1 || { bad "$name: zerofold convert"; return; }
  if [ -d "$T/path_$out" ]; then expect_same_folder "$name: same output as the path form" "$T/path_$out" "$T/http_$out"
  else expect_true "$name: same output as the path form" "cmp -s '$T/path_$out' '$T/http_$out'"; fi
  GOT=$(since "$before" | awk '$1 == "GET" {s += $3} END {print s + 0}')
  local requests gets
  requests=$(since "$before" | wc -l)
  gets=$(since "$before" | awk '$1 == "GET"' | wc -l)
  NEED=0
  local f
  for f in $(find "$T/http_$out" -name '*.safetensors' | sort); do NEED=$((NEED + $(tensor_bytes "$f"))); done
  [ -n "$(find "$T/http_$out" -name '*.bin')" ] && NEED=$(size "$W/$src")
  printf '%-28s requested %10d B in %3d GETs (%3d requests in all), output tensor data %10d B: %.3fx\n' \
    "$name" "$GOT" "$gets" "$requests" "$NEED" "$(echo "$GOT $NEED" | awk '{print $1 / $2}')"
}

convert_case "bloated.pt -> safetensors" bloated.pt b.safetensors
expect_true "bloated: requested ($GOT B) less than the file ($(size "$W/bloated.pt") B)" "[ $GOT -lt $(size "$W/bloated.pt") ]"
# Allowed over the data: 1%, and 256 KiB for the metadata (a few 64 KiB
# blocks: io/coalescing_source.h).
expect_true "bloated: requested ($GOT B) within 1% + 256 KiB over the output's data ($NEED B)" "[ $GOT -le $((NEED + NEED / 100 + 262144)) ]"
convert_case "normal.pt -> safetensors" normal.pt n.safetensors
expect_true "normal: requested ($GOT B) within 1% + 256 KiB over the output's data ($NEED B)" "[ $GOT -le $((NEED + NEED / 100 + 262144)) ]"

# The read plan (convert --dry-run --json "reads") against what the run
# over HTTP asked nginx for (the Range of each GET): every planned byte was
# requested, and the requested bytes outside the plan (metadata and the
# 64 KiB blocks of coalescing) stay under 256 KiB.
plan_case() {
  local src=$1 before
  rm -f "$T/plan_http.safetensors"
  before=$(lines)
  "$H" "$URL/$src" "$T/plan_http.safetensors" >/dev/null 2>"$ERR" || { bad "plan $src: http_convert: $(cat "$ERR")"; return; }
  since "$before" | awk '$1 == "GET" {print $4}' >"$T/ranges.txt"
  "$Z" convert --dry-run --json "$W/$src" "$T/plan_path.safetensors" >"$T/plan.json" 2>"$ERR" ||
    { bad "plan $src: convert --dry-run --json: $(cat "$ERR")"; return; }
  local verdict
  verdict=$("$PY" - "$T/plan.json" "$T/ranges.txt" "$(size "$W/$src")" <<'PYEOF'
import json, sys
plan = json.load(open(sys.argv[1]))
size = int(sys.argv[3])
planned = [(r["offset"], r["offset"] + r["length"]) for r in plan["reads"]]
assert sum(e - b for b, e in planned) == plan["read_bytes"], "read_bytes is not the sum of the ranges"
requested = []
for line in open(sys.argv[2]):
    spec = line.strip().strip('"')
    if not spec.startswith("bytes="):
        requested.append((0, size)); continue
    a, b = spec[len("bytes="):].split("-")
    requested.append((int(a), min(int(b) + 1, size)))
def union(ranges):
    out = []
    for b, e in sorted(ranges):
        if out and b <= out[-1][1]: out[-1] = (out[-1][0], max(out[-1][1], e))
        else: out.append((b, e))
    return out
def overlap(xs, ys):
    total = 0
    for b, e in xs:
        for c, d in ys:
            total += max(0, min(e, d) - max(b, c))
    return total
P, R = union(planned), union(requested)
planned_bytes = sum(e - b for b, e in P)
covered = overlap(P, R)
outside = sum(e - b for b, e in R) - overlap(R, P)
print(len(plan["reads"]), planned_bytes, covered, outside)
PYEOF
  ) || { bad "plan $src: checking the plan"; return; }
  read -r n planned covered outside <<<"$verdict"
  printf 'read plan %-12s %3d ranges, %10d B planned; requested over HTTP: %10d B of them, %8d B outside the plan\n' \
    "$src" "$n" "$planned" "$covered" "$outside"
  expect_true "plan $src: a plan at all ($n ranges)" "[ $n -gt 0 ]"
  expect_true "plan $src: every planned byte requested ($covered of $planned)" "[ $covered -eq $planned ]"
  expect_true "plan $src: requested outside the plan $outside B <= 256 KiB" "[ $outside -le 262144 ]"
}
plan_case bloated.pt
plan_case normal.pt
convert_case "hf folder -> safetensors" hf/ st/ --to safetensors --max-shard-size 20000

# Metadata: inspect reads no tensor bytes; count its requests.
for src in bloated.pt normal.pt hf/ dcp/; do
  before=$(lines)
  if "$H" --inspect "$URL/${src%/}" >"$OUT" 2>"$ERR"; then ok; else bad "inspect $src: $(cat "$ERR")"; continue; fi
  "$Z" inspect --json "$W/${src%/}" >"$T/inspect_path.json" 2>/dev/null
  sed "s|$URL/||g" "$OUT" >"$T/inspect_http.json"
  sed "s|$W/||g" "$T/inspect_path.json" >"$T/inspect_path_rel.json"
  expect_true "inspect $src: same listing as the path form" "cmp -s '$T/inspect_http.json' '$T/inspect_path_rel.json'"
  gets=$(since "$before" | awk '$1 == "GET"' | wc -l)
  heads=$(since "$before" | awk '$1 == "HEAD"' | wc -l)
  bytes=$(since "$before" | awk '$1 == "GET" {s += $3} END {print s + 0}')
  printf 'inspect %-12s metadata: %3d GETs (%8d B), %3d HEADs\n' "$src" "$gets" "$bytes" "$heads"
  # A zip costs its tail block (end records, central directory) and its
  # head block (data.pkl); no storage record's local header is read (the
  # zip reader reads a local header when its record is opened), so at most
  # 3 GETs per file, however many records. A Hugging Face folder's total
  # runs shrink's plan, which opens each storage record (its local header):
  # one more per zip record there. .metadata and index files one read each.
  records=$(find "$W/${src%/}" -type f | while read -r f; do
    "$PY" -c 'import sys, zipfile; print(len(zipfile.ZipFile(sys.argv[1]).infolist()) if zipfile.is_zipfile(sys.argv[1]) else 1)' "$f"
  done | awk '{s += $1} END {print s}')
  files=$(find "$W/${src%/}" -type f | wc -l)
  if [ "$src" = hf/ ]; then
    expect_true "inspect $src: at most 2 GETs per file and 1 per zip record ($gets GETs, $files files, $records records)" \
      "[ $gets -le $((2 * files + records)) ]"
  else
    expect_true "inspect $src: at most 3 GETs per file, whatever its records ($gets GETs, $files files, $records records)" \
      "[ $gets -le $((3 * files)) ]"
  fi
done

zf_finish
