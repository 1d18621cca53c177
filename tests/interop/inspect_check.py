#!/usr/bin/python3
"""Checks `zerofold inspect --json FILE` against real torch, fixture by fixture.

    /usr/bin/python3 tests/interop/inspect_check.py ZEROFOLD [FILE ...]
    /usr/bin/python3 tests/interop/inspect_check.py --self-test

With no FILE, every checkpoint under fixtures/ is checked. Exit 0 if all agree, 1 otherwise
(one line per disagreement, then "N files checked, M disagree").

For each file torch loads (tests/torch_oracle.py), zerofold must print
    {"files":[{"path":..., "format":"torch-zip"|"torch-legacy",
               "tensors":[{"name", "path", "dtype", "shape", "stride", "storage", "offset",
                           "nbytes"}],
               "storages":[{"key", "dtype", "nbytes", "referenced_nbytes"}],
               "stored_bytes", "referenced_bytes", "unsafe_globals":[...]}]}
with, compared with torch: the same tensors in the same order (depth-first, first visit, one
per path), each with the same name, path, dtype, shape, stride, storage offset (elements) and
nbytes (numel x itemsize; packed quint4x2/quint2x4: the bytes holding numel elements); the same storage sharing (two tensors have the same "storage" key
iff torch gives them the same storage); per storage the same dtype and nbytes and a
referenced_nbytes equal to the union of its views' byte extents, computed here from torch's
tensors; stored_bytes and referenced_bytes the sums of those; no unsafe globals. Each
storage key must also name the storage's record in the file (zip: TOP/data/KEY with at least
nbytes bytes; legacy: an entry of the storage key list).
Files torch 1.13 loads but zerofold must refuse (REFUSE) need an "error" object with that
code; unsafe files need the unsafe globals listed (or an "unsafe" error).

--self-test builds, from torch alone, the JSON zerofold should print for every fixture, checks
that it passes, and that each of a set of single-field corruptions of it fails.
"""

import copy
import json
import os
import pickletools
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_list import FIXTURES, ROOT, checkpoint_files as fixture_files  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch_oracle as oracle  # noqa: E402

# Files torch loads or refuses, but zerofold must refuse, with this error code.
REFUSE = {
    "bad/torchscript.pt": "unsupported",
}
# Files zerofold reads but must flag: the unsafe globals it must list (any, if empty).
UNSAFE = {
    "bad/unsafe_os_system.pt": ["posix.system"],
    "bad/unsafe_eval.pt": ["builtins.eval"],
    "bad/unsafe_getattr.pt": [],
}


# ---------------------------------------------------------------------------------------
# What torch says

def expected_entry(path):
    """The inspect entry zerofold should print for path, built from torch (storage keys are
    the oracle's ids, not the file's keys)."""
    loaded = oracle.load_info(path)
    d = oracle.describe(loaded.obj)
    tensors = []
    for t in d["tensors"]:
        tensors.append({"name": t["name"], "path": t["path"], "dtype": t["dtype"],
                        "shape": t["shape"], "stride": t["stride"], "storage": t["storage"],
                        "offset": t["storage_offset"], "nbytes": t["nbytes"]})
    storages = [{"key": s["id"], "dtype": s["dtype"], "nbytes": s["nbytes"],
                 "referenced_nbytes": s["referenced_nbytes"]} for s in d["storages"]]
    return {"path": path, "format": loaded.format, "tensors": tensors, "storages": storages,
            "stored_bytes": sum(s["nbytes"] for s in storages),
            "referenced_bytes": sum(s["referenced_nbytes"] for s in storages),
            "unsafe_globals": []}


def storage_records(path, fmt):
    """zip: {key: record size} of TOP/data/KEY; legacy: {key: None} from the key list."""
    if fmt == "torch-zip":
        with zipfile.ZipFile(path) as z:
            infos = z.infolist()
            top = infos[0].filename.split("/")[0]
            prefix = f"{top}/data/"
            return {i.filename[len(prefix):]: i.file_size for i in infos
                    if i.filename.startswith(prefix) and "/" not in i.filename[len(prefix):]}
    with open(path, "rb") as f:
        for _ in range(4):  # magic, protocol, sys_info, the object
            for _ in pickletools.genops(f):
                pass
        return {arg: None for _, arg, _ in pickletools.genops(f) if isinstance(arg, str)}


# ---------------------------------------------------------------------------------------
# Comparing

TENSOR_FIELDS = ("name", "path", "dtype", "shape", "stride", "offset", "nbytes")


def _error_code(entry):
    err = entry.get("error")
    if not isinstance(err, dict):
        return None
    code = str(err.get("code", "")).lower()
    return code[1:] if code.startswith("k") and code[1:] in ("unsupported", "unsafe") else code


def _normalized(names):
    out = set()
    for n in names:
        module, _, name = str(n).rpartition(".")
        out.add(".".join(oracle._normalize(module, name)))
    return out


def compare_entry(path, fmt, want, got, records=None):
    """Problems with zerofold's entry `got` against torch's `want` (expected_entry)."""
    problems = []
    if "error" in got:
        return [f"zerofold refused a file torch loads: {got['error']}"]
    if got.get("format") != fmt:
        problems.append(f"format {got.get('format')!r}, torch file is {fmt!r}")
    wt, gt = want["tensors"], got.get("tensors", [])
    if [t["name"] for t in wt] != [t.get("name") for t in gt]:
        problems.append(f"tensor names {[t.get('name') for t in gt]} != torch's "
                        f"{[t['name'] for t in wt]}")
        return problems
    key_of_id, id_of_key = {}, {}
    for w, g in zip(wt, gt):
        for field in TENSOR_FIELDS:
            if g.get(field) != w[field]:
                problems.append(f"{w['name']!r}: {field} {g.get(field)!r} != torch's "
                                f"{w[field]!r}")
        key, sid = g.get("storage"), w["storage"]
        if key_of_id.setdefault(sid, key) != key:
            problems.append(f"{w['name']!r}: storage {key!r}, but torch puts it on the "
                            f"storage of tensors zerofold keys {key_of_id[sid]!r}")
        if id_of_key.setdefault(key, sid) != sid:
            problems.append(f"{w['name']!r}: zerofold shares storage {key!r} with tensors "
                            f"torch keeps on another storage")
    want_storages = {s["key"]: s for s in want["storages"]}
    got_storages = {s.get("key"): s for s in got.get("storages", [])}
    if len(got_storages) != len(got.get("storages", [])):
        problems.append("storage keys repeat in \"storages\"")
    if set(got_storages) != set(id_of_key):
        problems.append(f"storages {sorted(map(str, got_storages))} != the keys tensors "
                        f"use {sorted(map(str, id_of_key))}")
    for key, sid in id_of_key.items():
        g, w = got_storages.get(key, {}), want_storages[sid]
        for field in ("dtype", "nbytes", "referenced_nbytes"):
            if g.get(field) != w[field]:
                problems.append(f"storage {key!r}: {field} {g.get(field)!r} != torch's "
                                f"{w[field]!r}")
        if records is not None:
            if str(key) not in records:
                problems.append(f"storage {key!r}: no such storage record in the file")
            elif records[str(key)] is not None and records[str(key)] < w["nbytes"]:
                problems.append(f"storage {key!r}: record has {records[str(key)]} bytes, "
                                f"torch's storage {w['nbytes']}")
    for field in ("stored_bytes", "referenced_bytes"):
        if got.get(field) != want[field]:
            problems.append(f"{field} {got.get(field)!r} != torch's {want[field]!r}")
    if got.get("unsafe_globals"):
        problems.append(f"unsafe_globals {got['unsafe_globals']} in a file torch loads")
    return problems


def check_file(rel, got, returncode):
    """Problems for one fixture given zerofold's entry and exit code."""
    path = os.path.join(FIXTURES, rel)
    if got is None:
        return [f"no entry in the JSON (exit {returncode})"]
    if rel in REFUSE:
        code = _error_code(got)
        if code != REFUSE[rel] or returncode != 1:
            return [f"expected refusal {REFUSE[rel]!r} with exit 1, got error {code!r}, "
                    f"exit {returncode}"]
        return []
    if rel in UNSAFE:
        if _error_code(got) == "unsafe":
            return []
        listed = _normalized(got.get("unsafe_globals") or [])
        want = _normalized(UNSAFE[rel])
        if not listed or not want <= listed:
            return [f"unsafe globals {sorted(listed)} do not include {sorted(want) or 'any'}"]
        return []
    if returncode != 0:
        return [f"exit {returncode} for a file torch loads"]
    want = expected_entry(path)
    return compare_entry(path, want["format"], want, got, storage_records(path, want["format"]))


def run_zerofold(zerofold, path):
    """(entry for path or None, exit code, stderr)."""
    p = subprocess.run([zerofold, "inspect", "--json", path], capture_output=True, text=True,
                       timeout=120)
    try:
        doc = json.loads(p.stdout)
        files = doc["files"]
        entry = files[0] if len(files) == 1 else None
    except (ValueError, KeyError, TypeError, IndexError):
        entry = None
    return entry, p.returncode, p.stderr


def main_check(zerofold, rels):
    bad = 0
    for rel in rels:
        entry, rc, stderr = run_zerofold(zerofold, os.path.join(FIXTURES, rel))
        problems = check_file(rel, entry, rc)
        if entry is None and stderr:
            problems.append(f"stderr: {stderr.strip()}")
        for p in problems:
            print(f"{rel}: {p}")
        bad += bool(problems)
    print(f"{len(rels)} files checked, {bad} disagree")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------
# Self-test: the checker accepts torch's own answer and rejects single corruptions of it.

def _with_file_keys(rel, entry):
    """Oracle ids replaced by the file's storage keys, as a real reader would print them:
    describe() numbers storages in order of first visit, which is the pickle's order of
    first reference."""
    path = os.path.join(FIXTURES, rel)
    records = storage_records(path, entry["format"])
    order = oracle.scan(path).storage_keys
    ids = [s["key"] for s in entry["storages"]]
    if len(order) != len(ids):
        raise AssertionError(f"{rel}: {len(order)} storage keys in the pickle, torch has "
                             f"{len(ids)} storages")
    mapping = dict(zip(ids, order))
    out = copy.deepcopy(entry)
    for t in out["tensors"]:
        t["storage"] = mapping[t["storage"]]
    for s in out["storages"]:
        s["key"] = mapping[s["key"]]
    return out, records


def _corruptions(entry):
    """(what, corrupted copy) pairs; each must be caught."""
    out = []
    t0 = entry["tensors"][0]

    def mutate(what, fn):
        e = copy.deepcopy(entry)
        fn(e)
        out.append((what, e))

    mutate("name", lambda e: e["tensors"][0].update(name=t0["name"] + "x"))
    mutate("dtype", lambda e: e["tensors"][0].update(
        dtype="float64" if t0["dtype"] != "float64" else "float32"))
    mutate("shape", lambda e: e["tensors"][0].update(shape=t0["shape"] + [1]))
    mutate("stride", lambda e: e["tensors"][0].update(stride=[s + 1 for s in t0["stride"]]
                                                      or [7]))
    mutate("offset", lambda e: e["tensors"][0].update(offset=t0["offset"] + 1))
    mutate("path", lambda e: e["tensors"][0].update(path=t0["path"] + ["x"]))
    mutate("dropped tensor", lambda e: e["tensors"].pop())
    mutate("referenced_nbytes", lambda e: e["storages"][0].update(
        referenced_nbytes=e["storages"][0]["referenced_nbytes"] + 1))
    mutate("storage nbytes", lambda e: e["storages"][0].update(
        nbytes=e["storages"][0]["nbytes"] * 2 + 1))
    mutate("stored_bytes", lambda e: e.update(stored_bytes=e["stored_bytes"] + 1))
    mutate("unsafe", lambda e: e.update(unsafe_globals=["posix.system"]))
    mutate("format", lambda e: e.update(format="safetensors"))
    keys = [s["key"] for s in entry["storages"]]
    if len(keys) >= 2:
        def merge(e):  # claim that two storages are one
            for t in e["tensors"]:
                if t["storage"] == keys[1]:
                    t["storage"] = keys[0]
            e["storages"] = [s for s in e["storages"] if s["key"] != keys[1]]
        mutate("merged storages", merge)
    shared = [t for t in entry["tensors"] if t["storage"] == t0["storage"]]
    if len(shared) >= 2:
        def split(e):  # claim that a shared storage is two
            last = [t for t in e["tensors"] if t["storage"] == t0["storage"]][-1]
            last["storage"] = "split"
            s = dict(next(s for s in e["storages"] if s["key"] == t0["storage"]), key="split")
            e["storages"].append(s)
        mutate("split storage", split)
    return out


def self_test():
    failures = 0
    checked = 0
    for rel in fixture_files():
        if rel in REFUSE or rel in UNSAFE:
            continue
        path = os.path.join(FIXTURES, rel)
        want = expected_entry(path)
        got, records = _with_file_keys(rel, want)
        problems = compare_entry(path, want["format"], want, got, records)
        if problems:
            failures += 1
            print(f"{rel}: torch's own answer fails: {problems}")
        for what, bad in _corruptions(got):
            if not compare_entry(path, want["format"], want, bad, records):
                failures += 1
                print(f"{rel}: corruption not caught: {what}")
        checked += 1
    cases = [
        ("bad/torchscript.pt", {"path": "x", "error": {"code": "unsupported"}}, 1, True),
        ("bad/torchscript.pt", {"path": "x", "error": {"code": "corrupt"}}, 1, False),
        ("bad/torchscript.pt", {"path": "x", "tensors": []}, 0, False),
        ("bad/unsafe_os_system.pt", {"unsafe_globals": ["posix.system"]}, 0, True),
        ("bad/unsafe_eval.pt", {"unsafe_globals": ["__builtin__.eval"]}, 0, True),
        ("bad/unsafe_os_system.pt", {"unsafe_globals": []}, 0, False),
        ("bad/unsafe_getattr.pt", {"error": {"code": "unsafe"}}, 1, True),
        ("torch/views.pt", {"error": {"code": "corrupt"}}, 1, False),
    ]
    for rel, entry, rc, ok in cases:
        if (not check_file(rel, entry, rc)) != ok:
            failures += 1
            print(f"{rel}: check_file({entry}, exit {rc}) should be {'ok' if ok else 'bad'}")
    print(f"self-test: {checked} files, {failures} failures")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    rels = [os.path.relpath(os.path.abspath(f), FIXTURES) for f in argv[2:]] or \
        fixture_files()
    return main_check(argv[1], rels)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
