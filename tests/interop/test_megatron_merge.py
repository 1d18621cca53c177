#!/usr/bin/python3
"""`zerofold merge` / `inspect` on Megatron-Core torch_dist checkpoints against real torch.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_megatron_merge.py [CASE ...]

Every case under fixtures/megatron (README.md there: written by Megatron-Core 0.12.3 to 0.16.1,
ground truth taken from the live tensors at save time) is merged with the binary in $ZEROFOLD
and the outputs are loaded only through tests/torch_oracle.py, then compared element for
element, bit for bit. Checks, per case:

  merge CKPT OUT.bin                 = expected.pt: names in .metadata order, dtypes, shapes, values
  merge CKPT OUT/ --to safetensors   OUT/model.safetensors = expected.pt
  merge --unstack CKPT OUT.bin       = expected_unstacked.pt, in its order
  merge --unstack --to safetensors   = expected_unstacked.pt
  merge --dtype bfloat16             floating tensors = expected .to(torch.bfloat16), others as saved
  merge --only GLOB                  expected_unstacked.pt's names matching GLOB (fnmatch), with --unstack
  merge --part 0/2, 1/2, finish      (1 KB shards) shards + index whose union is expected.pt; each
                                     part writes only its own files
  merge --verify                     exit 0, output = expected.pt
  merge --select optimizer           (cases with expected_all.pt) its optimizer.* tensors, named
                                     relative to `optimizer` (N-D flattened keys back in their
                                     parameter's shape); with --unstack, the same split by the rule
  inspect --json CKPT                the megatron entry: layout, torch_dist folder, .metadata root
                                     class, iteration (common.pt read by torch), args (info.json),
                                     optimizer form, every key's dtype, shape and chunk count,
                                     the non-tensor keys, merge's tensor counts
and: a Megatron-LM folder picked by --tag (10 = the tracker's; 11 missing: one error line), the
iteration folder given directly; every folder under fixtures/megatron/bad (bad/README.md): exit
1, one line on stderr "zerofold: " naming the folder, its code (unsafe / corrupt) and what it
names, no output, the folder unchanged; bad/dp_reshardable: weights merge, --select optimizer
refused as unsupported naming dp_reshardable.

Ends with "N passed, N failed"; exit 0 only if none failed.
"""

import collections
import fnmatch
import glob
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch_oracle as oracle  # noqa: E402
from test_dcp_merge import Failure, cast, check_tensors, folder_digest, load_torch, subtree  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
MCORE = os.path.join(ROOT, "fixtures", "megatron")
BAD = os.path.join(MCORE, "bad")
ZEROFOLD = [os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold"))]

# What each hostile folder's error line names (bad/expected_errors.json says it in prose).
BAD_NAMES = {
    "plans_eval": "builtins.eval", "plans_os_system": "posix.system", "plans_getattr_import": "builtins.__import__",
    "plan_outside_subtree": "torch.distributed.checkpoint.planner.SavePlan", "mcore_data_os_system": "posix.system",
    "mcore_metadata_eval": "builtins.eval", "mcore_saveplan_exec": "builtins.exec",
    "unlisted_megatron_class": "megatron.core.dist_checkpointing.strategies.torch.MCoreLoadPlanner",
    "gap": "grid.weight", "overlap": "grid.weight",
}
# The optimizer's form per case, as the fixtures' README describes them.
OPTIMIZER_FORM = {"gpt_tp2pp2_mlm": "model-space", "v015_sharded_ws4": "nd-flattened",
                  "v014_sharded_ws4": "nd-flattened", "v012_sharded_ws4": "nd-flattened"}


def cases():
    return sorted(d for d in os.listdir(MCORE) if os.path.isfile(os.path.join(MCORE, d, "info.json")))


def info(case):
    with open(os.path.join(MCORE, case, "info.json")) as f:
        return json.load(f)


def ckpt(case):
    return os.path.join(MCORE, case, "ckpt")


def expected(case, name="expected.pt"):
    return oracle.load(os.path.join(MCORE, case, name))


def run(*args):
    return subprocess.run(ZEROFOLD + list(args), capture_output=True, text=True, cwd=ROOT)


def merge(src, out, *flags):
    r = run("merge", "--json", *flags, src, out)
    if r.returncode != 0:
        raise Failure(f"merge {' '.join(flags)} {src} {out}: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


class _Inert:
    """A class or function common.pt names (argparse.Namespace, Megatron's enums, signal.Signals,
    torch's tensor rebuild): called or built, it keeps what it was given; nothing runs."""
    def __init__(self, *args):
        self.args = args

    def __setstate__(self, state):
        self.__dict__.update(state if isinstance(state, dict) else {"state": state})


class _CommonUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        return type(name, (_Inert,), {})

    def persistent_load(self, pid):
        return None


def load_common(path):
    """The plain values of an input's common.pt (a torch.save zip): its data.pkl unpickled with
    every global inert and storages None. The oracle refuses the file (Megatron-LM's args name
    signal.Signals); this reads what a fixture says, outputs are loaded through the oracle."""
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        return _CommonUnpickler(io.BytesIO(z.read(name))).load()


def unstack(tensors):
    """The fixtures README's unstack rule, applied to name -> tensor (for the optimizer state,
    which expected_unstacked.pt does not cover)."""
    def step(items, pattern):
        out = []
        for name, t in items:
            m = re.match(pattern, name)
            if m and t.dim() >= 1:
                out += [(f"{m.group(1)}{i}.{m.group(2)}", t[i]) for i in range(t.shape[0])]
            else:
                out.append((name, t))
        return out
    items = step(list(tensors.items()), r"^((?:.*\.)?decoder\.layers\.)(?!\d+\.)(.+)$")
    items = step(items, r"^(.+\.mlp\.experts\.experts\.)(?!\d)(.+)$")
    return collections.OrderedDict(items)


# --------------------------------------------------------------------------------------------
# Checks on good cases: each returns nothing or raises Failure

def check_torch(case, tmp):
    out = os.path.join(tmp, "merged.bin")
    doc = merge(ckpt(case), out)
    if doc["kind"] != "megatron" or doc["megatron"]["layout"] != info(case)["layout"]:
        raise Failure(f"merge --json: kind {doc['kind']}, megatron {doc.get('megatron')}")
    check_tensors(load_torch(out), expected(case), True, "torch output")


def check_safetensors(case, tmp):
    out = os.path.join(tmp, "st")
    merge(ckpt(case), out, "--to", "safetensors")
    check_tensors(oracle.load_safetensors(os.path.join(out, "model.safetensors")), expected(case), False,
                  "safetensors output")


def check_unstack(case, tmp):
    out = os.path.join(tmp, "unstacked.bin")
    merge(ckpt(case), out, "--unstack")
    check_tensors(load_torch(out), expected(case, "expected_unstacked.pt"), True, "--unstack")


def check_unstack_safetensors(case, tmp):
    out = os.path.join(tmp, "unstacked.safetensors")
    merge(ckpt(case), out, "--unstack")
    check_tensors(oracle.load_safetensors(out), expected(case, "expected_unstacked.pt"), False,
                  "--unstack safetensors")


def check_dtype(case, tmp):
    out = os.path.join(tmp, "bf16.bin")
    merge(ckpt(case), out, "--dtype", "bfloat16")
    check_tensors(load_torch(out), cast(expected(case), torch.bfloat16), True, "--dtype bfloat16")


def check_only(case, tmp):
    want = expected(case, "expected_unstacked.pt")
    names = list(want)
    pattern = "*layers.1.*" if any(".layers.1." in n for n in names) else names[-1]
    out = os.path.join(tmp, "only.bin")
    merge(ckpt(case), out, "--unstack", "--only", pattern)
    picked = collections.OrderedDict((k, v) for k, v in want.items() if fnmatch.fnmatchcase(k, pattern))
    if not picked or len(picked) == len(want):
        raise Failure(f"pattern {pattern} does not narrow the selection")
    check_tensors(load_torch(out), picked, True, f"--only {pattern}")


def check_parts(case, tmp):
    out = os.path.join(tmp, "parts")
    written = []
    for part in ("0/2", "1/2"):
        merge(ckpt(case), out, "--max-shard-size", "1KB", "--part", part)
        written.append(sorted(os.listdir(out)))
        if "pytorch_model.bin.index.json" in written[-1]:
            raise Failure(f"--part {part} wrote the index")
    if not written[0] or written[0] == written[1]:
        raise Failure(f"parts wrote {written}")
    merge(ckpt(case), out, "--max-shard-size", "1KB", "--part", "finish")
    with open(os.path.join(out, "pytorch_model.bin.index.json")) as f:
        index = json.load(f)
    files = sorted(glob.glob(os.path.join(out, "pytorch_model-*-of-*.bin")))
    if len(files) < 2:
        raise Failure(f"expected shards, got {os.listdir(out)}")
    got = collections.OrderedDict()
    for path in files:
        shard = load_torch(path)
        for name in shard:
            if index["weight_map"].get(name) != os.path.basename(path):
                raise Failure(f"index puts {name} in {index['weight_map'].get(name)}, not {path}")
        got.update(shard)
    check_tensors(got, expected(case), False, "--part shards")


def check_verify(case, tmp):
    out = os.path.join(tmp, "verified.bin")
    doc = merge(ckpt(case), out, "--verify")
    if not doc["verified"]:
        raise Failure("--verify reported nothing verified")
    check_tensors(load_torch(out), expected(case), True, "--verify output")


def check_select_optimizer(case, tmp):
    want = subtree(expected(case, "expected_all.pt"), "optimizer")
    if not want:
        raise Failure("case has no optimizer tensors")
    out = os.path.join(tmp, "opt.bin")
    merge(ckpt(case), out, "--select", "optimizer")
    check_tensors(load_torch(out), want, True, "--select optimizer")
    out = os.path.join(tmp, "opt_unstacked.safetensors")
    merge(ckpt(case), out, "--select", "optimizer", "--unstack")
    check_tensors(oracle.load_safetensors(out), unstack(want), False, "--select optimizer --unstack")


def check_inspect(case, tmp):
    i = info(case)
    r = run("inspect", "--json", ckpt(case))
    if r.returncode != 0:
        raise Failure(f"inspect exit {r.returncode}: {r.stderr.strip()}")
    doc = json.loads(r.stdout)["files"][0]
    m = doc.get("megatron")
    problems = []
    if doc["format"] != "megatron" or m is None:
        raise Failure(f"format {doc['format']}")
    if m["layout"] != i["layout"]:
        problems.append(f"layout {m['layout']} != {i['layout']}")
    if os.path.normpath(m["torch_dist_folder"]) != os.path.normpath(os.path.join(ckpt(case), i["torch_dist_dir"])):
        problems.append(f"torch_dist_folder {m['torch_dist_folder']}")
    if m["metadata_root"] != i["metadata_root"]:
        problems.append(f"metadata_root {m['metadata_root']} != {i['metadata_root']}")
    if m["metadata_json"] != i["metadata_json"]:
        problems.append(f"metadata_json {m['metadata_json']} != {i['metadata_json']}")
    common = load_common(os.path.join(ckpt(case), i["torch_dist_dir"], "common.pt"))
    iteration = common.get("iteration", common.get("global_step"))
    if m["common"]["iteration"] != iteration:
        problems.append(f"iteration {m['common']['iteration']} != {iteration}")
    if "checkpoint_version" in common and m["common"]["checkpoint_version"] != common["checkpoint_version"]:
        problems.append(f"checkpoint_version {m['common']['checkpoint_version']}")
    args = m["common"]["args"]
    if "args" in common:
        for name, value in i["args"].items():
            if name in args and args[name] != value:
                problems.append(f"args.{name} {args[name]!r} != {value!r}")
        missing = [n for n in ("num_layers", "hidden_size", "num_attention_heads", "num_query_groups",
                               "tensor_model_parallel_size", "pipeline_model_parallel_size",
                               "expert_model_parallel_size", "num_experts", "moe_layer_freq", "params_dtype")
                   if n not in args]
        if missing:
            problems.append(f"args missing {missing}")
    elif args is not None:
        problems.append(f"args {args} without an args object")
    form = OPTIMIZER_FORM.get(case, "none")
    if m["optimizer"]["form"] != form:
        problems.append(f"optimizer form {m['optimizer']['form']} != {form}")
    tensors = {t["key"]: t for t in doc["tensors"]}
    for k in i["keys"]:
        if k["kind"] != "tensor":
            continue
        t = tensors.get(k["key"])
        if t is None:
            problems.append(f"tensor {k['key']} not listed")
        elif (t["dtype"], t["shape"], t["chunks"]) != (k["dtype"], k["shape"], len(k["chunks"])):
            problems.append(f"{k['key']}: {t['dtype']} {t['shape']} {t['chunks']} chunks")
    if sorted(t["key"] for t in doc["non_tensor"]) != sorted(i["non_tensor_keys"]):
        problems.append("non-tensor keys differ")
    if set(tensors) != set(i["tensor_keys"]):
        problems.append(f"extra tensors {sorted(set(tensors) - set(i['tensor_keys']))}")
    merge_doc = m["merge"]
    if merge_doc["weights"]["tensors"] != len(i["weight_keys"]):
        problems.append(f"merge weights {merge_doc['weights']}")
    if merge_doc["unstacked"]["tensors"] != len(i["unstacked_keys"]):
        problems.append(f"merge unstacked {merge_doc['unstacked']}")
    if bool(merge_doc["optimizer"]["mergeable"]) != (form != "none"):
        problems.append(f"merge optimizer {merge_doc['optimizer']}")
    nd = {n["key"]: n["shape"] for n in m["nd_reformulated"]}
    want_nd = {k["key"]: k["nd_reformulated_orig_global_shape"] for k in i["keys"]
               if "nd_reformulated_orig_global_shape" in k}
    if nd != want_nd:
        problems.append(f"nd_reformulated {nd} != {want_nd}")
    if problems:
        raise Failure("; ".join(problems[:6]))
    human = run("inspect", ckpt(case))
    if human.returncode != 0 or "Megatron-Core torch_dist checkpoint" not in human.stdout:
        raise Failure(f"human inspect: exit {human.returncode}: {human.stdout[:200]}")


def checks_for(case):
    out = [check_torch, check_safetensors, check_unstack, check_unstack_safetensors, check_dtype, check_only,
           check_parts, check_verify, check_inspect]
    if os.path.exists(os.path.join(MCORE, case, "expected_all.pt")):
        out.append(check_select_optimizer)
    return out


# --------------------------------------------------------------------------------------------
# Folders and tags

def check_tags(_, tmp):
    mlm = ckpt("gpt_tp2pp2_mlm")
    out = os.path.join(tmp, "tag10.bin")
    merge(mlm, out, "--tag", "10")
    check_tensors(load_torch(out), expected("gpt_tp2pp2_mlm"), True, "--tag 10")
    out = os.path.join(tmp, "iter.bin")
    doc = merge(os.path.join(mlm, "iter_0000010"), out)
    if doc["megatron"]["layout"] != "bare":
        raise Failure(f"the iteration folder given directly: layout {doc['megatron']['layout']}")
    check_tensors(load_torch(out), expected("gpt_tp2pp2_mlm"), True, "iteration folder")
    r = run("merge", "--tag", "11", mlm, os.path.join(tmp, "tag11.bin"))
    lines = r.stderr.strip().splitlines()
    if r.returncode == 0 or len(lines) != 1 or "iter_0000011" not in lines[0]:
        raise Failure(f"--tag 11: exit {r.returncode}: {r.stderr.strip()!r}")
    r = run("merge", "--tag", "10", ckpt("sharded_ws4"), os.path.join(tmp, "bare.bin"))
    if r.returncode != 2 and r.returncode != 1 or "--tag" not in r.stderr:
        raise Failure(f"--tag on a bare folder: exit {r.returncode}: {r.stderr.strip()!r}")
    if len(os.listdir(tmp)) != 2:
        raise Failure(f"outputs left: {os.listdir(tmp)}")


# --------------------------------------------------------------------------------------------
# Bad folders

def run_bad(name, tmp, flags=()):
    rel = os.path.relpath(os.path.join(BAD, name), ROOT)
    before = folder_digest(os.path.join(BAD, name))
    r = run("merge", *flags, rel, os.path.join(tmp, "out.bin"))
    problems = []
    lines = r.stderr.strip().splitlines()
    line = lines[0] if lines else ""
    if r.returncode != 1:
        problems.append(f"exit {r.returncode}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} stderr lines: {r.stderr.strip()[:300]!r}")
    if not line.startswith("zerofold: ") or rel not in line:
        problems.append(f"error line {line!r} does not start with 'zerofold: ' naming {rel}")
    if os.listdir(tmp):
        problems.append(f"output left: {os.listdir(tmp)}")
    if folder_digest(os.path.join(BAD, name)) != before:
        problems.append("the input folder changed")
    return line, problems


def check_bad(name, want, tmp):
    line, problems = run_bad(name, tmp)
    code = "corrupt" if want["what"].startswith("corrupt") else "unsafe"
    if f": {code}: " not in line:
        problems.append(f"error line {line!r} is not {code}")
    for s in want["must_name"] + [BAD_NAMES[name]]:
        if s not in line:
            problems.append(f"error line {line!r} does not name {s!r}")
    if problems:
        raise Failure("; ".join(problems))


def check_dp_reshardable(_, tmp):
    line, problems = run_bad("dp_reshardable", tmp, ("--select", "optimizer"))
    for s in (": unsupported: ", "dp_reshardable", "optimizer.distributed.dp_group_idx_0"):
        if s not in line:
            problems.append(f"error line {line!r} does not name {s!r}")
    if problems:
        raise Failure("; ".join(problems))
    out = os.path.join(tmp, "weights.bin")
    doc = merge(os.path.join(BAD, "dp_reshardable"), out)
    want = collections.OrderedDict((k, v) for k, v in expected("sharded_ws4").items() if k != "counters")
    check_tensors(load_torch(out), want, True, "dp_reshardable weights")
    if doc["left_out"] != {"optimizer": 1} or doc["megatron"]["optimizer_form"] != "dp_reshardable":
        raise Failure(f"left_out {doc['left_out']}, form {doc['megatron']['optimizer_form']}")
    r = run("inspect", "--json", os.path.join(BAD, "dp_reshardable"))
    m = json.loads(r.stdout)["files"][0]["megatron"]
    refusal = m["merge"]["optimizer"]["refusal"]
    if (m["optimizer"]["form"], m["optimizer"]["sharding_type"]) != ("dp_reshardable", "dp_reshardable") or \
            refusal is None or refusal["code"] != "unsupported":
        raise Failure(f"inspect: optimizer {m['optimizer']}, merge {m['merge']['optimizer']}")


# --------------------------------------------------------------------------------------------

def main(selected):
    with open(os.path.join(BAD, "expected_errors.json")) as f:
        table = json.load(f)
    todo = []
    for case in selected or cases() + ["tags", "bad/dp_reshardable"] + ["bad/" + n for n in table]:
        if case == "tags":
            todo.append(("tags", check_tags, None))
        elif case == "bad/dp_reshardable":
            todo.append((case, check_dp_reshardable, None))
        elif case.startswith("bad/"):
            todo.append((case, lambda n, t, w=table[case[4:]]: check_bad(n, w, t), case[4:]))
        else:
            todo += [(f"{case}: {c.__name__}", c, case) for c in checks_for(case)]
    passed = failed = 0
    for label, check, arg in todo:
        tmp = tempfile.mkdtemp(prefix="zf_mcore_check_")
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
