#!/usr/bin/python3
"""The matrix: every input x output x flag combination of shrink, convert and merge.

INPUTS, OUTPUTS and FLAGS are tables; refusal() says, from the README's rules, which
combinations are refused. Every combination is run:
  - allowed: exit 0; every output file is loaded by torch (tests/torch_oracle.py, with
    weights_only=True) or by the oracle's strict safetensors reader (the spec's header,
    dtypes, offsets covering the buffer without holes or overlaps, the reference
    writer's 8-byte padded header) and equals the input tensor for tensor (cast when
    --dtype, the selected names when --select/--only, and --only's as a flat dict); a folder OUT holds exactly its
    weights, index and the copies (config, tokenizer) with the input's bytes, and no temp
    file is left. Run again into the same OUT without --force it is refused (exit 2, one
    error line) and OUT stays byte-identical; with --force it succeeds and writes the same
    bytes. --part runs the parts (0/2, 1/2) and finish; run again, the parts find their
    files complete and finish its index and copies, so nothing changes (exit 0).
  - refused: exit 2 with one error line on stderr (besides "zerofold: hint:" lines), and
    no OUT is created.
One unittest per combination ("Ran N tests"); the combinations run first in a process
pool of 2. To extend: add a row to a table (and a rule to refusal() if the row is refused
somewhere).

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/matrix/matrix_test.py
"""

import collections
import fnmatch
import json
import multiprocessing
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import torch  # noqa: E402

import torch_oracle as oracle  # noqa: E402

ZEROFOLD = os.path.abspath(os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold")))
FIXTURES = os.path.join(ROOT, "fixtures")
SHARD = "200B"  # --max-shard-size: every sharded output of several tensors gets several shards

# ---------------------------------------------------------------------------------------
# Inputs

# HF Trainer's checkpoint-N/ files beside the weights: what merge copies (the model's
# files, COPIED) and what it leaves (training state).
COPIED = {"config.json": b'{"model_type": "gpt2"}\n', "generation_config.json": b'{"do_sample": false}\n',
          "tokenizer.json": b'{"version": "1.0"}\n', "tokenizer_config.json": b'{"model_max_length": 17}\n',
          "special_tokens_map.json": b'{"eos_token": "<eos>"}\n'}
TRAINING_STATE = {"trainer_state.json": b'{"global_step": 2}\n', "training_args.bin": b"args",
                  "rng_state.pth": b"rng", "scheduler.pt": b"sched"}
# A Hugging Face model folder's other files, all copied by shrink and convert.
MODEL_EXTRAS = {"config.json": b'{"model_type": "toy"}\n', "tokenizer.json": b'{"version": "1.0"}\n'}


def make_state():
    """A flat state dict: a tie, a transposed view, a view into a larger buffer (what shrink
    reclaims), several dtypes; large enough for several 1KB shards."""
    g = torch.Generator().manual_seed(19)
    embed = torch.randn(32, 16, generator=g)
    buffer = torch.randn(400, generator=g)
    return collections.OrderedDict([
        ("embed.weight", embed),
        ("layer.0.weight", torch.randn(16, 16, generator=g).t()),
        ("layer.0.bias", torch.randn(16, generator=g).half()),
        ("layer.1.weight", buffer[8:264].view(16, 16)),
        ("count", torch.tensor([1, 2, 3], dtype=torch.int64)),
        ("mask", torch.tensor([True, False, True])),
        ("lm_head.weight", embed),
    ])


ST_CODES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
            torch.bool: "BOOL"}


def write_safetensors(path, tensors):
    """A safetensors file from the spec: header JSON padded with spaces to 8 bytes, then data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": ST_CODES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_files(folder, files):
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)


def write_index(path, weight_map, total_size):
    with open(path, "w") as f:
        json.dump({"metadata": {"total_size": total_size}, "weight_map": weight_map}, f, indent=2)


Input = collections.namedtuple("Input", "name path kind fmt commands expected copies only")
# kind: file, stdin (the path is piped to "-"), folder (a Hugging Face model folder), ckpt
# (a training checkpoint folder merge reads); fmt: torch or safetensors; expected: name ->
# tensor; copies: the files a folder OUT gets beside the weights; only: merge's --only.


def build_inputs(root):
    state = make_state()
    flat = collections.OrderedDict((k, v.contiguous().clone()) for k, v in state.items())
    out = []
    d = os.path.join(root, "in")
    os.makedirs(d)
    zip_pt = os.path.join(d, "m.pt")
    torch.save(state, zip_pt)
    deflated = os.path.join(d, "deflated.pt")
    with zipfile.ZipFile(zip_pt) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    legacy = os.path.join(d, "legacy.pt")
    torch.save(state, legacy, _use_new_zipfile_serialization=False)
    st = os.path.join(d, "m.safetensors")
    write_safetensors(st, flat)
    torch_commands = ("shrink", "convert")
    out += [Input("torch zip", zip_pt, "file", "torch", torch_commands, state, {}, None),
            Input("deflated zip", deflated, "file", "torch", torch_commands, state, {}, None),
            Input("legacy", legacy, "file", "torch", torch_commands, state, {}, None),
            Input("safetensors", st, "file", "safetensors", torch_commands, flat, {}, None),
            Input("stdin", zip_pt, "stdin", "torch", torch_commands, state, {}, None)]

    names = list(state)
    halves = [names[:3], names[3:]]
    hf = os.path.join(root, "hf_torch")
    os.makedirs(hf)
    weight_map = {}
    for k, half in enumerate(halves):
        shard = f"pytorch_model-{k + 1:05d}-of-00002.bin"
        torch.save(collections.OrderedDict((n, state[n]) for n in half), os.path.join(hf, shard))
        weight_map.update({n: shard for n in half})
    write_index(os.path.join(hf, "pytorch_model.bin.index.json"), weight_map,
                sum(t.numel() * t.element_size() for t in flat.values()))
    write_files(hf, MODEL_EXTRAS)
    out.append(Input("HF torch folder", hf, "folder", "torch", torch_commands, state, MODEL_EXTRAS, None))

    hf_st = os.path.join(root, "hf_safetensors")
    os.makedirs(hf_st)
    weight_map = {}
    for k, half in enumerate(halves):
        shard = f"model-{k + 1:05d}-of-00002.safetensors"
        write_safetensors(os.path.join(hf_st, shard), collections.OrderedDict((n, flat[n]) for n in half))
        weight_map.update({n: shard for n in half})
    write_index(os.path.join(hf_st, "model.safetensors.index.json"), weight_map,
                sum(t.numel() * t.element_size() for t in flat.values()))
    write_files(hf_st, MODEL_EXTRAS)
    out.append(Input("HF safetensors folder", hf_st, "folder", "safetensors", torch_commands, flat,
                     MODEL_EXTRAS, None))

    # HF Trainer checkpoint folders: DeepSpeed's global_stepN/ + latest, and Accelerate's
    # pytorch_model_fsdp_0/ (DCP), beside the model's files and the training state.
    ds = os.path.join(root, "checkpoint-ds")
    shutil.copytree(os.path.join(FIXTURES, "deepspeed", "zero2_ws3_bf16", "ckpt"), ds)
    write_files(ds, {**COPIED, **TRAINING_STATE})
    truth = oracle.named_tensors(oracle.load(os.path.join(FIXTURES, "deepspeed", "zero2_ws3_bf16",
                                                          "ground_truth.pt")))
    out.append(Input("DeepSpeed", ds, "ckpt", "torch", ("merge",), truth, COPIED, "transformer.h.0.*"))
    dcp = os.path.join(root, "checkpoint-dcp")
    shutil.copytree(os.path.join(FIXTURES, "dcp", "accelerate_output_ws2", "ckpt"), dcp)
    write_files(dcp, {**COPIED, **TRAINING_STATE})
    truth = oracle.named_tensors(oracle.load(os.path.join(FIXTURES, "dcp", "accelerate_output_ws2", "expected.pt")))
    out.append(Input("DCP", dcp, "ckpt", "torch", ("merge",), truth, COPIED, "layer.*"))
    return out


# ---------------------------------------------------------------------------------------
# Outputs and flags

Output = collections.namedtuple("Output", "name out to shards")
OUTPUTS = [
    Output("file.pt", "o.pt", None, False),
    Output("file.safetensors", "o.safetensors", None, False),
    Output("folder", "o/", None, False),
    Output("folder --to torch", "o/", "torch", False),
    Output("folder --to safetensors", "o/", "safetensors", False),
    Output("sharded --to torch", "o/", "torch", True),
    Output("sharded --to safetensors", "o/", "safetensors", True),
    Output("file.pt.zst", "o.pt.zst", None, False),
    Output("file.safetensors.zst", "o.safetensors.zst", None, False),
    Output("stdout --to torch", "-", "torch", False),
    Output("stdout --to safetensors", "-", "safetensors", False),
    Output("file.pt --to torch", "o.pt", "torch", False),
    Output("file.safetensors --to safetensors", "o.safetensors", "safetensors", False),
    # Contradictions and names that say no format.
    Output("--to torch o.safetensors", "o.safetensors", "torch", False),
    Output("--to safetensors o.pt", "o.pt", "safetensors", False),
    Output("--max-shard-size o.pt", "o.pt", None, True),
    Output("unknown extension o.st", "o.st", None, False),
    Output("unknown extension o.st --to safetensors", "o.st", "safetensors", False),
]
FLAGS = ["none", "--dtype bfloat16", "select", "only", "part"]
# "select": shrink and convert take --select embed.weight, merge --only (its --select is
# DCP's prefix); "only": shrink's and convert's --only (merge's is "select").
ONLY = "layer.*"


def name_format(out):
    name = out[:-4] if out.endswith(".zst") else out
    if name.endswith(".safetensors"):
        return "safetensors"
    if name.endswith((".bin", ".pt", ".pth", ".ckpt")):
        return "torch"
    return None


def unknown_extension(out):
    base = out.rstrip("/").rsplit("/", 1)[-1]
    stem, dot, ext = base.rpartition(".")
    return bool(dot and stem and ext.isalnum() and any(c.isalpha() for c in ext)) and name_format(out) is None


def out_kind(inp, o):
    if o.out == "-":
        return "stdout"
    if o.out.endswith("/") or (inp.kind in ("folder", "ckpt") and name_format(o.out) is None):
        return "folder"
    return "file"


def out_format(cmd, o):
    return o.to or name_format(o.out) or (None if cmd == "convert" else "torch")


def refusal(cmd, inp, o, flag):
    """Why the combination is refused (README: Usage, shrink, convert, merge), or None."""
    kind, fmt = out_kind(inp, o), out_format(cmd, o)
    folder_in = inp.kind in ("folder", "ckpt")
    if cmd == "shrink" and inp.fmt == "safetensors":
        return "shrink of safetensors"
    if o.to and name_format(o.out) and o.to != name_format(o.out):
        return "--to contradicts the name"
    if folder_in and o.out != "-" and not o.out.endswith("/") and unknown_extension(o.out):
        return "a folder IN's OUT with an unknown extension: file or folder?"
    if fmt is None:
        return "no format"
    if cmd == "merge" and kind == "stdout" or cmd == "merge" and o.out.endswith(".zst"):
        return "merge writes no streams"
    if o.shards and kind != "folder":
        return "--max-shard-size with a file OUT"
    if flag == "part" and kind != "folder":
        return "--part with a file OUT"
    if inp.kind == "stdin" and (fmt == "safetensors" or kind == "folder"):
        return "a stream IN read at random"
    if inp.kind == "folder" and kind != "folder" and fmt == "torch":
        return "a folder IN's torch shards go into a folder"
    if inp.kind == "folder" and flag == "select":
        return "--select takes one file"
    if inp.kind == "folder" and o.shards and fmt == "torch":
        return "a torch folder keeps its shards"
    return None


def flag_args(cmd, inp, flag):
    if flag == "--dtype bfloat16":
        return ["--dtype", "bfloat16"]
    if flag == "select":
        return ["--only", inp.only] if cmd == "merge" else ["--select", "embed.weight"]
    if flag == "only":
        return ["--only", ONLY]
    return []


def expected_tensors(cmd, inp, flag):
    want = inp.expected
    if flag == "select":
        want = collections.OrderedDict((k, v) for k, v in want.items()
                                       if (fnmatch.fnmatchcase(k, inp.only) if cmd == "merge" else k == "embed.weight"))
    if flag == "only":
        want = collections.OrderedDict((k, v) for k, v in want.items() if fnmatch.fnmatchcase(k, ONLY))
    if flag == "--dtype bfloat16":
        want = collections.OrderedDict((k, v.to(torch.bfloat16) if v.is_floating_point() else v)
                                       for k, v in want.items())
    return want


Case = collections.namedtuple("Case", "cmd inp out flag")


def cases(inputs):
    return [Case(cmd, inp, o, flag) for inp in inputs for cmd in inp.commands for o in OUTPUTS for flag in FLAGS
            if not (cmd == "merge" and flag == "only")]


def case_name(c):
    return f"{c.cmd} {c.inp.name} -> {c.out.name} [{c.flag}]"


# ---------------------------------------------------------------------------------------
# Running and judging one combination


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(argv, stdin_path=None, stdout_path=None, cwd=None):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    stdout = open(stdout_path, "wb") if stdout_path else subprocess.PIPE
    try:
        p = subprocess.run([ZEROFOLD, *argv], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd,
                           timeout=120)
    finally:
        for f in (stdin, stdout):
            if hasattr(f, "close"):
                f.close()
    return p.returncode, p.stderr.decode("utf-8", "replace")


def error_lines(stderr):
    return [line for line in stderr.splitlines() if not line.startswith("zerofold: hint:")]


def snapshot(path):
    """Every file under path (a file or a folder), hidden ones included: name -> bytes."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    out = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, path)] = f.read()
    return out


def load_file(path, fmt):
    """name -> tensor of one output file, by the oracles."""
    if fmt == "safetensors":
        f = oracle.read_safetensors(path, writer_layout=True)
        return collections.OrderedDict((name, f.tensor(name)) for name in f.tensors)
    info = oracle.load_info(path)
    check(info.mode == "weights_only", f"{path}: torch.load needs stubs ({info.mode})")
    return oracle.named_tensors(info.obj)


def load_folder(path, fmt, sharded, copies, source):
    """name -> tensor of a folder OUT; `sharded`: several shards expected."""
    single = "model.safetensors" if fmt == "safetensors" else "pytorch_model.bin"
    index = single + ".index.json"
    names = set(os.listdir(path))
    tensors = collections.OrderedDict()
    if index in names:
        with open(os.path.join(path, index)) as f:
            doc = json.load(f)
        shards = sorted(set(doc["weight_map"].values()))
        check(single not in names, f"{path}: both {single} and {index}")
        for shard in shards:
            got = load_file(os.path.join(path, shard), fmt)
            for name in got:
                check(doc["weight_map"].get(name) == shard, f"{path}: {name} in {shard}, index says "
                      f"{doc['weight_map'].get(name)}")
            tensors.update(got)
        check(set(doc["weight_map"]) == set(tensors), f"{path}: the index names other tensors than the shards hold")
        if fmt == "safetensors":
            total = sum(t.numel() * t.element_size() for t in tensors.values())
            check(doc["metadata"]["total_size"] == total, f"{path}: total_size {doc['metadata']['total_size']} "
                  f"!= {total}")
        weights = set(shards) | {index}
    else:
        check(single in names, f"{path}: neither {single} nor {index}: {sorted(names)}")
        tensors = load_file(os.path.join(path, single), fmt)
        weights = {single}
    check(not sharded or index in names, f"{path}: --max-shard-size {SHARD} wrote one file")
    check(names == weights | set(copies), f"{path}: holds {sorted(names)}, want {sorted(weights | set(copies))}")
    for name in copies:
        with open(os.path.join(path, name), "rb") as f:
            check(f.read() == copies[name], f"{path}/{name}: not a copy of {source}/{name}")
    return tensors


def judge(c, tmp, out_path, stdout_path):
    """Loads what an allowed run wrote and compares it with the input."""
    kind, fmt = out_kind(c.inp, c.out), out_format(c.cmd, c.out)
    if kind == "stdout":
        got = load_file(stdout_path, fmt)
    elif kind == "folder":
        copies = c.inp.copies if c.inp.kind in ("folder", "ckpt") else {}
        want = expected_tensors(c.cmd, c.inp, c.flag)
        got = load_folder(out_path, fmt, c.out.shards and len(want) > 1, copies, c.inp.path)
    elif c.out.out.endswith(".zst"):
        plain = os.path.join(tmp, "plain")
        with open(plain, "wb") as f:
            check(subprocess.run(["zstd", "-dcq", out_path], stdout=f).returncode == 0, "zstd -d failed")
        got = load_file(plain, fmt)
    else:
        got = load_file(out_path, fmt)
    want = expected_tensors(c.cmd, c.inp, c.flag)
    check(sorted(got) == sorted(want), f"names {sorted(got)} != {sorted(want)}")
    for name, t in want.items():
        diffs = oracle.compare_tensors(t, got[name], strides=False, where=name)
        check(not diffs, "; ".join(diffs))
    leftovers = [n for n in os.listdir(os.path.dirname(out_path.rstrip("/")) or ".") if "zerofold-tmp" in n]
    check(not leftovers, f"temp files left: {leftovers}")


# Outputs go to memory where there is a tmpfs: every commit's fsync is then free.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def run_case(c):
    """Runs one combination; returns "" or what went wrong."""
    tmp = tempfile.mkdtemp(prefix="zf_matrix_", dir=SCRATCH)
    try:
        return _run_case(c, tmp)
    except Failure as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - an oracle's error is the case's failure
        return f"{type(e).__name__}: {e}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_case(c, tmp):
    kind = out_kind(c.inp, c.out)
    out_arg = c.out.out if c.out.out == "-" else os.path.join(tmp, c.out.out)
    out_path = out_arg.rstrip("/")
    stdout_path = os.path.join(tmp, "stdout.bin") if kind == "stdout" else None
    stdin_path = c.inp.path if c.inp.kind == "stdin" else None
    in_arg = "-" if c.inp.kind == "stdin" else c.inp.path
    args = [c.cmd, "--quiet"] + flag_args(c.cmd, c.inp, c.flag)
    if c.out.to:
        args += ["--to", c.out.to]
    if c.out.shards:
        args += ["--max-shard-size", SHARD]
    runs = [args + ["--part", f"{i}/2"] for i in range(2)] + [args + ["--part", "finish"]] \
        if c.flag == "part" else [args]

    def run_all(extra):
        for argv in runs:
            rc, err = run(argv + extra + [in_arg, out_arg], stdin_path, stdout_path, cwd=tmp)
            if rc != 0:
                return rc, err
        return 0, ""

    why = refusal(c.cmd, c.inp, c.out, c.flag)
    rc, err = run(runs[0] + [in_arg, out_arg], stdin_path, stdout_path, cwd=tmp)
    if why:
        check(rc == 2, f"refused ({why}) should exit 2, got {rc}: {err.strip()}")
        lines = error_lines(err)
        check(len(lines) == 1 and lines[0].startswith("zerofold: "), f"refusal should be one line: {err!r}")
        check(kind == "stdout" or not os.path.exists(out_path), f"refused, yet {out_path} exists")
        return ""
    check(rc == 0, f"exit {rc}: {err.strip()}")
    for argv in runs[1:]:
        rc, err = run(argv + [in_arg, out_arg], stdin_path, stdout_path, cwd=tmp)
        check(rc == 0, f"{' '.join(argv[-2:])}: exit {rc}: {err.strip()}")
    judge(c, tmp, out_path, stdout_path)
    if kind == "stdout":
        return ""
    first = snapshot(out_path)
    rc, err = run_all([])
    if c.flag == "part":
        check(rc == 0, f"parts and finish again: exit {rc}: {err.strip()}")
    else:
        check(rc == 2, f"again without --force: exit {rc}, want 2: {err.strip()}")
        lines = error_lines(err)
        check(len(lines) == 1, f"again without --force: not one error line: {err!r}")
    check(snapshot(out_path) == first, "again without --force: the output changed")
    rc, err = run_all(["--force"])
    check(rc == 0, f"again with --force: exit {rc}: {err.strip()}")
    check(snapshot(out_path) == first, "again with --force: other bytes")
    return ""


# ---------------------------------------------------------------------------------------

ROOT_TMP = tempfile.mkdtemp(prefix="zf_matrix_inputs_")
INPUTS = build_inputs(ROOT_TMP)
CASES = cases(INPUTS)
RESULTS = {}


class MatrixTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with multiprocessing.get_context("fork").Pool(2) as pool:
            for c, result in zip(CASES, pool.map(run_case, CASES, chunksize=4)):
                RESULTS[case_name(c)] = result
        allowed = sum(1 for c in CASES if not refusal(c.cmd, c.inp, c.out, c.flag))
        print(f"matrix: {len(CASES)} combinations ({len(INPUTS)} inputs x commands x {len(OUTPUTS)} outputs x "
              f"{len(FLAGS)} flags): {allowed} allowed, {len(CASES) - allowed} refused", file=sys.stderr)


def make_test(name):
    def test(self):
        result = RESULTS.get(name)
        self.assertIsNotNone(result, "not run")
        self.assertEqual(result, "", name)
    return test


for _i, _c in enumerate(CASES):
    setattr(MatrixTest, f"test_{_i:04d}", make_test(case_name(_c)))
    getattr(MatrixTest, f"test_{_i:04d}").__doc__ = case_name(_c)


if __name__ == "__main__":
    try:
        unittest.main(verbosity=1)
    finally:
        shutil.rmtree(ROOT_TMP, ignore_errors=True)
