#!/usr/bin/env bash
# The files zerofold writes, as the file system shows them: a new output gets
# mode 0666 & ~umask (as `touch` or a shell redirection makes it), a new folder
# 0777 & ~umask; a file replaced in place or under --force keeps its mode, owner
# and group; a symlink OUT is written through (the link stays a link, its final
# target is replaced, in the target's own folder), so a Hugging Face hub cache
# shrunk in place keeps its snapshot links and shrinks on disk; the free space
# checked is that of the file system holding the file replaced. Run as root
# for the owner checks (skipped otherwise).
#
#   ZEROFOLD=build/zerofold bash tests/cli/files_test.sh
source "$(dirname "$0")/lib.sh"

views=$F/torch/views.pt
mkdir -p "$T/w"
cd "$T/w" || exit 1

mode() { stat -c %a "$1"; }
owner() { stat -c %U:%G "$1"; }

# expect_mode NAME PATH WANT
expect_mode() {
  if [ "$(mode "$2")" = "$3" ]; then ok; else bad "$1: $2 has mode $(mode "$2"), want $3"; fi
}

# --- new outputs: 0666 & ~umask, folders 0777 & ~umask -----------------------------------
for u in 002 022 077; do
  want_file=$(printf '%o' $((0666 & ~8#$u)))
  want_dir=$(printf '%o' $((0777 & ~8#$u)))
  rm -rf "$T/w"/*
  (umask "$u" && "$Z" shrink --quiet "$views" out.pt) >"$OUT" 2>"$ERR" || bad "umask $u: shrink: $(cat "$ERR")"
  expect_mode "umask $u: shrink into a new file" out.pt "$want_file"
  (umask "$u" && "$Z" convert --quiet --to safetensors "$views" conv/deeper/) >"$OUT" 2>"$ERR" || bad "umask $u: convert: $(cat "$ERR")"
  expect_mode "umask $u: convert into a new folder: the file" conv/deeper/model.safetensors "$want_file"
  expect_mode "umask $u: convert into a new folder: the folder" conv/deeper "$want_dir"
  expect_mode "umask $u: convert into a new folder: its parent" conv "$want_dir"
  (umask "$u" && "$Z" shrink --quiet "$F/hf/bloated" hf/) >"$OUT" 2>"$ERR" ||
    bad "umask $u: shrink a folder: $(cat "$ERR")"
  for f in hf/*; do expect_mode "umask $u: shrink a folder: $f" "$f" "$want_file"; done
  (umask "$u" && "$Z" merge --quiet "$F/deepspeed/zero3_ws3_fp16/ckpt" merged.bin) >"$OUT" 2>"$ERR" ||
    bad "umask $u: merge: $(cat "$ERR")"
  expect_mode "umask $u: merge into a new file" merged.bin "$want_file"
  (umask "$u" && "$Z" shrink --quiet "$views" - | "$Z" convert --quiet - piped.pt) >"$OUT" 2>"$ERR" ||
    bad "umask $u: convert from a pipe: $(cat "$ERR")"
  expect_mode "umask $u: convert from a pipe" piped.pt "$want_file"
done
rm -rf "$T/w"/*

# --- replaced files keep their mode, owner and group --------------------------------------
cp "$views" private.pt
chmod 0640 private.pt
(umask 000 && "$Z" shrink --quiet --in-place private.pt) >"$OUT" 2>"$ERR" || bad "in place 0640: $(cat "$ERR")"
expect_mode "in place keeps the mode" private.pt 640
[ "$(size private.pt)" -lt "$(size "$views")" ] && ok || bad "in place 0640: not shrunk"

cp "$views" readonly.pt
chmod 0400 readonly.pt
run_z shrink --quiet --in-place readonly.pt
expect "in place of a read-only file" 0 ""
expect_mode "in place keeps a read-only mode" readonly.pt 400

"$Z" shrink --quiet "$views" out.pt
chmod 0600 out.pt
(umask 000 && "$Z" shrink --quiet --force "$F/torch/state_dict.pt" out.pt) >"$OUT" 2>"$ERR" || bad "--force: $(cat "$ERR")"
expect_mode "--force over an output keeps its mode" out.pt 600
mkdir conv && "$Z" convert --quiet --to safetensors "$views" conv/ && chmod 0604 conv/model.safetensors
(umask 077 && "$Z" convert --quiet --to safetensors --force "$F/torch/state_dict.pt" conv/) >"$OUT" 2>"$ERR" || bad "--force folder: $(cat "$ERR")"
expect_mode "--force over a folder's file keeps its mode" conv/model.safetensors 604

# While written, a replacement is no more open than the file it replaces:
# a 32 MiB in-place rewrite of a 0640 file is stopped (SIGSTOP) once its
# temp file shows, which is then checked (skipped if the run ends first).
"$PY" - big.pt <<'PYEOF' || bad "generating big.pt"
import sys, torch
flat = torch.arange(16 << 20, dtype=torch.float32)
torch.save({f"p{i}": flat[i << 20:(i << 20) + (1 << 19)] for i in range(16)}, sys.argv[1])
PYEOF
chmod 0640 big.pt
(umask 000 && exec "$Z" shrink --quiet --in-place big.pt) &
pid=$!
seen=
while kill -0 "$pid" 2>/dev/null; do
  for f in .*zerofold-tmp* *zerofold-tmp*; do
    [ -f "$f" ] || continue
    kill -STOP "$pid" 2>/dev/null && seen=$(mode "$f") && kill -CONT "$pid"
    break 2
  done
done
wait "$pid" || bad "in place of big.pt: exit $?"
if [ -n "$seen" ]; then
  [ "$seen" = 640 ] && ok || bad "a 0640 file's replacement had mode $seen while written"
else
  echo "files_test.sh: the in-place rewrite ended before its temp file was seen: that check is skipped"
fi
expect_mode "in place of big.pt keeps the mode" big.pt 640
rm -f big.pt

if [ "$(id -u)" = 0 ]; then
  cp "$views" theirs.pt
  chown nobody:nogroup theirs.pt
  chmod 0640 theirs.pt
  run_z shrink --quiet --in-place theirs.pt
  expect "in place of another user's file" 0 ""
  if [ "$(owner theirs.pt)" = nobody:nogroup ]; then ok; else bad "in place keeps owner and group: $(owner theirs.pt)"; fi
  expect_mode "in place of another user's file keeps the mode" theirs.pt 640
  [ "$(size theirs.pt)" -lt "$(size "$views")" ] && ok || bad "another user's file: not shrunk"
  # The group alone, when only it differs (root could set both; the owner
  # stays root, the group nogroup).
  cp "$views" group.pt
  chgrp nogroup group.pt
  run_z shrink --quiet --in-place group.pt
  if [ "$(owner group.pt)" = root:nogroup ]; then ok; else bad "in place keeps the group: $(owner group.pt)"; fi
  # A user without privilege, in a folder it may write (nobody, with the
  # supplementary group users): a file of another owner becomes its own,
  # keeping the group it is a member of and the mode; one of a group it is
  # no member of gets its own group (the chown refused, the write not).
  mkdir -m 0777 shared
  cp "$views" shared/group.pt && chown root:users shared/group.pt && chmod 0640 shared/group.pt
  cp "$views" shared/other.pt && chown root:root shared/other.pt && chmod 0604 shared/other.pt
  if command -v setpriv >/dev/null && getent group users >/dev/null; then
    as_nobody() { setpriv --reuid=nobody --regid=nogroup --groups=users "$Z" "$@" >"$OUT" 2>"$ERR"; RC=$?; }
    as_nobody shrink --quiet --in-place shared/group.pt
    expect "in place as nobody, a member of the file's group" 0 ""
    if [ "$(owner shared/group.pt)" = nobody:users ]; then ok; else bad "as a member: $(owner shared/group.pt)"; fi
    expect_mode "in place as a member of the group keeps the mode" shared/group.pt 640
    as_nobody shrink --quiet --in-place shared/other.pt
    expect "in place as nobody, no member of the file's group" 0 ""
    if [ "$(owner shared/other.pt)" = nobody:nogroup ]; then ok; else bad "as no member: $(owner shared/other.pt)"; fi
    expect_mode "in place as no member of the group keeps the mode" shared/other.pt 604
    [ "$(ls -A shared | tr '\n' ' ')" = "group.pt other.pt " ] && ok || bad "as nobody: left $(ls -A shared)"
  else
    echo "files_test.sh: no setpriv or no group users: the checks as another user are skipped"
  fi
else
  echo "files_test.sh: not root: the owner and group checks are skipped"
fi

# --- symlinks: written through, the link stays -------------------------------------------
"$Z" shrink --quiet "$views" want.pt
mkdir -p real links
cp "$views" real/model.pt
chmod 0640 real/model.pt
ln -s ../real/model.pt links/model.pt
before=$(inode real/model.pt)
run_z shrink --in-place --quiet links/model.pt
expect "in place through a symlink" 0 ""
[ -L links/model.pt ] && [ "$(readlink links/model.pt)" = ../real/model.pt ] && ok ||
  bad "in place through a symlink: the link is gone: $(ls -l links)"
[ "$(inode real/model.pt)" != "$before" ] && ok || bad "in place through a symlink: the target not replaced"
cmp -s real/model.pt want.pt && ok || bad "in place through a symlink: the target is not the shrunk file"
expect_mode "in place through a symlink keeps the target's mode" real/model.pt 640
[ "$(ls -A links)" = model.pt ] && [ "$(ls -A real)" = model.pt ] && ok ||
  bad "in place through a symlink: left $(ls -A links real)"

# A chain of links, relative and absolute, across folders.
rm -rf real links && mkdir -p a/b c real
cp "$views" real/blob
ln -s "$PWD/real/blob" c/hop
ln -s ../../c/hop a/b/model.pt
run_z shrink --in-place --quiet a/b/model.pt
expect "in place through a chain of links" 0 ""
[ -L a/b/model.pt ] && [ -L c/hop ] && [ -f real/blob ] && ! [ -L real/blob ] && ok ||
  bad "chain: $(ls -l a/b c real)"
cmp -s real/blob want.pt && ok || bad "chain: the final target is not the shrunk file"
[ "$(ls -A a/b c real | tr '\n' ' ')" = "a/b: model.pt  c: hop  real: blob " ] && ok ||
  bad "chain: left $(ls -A a/b c real | tr '\n' ' ')"

# --force onto a symlink OUT writes through it too.
rm -rf real a c && mkdir real && cp "$views" real/old.pt && ln -s real/old.pt link.pt
run_z shrink --quiet --force "$views" link.pt
expect "--force onto a symlink" 0 ""
[ -L link.pt ] && cmp -s real/old.pt want.pt && ok || bad "--force onto a symlink: $(ls -l link.pt real)"
# A symlink OUT to the input is the input (refused without --in-place).
run_z shrink --quiet --force real/old.pt link.pt
expect "a symlink OUT to IN" 2 "zerofold: shrink: OUT is IN; use --in-place to replace the input
zerofold: hint: run 'zerofold shrink --help'
"
rm -rf real link.pt want.pt
# A loop of links: an I/O error (exit 3), the links as they were.
ln -s loop2.pt loop1.pt && ln -s loop1.pt loop2.pt
run_z shrink --quiet "$views" loop1.pt
expect "a loop of links as OUT" 3 "zerofold: loop1.pt: io: stat: Too many levels of symbolic links
"
[ "$(readlink loop1.pt) $(readlink loop2.pt)" = "loop2.pt loop1.pt" ] && [ "$(ls -A | grep -c zerofold-tmp)" = 0 ] && ok ||
  bad "a loop of links: $(ls -lA)"
rm -f loop1.pt loop2.pt

# --- a Hugging Face hub cache shrunk in place ---------------------------------------------
# models--org--name/snapshots/REV/FILE -> ../../blobs/SHA256, as huggingface_hub lays it out.
repo=$T/hub/models--org--tiny
rev=0123456789abcdef0123456789abcdef01234567
mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$rev"
echo "$rev" >"$repo/refs/main"
for f in "$F/hf/bloated"/*; do
  h=$(sha256sum "$f" | cut -c1-64)
  cp "$f" "$repo/blobs/$h"
  ln -s "../../blobs/$h" "$repo/snapshots/$rev/$(basename "$f")"
done
# A second revision sharing the blobs.
cp -a "$repo/snapshots/$rev" "$repo/snapshots/old"
links_before=$(cd "$repo/snapshots" && find . -type l -printf '%p -> %l\n' | sort)
blobs_before=$(ls "$repo/blobs")
du_before=$(du -s -B1 "$T/hub" | cut -f1)
bytes_before=$(du -s -B1 --apparent-size "$T/hub" | cut -f1)
run_z shrink --in-place "$repo/snapshots/$rev"
[ "$RC" = 0 ] && ok || bad "hub cache: exit $RC: $(cat "$ERR")"
links_after=$(cd "$repo/snapshots" && find . -type l -printf '%p -> %l\n' | sort)
[ "$links_after" = "$links_before" ] && ok || bad "hub cache: links changed: $links_after"
[ -z "$(find "$repo/snapshots" ! -type l ! -type d)" ] && ok ||
  bad "hub cache: regular files in snapshots: $(find "$repo/snapshots" ! -type l ! -type d)"
[ "$(ls -A "$repo/blobs")" = "$blobs_before" ] && ok || bad "hub cache: blobs now $(ls -A "$repo/blobs")"
du_after=$(du -s -B1 "$T/hub" | cut -f1)
[ "$du_after" -lt "$du_before" ] && ok || bad "hub cache: du -s grew or stayed: $du_before -> $du_after bytes"
# The disk gained what the files lost (the shards shrunk, the index's
# total_size rewritten): each blob is counted once, however many links.
shrunk=0
for f in "$repo/snapshots/$rev"/*; do
  shrunk=$((shrunk + $(size "$F/hf/bloated/$(basename "$f")") - $(stat -L -c %s "$f")))
done
bytes_after=$(du -s -B1 --apparent-size "$T/hub" | cut -f1)
[ "$shrunk" -gt 0 ] && [ $((bytes_before - bytes_after)) = "$shrunk" ] && ok ||
  bad "hub cache: the files shrunk by $shrunk bytes, du -s --apparent-size by $((bytes_before - bytes_after))"
ZF_TESTS=$ZF_ROOT/tests "$PY" - "$F/hf/bloated" "$repo/snapshots/$rev" "$repo/snapshots/old" <<'EOF' >"$OUT" 2>&1 || bad "hub cache: torch: $(cat "$OUT")"
import json, os, sys
sys.path.insert(0, os.environ["ZF_TESTS"])
import torch_oracle as o
src, *snaps = sys.argv[1:]
for snap in snaps:
    index = json.load(open(os.path.join(snap, "pytorch_model.bin.index.json")))
    n = 0
    for shard in sorted(set(index["weight_map"].values())):
        want = o.named_tensors(o.load(os.path.join(src, shard)))
        got = o.named_tensors(o.load(os.path.join(snap, shard)))
        assert list(got) == list(want), (shard, list(got), list(want))
        for name in want:
            diff = o.compare_tensors(want[name], got[name])
            assert not diff, (snap, shard, name, diff)
            n += 1
    assert n == len(index["weight_map"]), (n, len(index["weight_map"]))
EOF

# --- free space: checked on the file system holding the file replaced --------------------
# A 64 KiB tmpfs, filled: a link on it to a file elsewhere is shrunk in place
# (the temp file goes beside the target); a link elsewhere to a file on it is
# refused up front (exit 3), the file and the link as they were. Root only.
small=$T/small
mkdir -p "$small" roomy
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=64k zf_files_test "$small" 2>/dev/null; then
  trap 'umount "$T/small" 2>/dev/null; rm -rf "$T"' EXIT
  cp "$views" roomy/far.pt
  ln -s "$PWD/roomy/far.pt" "$small/link.pt"
  cp "$views" "$small/near.pt"
  ln -s "$small/near.pt" roomy/link.pt
  mkdir "$small/blobs" snap
  for f in "$F/hf/bloated"/*; do cp "$f" "$small/blobs/"; ln -s "$small/blobs/$(basename "$f")" snap/; done
  dd if=/dev/zero of="$small/fill" bs=1k count=64 2>/dev/null
  avail=$(df -B1 --output=avail "$small" | tail -1)
  [ "$avail" -lt 4096 ] && ok || bad "free space: the tmpfs still holds $avail bytes free"
  run_z shrink --in-place --quiet "$small/link.pt"
  expect "free space: a link on a full file system to a file elsewhere" 0 ""
  [ -L "$small/link.pt" ] && [ "$(size roomy/far.pt)" -lt "$(size "$views")" ] && ok ||
    bad "free space: a link on a full file system: $(ls -l "$small" roomy)"
  run_z shrink --in-place --quiet roomy/link.pt
  [ "$RC" = 3 ] && grep -q "needs [0-9]* bytes for the output, and the file system holds [0-9]* free; nothing was written" "$ERR" &&
    ok || bad "free space: a link to a file on a full file system: exit $RC: $(cat "$ERR")"
  [ -L roomy/link.pt ] && cmp -s "$small/near.pt" "$views" && [ "$(ls -A roomy | tr '\n' ' ')" = "far.pt link.pt " ] && ok ||
    bad "free space: a link to a full file system: $(ls -lA roomy)"
  run_z shrink --in-place --quiet snap
  [ "$RC" = 3 ] && grep -q "needs [0-9]* bytes for the output" "$ERR" && ok ||
    bad "free space: a folder of links to a full file system: exit $RC: $(cat "$ERR")"
  diff -r "$small/blobs" "$F/hf/bloated" >/dev/null && ok || bad "free space: blobs changed: $(ls -lA "$small/blobs")"
  umount "$small"
else
  echo "files_test.sh: cannot mount a tmpfs: the free-space checks are skipped"
fi

zf_finish
