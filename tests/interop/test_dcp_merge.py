#!/usr/bin/python3
"""`zerofold merge` / `inspect` on PyTorch Distributed Checkpoint folders against real torch.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_dcp_merge.py [CASE ...]
    /usr/bin/python3 tests/interop/test_dcp_merge.py --self-test

Every case under fixtures/dcp (README.md there) is merged with the binary in $ZEROFOLD
(default build/zerofold) and the outputs are loaded only through tests/torch_oracle.py, then
compared element for element, bit for bit, with the case's expected.pt / expected_all.pt
(written by torch 1.13's own DCP writer and reader). Checks, per case:

  merge CKPT OUT.bin --json          torch file; keys = expected.pt's, in .metadata order
                                     (key sets for the safetensors form); every tensor's dtype,
                                     shape, contiguous strides and values; loads weights_only
  merge CKPT OUT/ --to safetensors   OUT/model.safetensors: same names and values
  merge --dtype bfloat16             floating tensors equal expected .to(torch.bfloat16),
                                     others unchanged (torch's rounding)
  merge --select optimizer|optim     (cases with optimizer keys) the `optimizer.` (or torch's
                                     recipe's `optim.`) tensors of expected_all.pt, named
                                     without that prefix
  merge --json: left_out             (cases whose info.json lists left_out) the groups left
                                     out with their tensor counts, and left_out_why
  merge --select model               (cases whose keys start with `model.`) = expected.pt
  merge --only GLOB                  the default output's names matching GLOB (fnmatch)
  merge --dry-run / --verify         exit 0; --dry-run writes nothing
  merge --max-shard-size 40KB        (dim0_ws2) shards + index whose union is expected.pt
  inspect --json CKPT                every tensor key of info.json appears with its dtype,
                                     shape and chunk count (a "chunks" count or list, when
                                     given); every non-tensor key is named
and for every folder under fixtures/dcp/bad (bad/expected_errors.json): the exit code
listed, exactly one line on stderr starting "zerofold: " naming the folder (or a file in it)
and the strings listed, no output file or temp file left, the folder unchanged; bad/control
merges to its expected.pt.

Ends with "N passed, N failed"; exit 0 only if none failed. --self-test runs all of this
against tests/interop/dcp_reference_cli.py (a Python model of the contract, not zerofold),
then checks that a set of wrong outputs is caught.
"""

import collections
import fnmatch
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402
from test_merge import read_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DCP = os.path.join(ROOT, "fixtures", "dcp")
BAD = os.path.join(DCP, "bad")
ZEROFOLD = [os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))]


def cases():
    return sorted(d for d in os.listdir(DCP) if os.path.isfile(os.path.join(DCP, d, "info.json")))


def info(case):
    with open(os.path.join(DCP, case, "info.json")) as f:
        return json.load(f)


def ckpt(case):
    return os.path.join(DCP, case, "ckpt")


def expected(case, name="expected.pt"):
    return oracle.load(os.path.join(DCP, case, name))


def run(*args, cwd=ROOT):
    return subprocess.run(ZEROFOLD + list(args), capture_output=True, text=True, cwd=cwd)


def merge(src, out, *flags):
    r = run("merge", "--json", *flags, src, out)
    if r.returncode != 0:
        raise AssertionError(f"merge {src} {out} {' '.join(flags)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


class Failure(AssertionError):
    pass


def check_tensors(got, want, ordered, what):
    """got, want: name -> tensor. Same names (in order if ordered), and each tensor equal in
    dtype, shape, contiguous strides and bytes."""
    problems = []
    if ordered and list(got) != list(want):
        problems.append(f"{what}: names {list(got)} != {list(want)}")
    elif set(got) != set(want):
        problems.append(f"{what}: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}")
    for name, w in want.items():
        if name in got:
            if not isinstance(got[name], torch.Tensor):
                problems.append(f"{what}: {name} is a {type(got[name]).__name__}")
                continue
            problems += oracle.compare_tensors(got[name], w.contiguous(), True, f"{what}: {name}")
    if problems:
        raise Failure("; ".join(problems[:6]))


def ordered_case(case):
    return info(case).get("key_order", "metadata") == "metadata"


def load_torch(path):
    loaded = oracle.load_info(path)
    if loaded.mode != "weights_only":
        raise Failure(f"{path}: loads only {loaded.mode} ({loaded.stubbed})")
    if not isinstance(loaded.obj, collections.OrderedDict):
        raise Failure(f"{path}: root is {type(loaded.obj).__name__}, not an OrderedDict")
    return loaded.obj


def cast(tensors, dtype):
    return collections.OrderedDict((k, v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items())


def subtree(tensors, prefix):
    """--select PREFIX: the keys under PREFIX, named relative to it (as shrink's --select
    makes the subtree the root)."""
    return collections.OrderedDict((k[len(prefix) + 1:], v) for k, v in tensors.items() if k.startswith(prefix + "."))


# --------------------------------------------------------------------------------------------
# Checks on good cases: each returns nothing or raises

def check_torch(case, tmp):
    out = os.path.join(tmp, "merged.bin")
    merge(ckpt(case), out)
    check_tensors(load_torch(out), expected(case), ordered_case(case), "torch output")


def check_safetensors(case, tmp):
    out = os.path.join(tmp, "st")
    merge(ckpt(case), out, "--to", "safetensors")
    got, _ = read_safetensors(os.path.join(out, "model.safetensors"))
    check_tensors(got, expected(case), False, "safetensors output")


def check_dtype(case, tmp):
    out = os.path.join(tmp, "bf16.bin")
    merge(ckpt(case), out, "--dtype", "bfloat16")
    check_tensors(load_torch(out), cast(expected(case), torch.bfloat16), ordered_case(case), "--dtype bfloat16")


def optimizer_group(case):
    """The case's optimizer group: `optimizer` (Accelerate, TorchTitan) or `optim` (torch's
    DCP recipe); None when it has none."""
    keys = info(case)["folders"][info(case).get("merged_folder", ".")]["tensor_keys"]
    for g in ("optimizer", "optim"):
        if any(k.startswith(g + ".") for k in keys):
            return g
    return None


def check_select_optimizer(case, tmp):
    group = optimizer_group(case)
    out = os.path.join(tmp, "opt.bin")
    merge(ckpt(case), out, "--select", group)
    want = subtree(expected(case, "expected_all.pt"), group)
    if not want:
        raise Failure("case has no optimizer tensors")
    check_tensors(load_torch(out), want, ordered_case(case), f"--select {group}")


def check_left_out(case, tmp):
    """The default merge says what it left out: info.json's left_out groups with their tensor
    counts, each for a reason (its name, or the optimizer state it holds)."""
    r = merge(ckpt(case), os.path.join(tmp, "m.bin"))
    doc = json.loads(r.stdout)
    want = info(case)["left_out"]
    if doc.get("left_out") != want:
        raise Failure(f"left_out {doc.get('left_out')} != {want}")
    why = doc.get("left_out_why", {})
    if set(why) != set(want) or not all(w in ("name", "optimizer state") for w in why.values()):
        raise Failure(f"left_out_why {why} for {want}")


def check_select_model(case, tmp):
    out = os.path.join(tmp, "model.bin")
    merge(ckpt(case), out, "--select", "model")
    check_tensors(load_torch(out), expected(case), ordered_case(case), "--select model")


def check_only(case, tmp):
    want = expected(case)
    names = list(want)
    pattern = names[-1].split(".")[0] + ".*" if "." in names[-1] else names[-1]
    out = os.path.join(tmp, "only.bin")
    merge(ckpt(case), out, "--only", pattern)
    picked = collections.OrderedDict((k, v) for k, v in want.items() if fnmatch.fnmatchcase(k, pattern))
    if not picked or len(picked) == len(want) and len(want) > 1:
        raise Failure(f"pattern {pattern} does not narrow the selection")
    check_tensors(load_torch(out), picked, ordered_case(case), f"--only {pattern}")


def check_dry_run_and_verify(case, tmp):
    out = os.path.join(tmp, "dry.bin")
    merge(ckpt(case), out, "--dry-run")
    if os.listdir(tmp):
        raise Failure(f"--dry-run wrote {os.listdir(tmp)}")
    out = os.path.join(tmp, "verified.bin")
    merge(ckpt(case), out, "--verify")
    check_tensors(load_torch(out), expected(case), ordered_case(case), "--verify output")


def check_shards(case, tmp):
    out = os.path.join(tmp, "shards")
    merge(ckpt(case), out, "--max-shard-size", "40KB")
    files = sorted(glob.glob(os.path.join(out, "pytorch_model-*-of-*.bin")))
    if len(files) < 2:
        raise Failure(f"expected shards, got {os.listdir(out)}")
    with open(os.path.join(out, "pytorch_model.bin.index.json")) as f:
        index = json.load(f)
    got = collections.OrderedDict()
    for path in files:
        shard = load_torch(path)
        for name in shard:
            if index["weight_map"].get(name) != os.path.basename(path):
                raise Failure(f"index puts {name} in {index['weight_map'].get(name)}, not {path}")
        got.update(shard)
    check_tensors(got, expected(case), False, "shards")


def check_inspect(case, tmp):
    r = run("inspect", "--json", ckpt(case))
    if r.returncode != 0:
        raise Failure(f"inspect exit {r.returncode}: {r.stderr.strip()}")
    doc = json.loads(r.stdout)
    folder = info(case)["folders"][info(case).get("merged_folder", ".")]
    tensors = {}
    names = set()
    for obj in walk_dicts(doc):
        name = obj.get("name", obj.get("key"))
        if isinstance(name, str):
            names.add(name)
            if "dtype" in obj and "shape" in obj:
                tensors.setdefault(name, obj)
    problems = []
    for k in folder["keys"]:
        if k["kind"] != "tensor":
            if k["key"] not in names:
                problems.append(f"non-tensor {k['key']} not listed")
            continue
        t = tensors.get(k["key"])
        if t is None:
            problems.append(f"tensor {k['key']} not listed")
            continue
        if t["dtype"] != k["dtype"] or list(t["shape"]) != k["shape"]:
            problems.append(f"{k['key']}: {t['dtype']} {t['shape']} != {k['dtype']} {k['shape']}")
        chunks = t.get("chunks")
        n = len(chunks) if isinstance(chunks, list) else chunks
        if n is not None and n != len(k["chunks"]):
            problems.append(f"{k['key']}: {n} chunks != {len(k['chunks'])}")
    extra = set(tensors) - {k["key"] for k in folder["keys"]}
    if extra:
        problems.append(f"tensors not in the checkpoint: {sorted(extra)}")
    if problems:
        raise Failure("; ".join(problems[:6]))


def walk_dicts(x):
    if isinstance(x, dict):
        yield x
        for v in x.values():
            yield from walk_dicts(v)
    elif isinstance(x, list):
        for v in x:
            yield from walk_dicts(v)


def checks_for(case):
    i = info(case)
    out = [check_torch, check_safetensors, check_dtype, check_only, check_dry_run_and_verify, check_inspect]
    if optimizer_group(case):
        out.append(check_select_optimizer)
    if "left_out" in i:
        out.append(check_left_out)
    if i.get("model_prefix_stripped"):
        out.append(check_select_model)
    if case == "dim0_ws2":
        out.append(check_shards)
    return out


# --------------------------------------------------------------------------------------------
# Bad folders

def folder_digest(path):
    h = hashlib.sha256()
    for dirpath, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            h.update(os.path.relpath(p, path).encode() + b"\0")
            with open(p, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def check_bad(name, want, tmp):
    rel = os.path.relpath(os.path.join(BAD, name), ROOT)
    before = folder_digest(os.path.join(BAD, name))
    out = os.path.join(tmp, "out.bin")
    r = run("merge", rel, out)
    problems = []
    if r.returncode not in want["exit"]:
        problems.append(f"exit {r.returncode}, want {want['exit']}")
    if name == "control":
        if r.returncode == 0:
            check_tensors(load_torch(out), oracle.load(os.path.join(BAD, "control", "expected.pt")), True, "control")
    else:
        lines = r.stderr.strip().splitlines()
        if len(lines) != 1:
            problems.append(f"{len(lines)} stderr lines: {r.stderr.strip()[:300]!r}")
        line = lines[0] if lines else ""
        if not line.startswith("zerofold: "):
            problems.append(f"error line {line!r} does not start with 'zerofold: '")
        if rel not in line and os.path.join(BAD, name) not in line:
            problems.append(f"error line {line!r} does not name {rel}")
        for s in want["must_name"]:
            if s not in line:
                problems.append(f"error line {line!r} does not name {s!r}")
        if os.listdir(tmp):
            problems.append(f"output left: {os.listdir(tmp)}")
    if folder_digest(os.path.join(BAD, name)) != before:
        problems.append("the input folder changed")
    if problems:
        raise Failure("; ".join(problems))


# --------------------------------------------------------------------------------------------

def main_check(selected):
    """selected: case names and bad/NAME folders; none: everything."""
    passed = failed = 0
    todo = []
    with open(os.path.join(BAD, "expected_errors.json")) as f:
        table = json.load(f)
    for case in selected or cases() + ["bad/" + n for n in table]:
        if case.startswith("bad/"):
            name = case[4:]
            todo.append((case, lambda n, t, w=table[name]: check_bad(n, w, t), name))
            continue
        for check in checks_for(case):
            todo.append((f"{case}: {check.__name__}", check, case))
    for label, check, arg in todo:
        tmp = tempfile.mkdtemp(prefix="zf_dcp_check_")
        try:
            check(arg, tmp)
            passed += 1
        except Failure as e:
            failed += 1
            print(f"FAIL {label}: {e}")
        except Exception as e:  # a crash of the check is a failure too, with its trace
            failed += 1
            print(f"FAIL {label}: {type(e).__name__}: {e}")
            traceback.print_exc(limit=3)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def self_test():
    """Runs every check against the Python model of the contract, then breaks it on purpose
    (each mode of dcp_reference_cli.py's ZF_REFERENCE_BREAK) and counts the catches."""
    reference = [sys.executable, os.path.join(HERE, "dcp_reference_cli.py")]
    ZEROFOLD[:] = reference
    rc = main_check([])
    caught = 0
    modes = {"keep-prefix": ["accelerate_ws4"], "keep-optim": ["v26_recipe_optim_ws2"], "flip-bit": ["dim0_ws2"], "reorder": ["titan_ws2"],
             "skip-bounds": ["bad/past_file_end", "bad/outside_shape"], "skip-overlap": ["bad/overlap"],
             "follow-paths": ["bad/path_traversal", "bad/absolute_path"],
             "ignore-transforms": ["bad/unknown_transform"], "no-cast": ["dtypes_ws2"],
             "two-lines": ["bad/gap"], "keep-output": ["bad/gap"]}
    for mode, selection in modes.items():
        os.environ["ZF_REFERENCE_BREAK"] = mode
        r = subprocess.run([sys.executable, __file__] + selection, capture_output=True, text=True,
                           env=dict(os.environ, ZEROFOLD=" ".join(reference)))
        last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        if r.returncode != 0 and last.endswith("failed") and not last.endswith(" 0 failed"):
            caught += 1
        else:
            print(f"self-test: breaking '{mode}' was not caught ({last})")
    del os.environ["ZF_REFERENCE_BREAK"]
    print(f"self-test: {caught} of {len(modes)} broken references caught")
    return 1 if rc or caught != len(modes) else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if os.environ.get("ZEROFOLD", "").count(" "):
        ZEROFOLD[:] = os.environ["ZEROFOLD"].split(" ")
    sys.exit(main_check(sys.argv[1:]))
