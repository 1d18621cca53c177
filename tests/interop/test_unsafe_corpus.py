#!/usr/bin/python3
"""The allowlist verdict on the corpus of issue 27.

    ZEROFOLD=build/zerofold /usr/bin/python3 tests/interop/test_unsafe_corpus.py   (unittest)

Malicious: every file fixtures/unsafe/make_unsafe_corpus.py wrote (one per gadget of the
2025-2026 picklescan advisories, picklescan's and modelscan's test payloads and issue 27's
list; manifest.json names each file's source) is
  - reported unsafe by `inspect` (exit 0; the text line names each global with its reason)
    and `inspect --json` (unsafe_globals lists it, unsafe_reasons gives its reason);
  - refused by shrink, convert --to torch and convert --to safetensors: exit 1, one stderr
    line naming the global, no output;
  - written under --keep-unsafe (shrink, convert to either format);
and a DeepSpeed checkpoint with a gadget injected into a rank file is refused by merge
(and merged under --keep-unsafe).
Benign: every file of fixtures/unsafe/benign/torch1.13 and torch2.6 (written by real torch,
make_benign_corpus.py) is safe, checked against torch's own weights_only=True verdict that
the generator recorded: a file torch loads lists no unsafe global, and every global torch
2.6 refuses is one on zerofold's documented plain-data list (PLAIN_DATA below, from
src/pickle/allowlist.cc).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Z = os.path.abspath(os.environ.get("ZEROFOLD", os.path.join(ROOT, "build", "zerofold")))
CORPUS = os.path.join(ROOT, "fixtures", "unsafe")
sys.path.insert(0, CORPUS)
import make_unsafe_corpus as corpus  # noqa: E402

# Globals torch's default weights_only list refuses and zerofold's plain-data list allows
# (src/pickle/allowlist.cc, kPlainData): numpy values.
PLAIN_DATA = {
    "numpy.ndarray", "numpy.dtype", "numpy.core.multiarray._reconstruct", "numpy.core.multiarray.scalar",
    "numpy._core.multiarray._reconstruct", "numpy._core.multiarray.scalar",
}


def run(*args):
    return subprocess.run([Z, *args], capture_output=True, text=True)


def manifest():
    with open(os.path.join(CORPUS, "manifest.json")) as f:
        return json.load(f)


class Malicious(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_manifest_covers_every_file(self):
        listed = {e["file"] for e in manifest()}
        self.assertEqual(listed, set(os.listdir(os.path.join(CORPUS, "files"))))
        self.assertGreaterEqual(len(listed), 70)

    def test_inspect_reports_each_global_with_its_reason(self):
        for e in manifest():
            if e["form"] == "raw":
                continue  # no checkpoint: test_bare_pickles_are_refused_as_unsafe
            with self.subTest(file=e["file"], source=e["source"]):
                path = os.path.join(CORPUS, "files", e["file"])
                r = run("inspect", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                line = [l for l in r.stdout.splitlines() if l.startswith("  unsafe globals")]
                self.assertEqual(len(line), 1, r.stdout)
                for g in e["unsafe"]:
                    self.assertIn(g + " (", line[0])
                r = run("inspect", "--json", path)
                self.assertEqual(r.returncode, 0, r.stderr)
                doc = json.loads(r.stdout)["files"][0]
                for g in e["unsafe"]:
                    self.assertIn(g, doc["unsafe_globals"])
                    reason = doc["unsafe_reasons"][g]
                    self.assertTrue(reason.startswith("runs code: ") or reason.startswith("not on an allowlist"),
                                    reason)
                self.assertEqual(set(doc["unsafe_reasons"]), set(doc["unsafe_globals"]))

    def test_bare_pickles_are_refused_as_unsafe(self):
        # torch.load runs a bare pickle in full before it finds no checkpoint in it:
        # unsafe (exit 1, error code "unsafe" naming the global), not "not a torch file",
        # and no writing command takes it, --keep-unsafe or not.
        raw = [e for e in manifest() if e["form"] == "raw"]
        self.assertGreaterEqual(len(raw), 60)
        for e in raw:
            with self.subTest(file=e["file"], source=e["source"]):
                path = os.path.join(CORPUS, "files", e["file"])
                r = run("inspect", "--json", path)
                self.assertEqual(r.returncode, 1, r.stderr)
                err = json.loads(r.stdout)["files"][0]["error"]
                self.assertEqual(err["code"], "unsafe")
                self.assertEqual(err["record"], "magic number pickle")
                for g in e["unsafe"]:
                    self.assertIn(g + " (", err["message"])
                for args in (["shrink"], ["convert"], ["shrink", "--keep-unsafe"]):
                    r = run(*args, path, os.path.join(self.tmp, "out.pt"))
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn(": unsafe: ", r.stderr)
                    self.assertEqual(os.listdir(self.tmp), [])

    def test_scan_reports_every_file_unsafe(self):
        # One scan of the whole corpus: each file (zips, legacy files, bare pickles) one line,
        # verdict unsafe, its globals listed with a reason; exit 1.
        r = run("scan", "--json", "--no-progress", os.path.join(CORPUS, "files"))
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = [json.loads(l) for l in r.stdout.splitlines()]
        by = {os.path.basename(l["path"]): l for l in lines if l["type"] == "file"}
        entries = manifest()
        self.assertEqual(set(by), {e["file"] for e in entries})
        for e in entries:
            with self.subTest(file=e["file"], source=e["source"]):
                got = by[e["file"]]
                self.assertEqual(got["verdict"], "unsafe", got)
                for g in e["unsafe"]:
                    self.assertIn(g, got["unsafe_globals"])
                    self.assertTrue(got["unsafe_reasons"][g], got)
        self.assertEqual(lines[-1]["verdicts"]["unsafe"], len(entries))

    def test_named_reasons(self):
        # The cases, each with the reason inspect gives.
        want = {
            "urllib.urlretrieve.pt": ("urllib.urlretrieve",
                                      "runs code: files and the network "
                                      "(protocol < 3 imports it as urllib.request.urlretrieve)"),
            "torch.os.pt": ("torch.os", "runs code: processes and the operating system"),
            "GHSA-f745-w6jp-hpxx.pt": ("torch.utils.collect_env.run", "runs code: processes and the operating system"),
            "__main__.Exploit.pt": ("__main__.Exploit", "not on an allowlist"),
            "legacy_sys_info.pt": ("posix.system", "runs code: processes and the operating system"),
        }
        for name, (g, reason) in want.items():
            with self.subTest(file=name):
                r = run("inspect", "--json", os.path.join(CORPUS, "files", name))
                self.assertEqual(json.loads(r.stdout)["files"][0]["unsafe_reasons"], {g: reason})

    def test_writing_commands_refuse_and_keep_unsafe_writes(self):
        commands = [("shrink", "out.pt"), ("convert", "out.pt"), ("convert", "out.safetensors")]
        for e in manifest():
            if e["form"] == "raw":
                continue
            path = os.path.join(CORPUS, "files", e["file"])
            for command, out_name in commands:
                with self.subTest(file=e["file"], command=command, out=out_name):
                    out = os.path.join(self.tmp, out_name)
                    r = run(command, path, out)
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                    self.assertIn(": unsafe: ", r.stderr)
                    for g in e["unsafe"]:
                        self.assertIn(g, r.stderr)
                    self.assertEqual(os.listdir(self.tmp), [])
                    r = run(command, "--keep-unsafe", "--quiet", path, out)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertTrue(os.path.exists(out))
                    os.remove(out)

    def test_merge_refuses_a_deepspeed_checkpoint_with_a_gadget(self):
        src = os.path.join(ROOT, "fixtures", "deepspeed", "derived_zero0_ws2_bf16_v0185", "ckpt")
        for source, module, name, protocol in [c for c in corpus.CASES if c[0].startswith("issue 27")]:
            with self.subTest(source=source):
                ckpt = os.path.join(self.tmp, "ckpt")
                shutil.copytree(src, ckpt)
                with open(os.path.join(ckpt, "latest")) as f:
                    tag = f.read().strip()
                states = os.path.join(ckpt, tag, "mp_rank_00_model_states.pt")
                with zipfile.ZipFile(states) as z:
                    records = [(i.filename, z.read(i.filename)) for i in z.infolist()]
                with zipfile.ZipFile(states, "w", zipfile.ZIP_STORED) as z:
                    for n, b in records:
                        z.writestr(n, corpus.inject(b, module, name, protocol) if n.endswith("/data.pkl") else b)
                out = os.path.join(self.tmp, "merged.pt")
                r = run("merge", ckpt, out)
                self.assertEqual(r.returncode, 1, r.stderr)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
                self.assertIn(module + "." + name, r.stderr)
                self.assertFalse(os.path.exists(out))
                r = run("merge", "--keep-unsafe", ckpt, out)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(os.path.exists(out))
                shutil.rmtree(ckpt)
                os.remove(out)


class Benign(unittest.TestCase):
    def test_real_torch_files_are_safe_as_torch_says(self):
        seen = 0
        for version in ("torch1.13", "torch2.6"):
            folder = os.path.join(CORPUS, "benign", version)
            with open(os.path.join(folder, "verdicts.json")) as f:
                verdicts = json.load(f)["files"]
            for name, v in sorted(verdicts.items()):
                with self.subTest(file=version + "/" + name):
                    r = run("inspect", "--json", os.path.join(folder, name))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    listed = json.loads(r.stdout)["files"][0]["unsafe_globals"]
                    if v["weights_only"]:
                        self.assertEqual(listed, [])
                    # Every global torch refuses is either listed by zerofold or on its
                    # documented plain-data list; none of these real files lists any.
                    for g in v["unsafe"]:
                        self.assertTrue(g in listed or g in PLAIN_DATA, g)
                    self.assertEqual(listed, [])
                    seen += 1
        self.assertGreaterEqual(seen, 20)

    def test_scan_calls_the_real_torch_files_safe(self):
        for version in ("torch1.13", "torch2.6"):
            folder = os.path.join(CORPUS, "benign", version)
            r = run("scan", "--json", "--no-progress", folder)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(folder, "verdicts.json")) as f:
                names = set(json.load(f)["files"])
            lines = [json.loads(l) for l in r.stdout.splitlines()]
            safe = {os.path.basename(l["path"]) for l in lines if l.get("verdict") == "safe"}
            self.assertEqual(safe, names)

    def test_real_writers_of_merged_formats_stay_safe(self):
        # DeepSpeed, DCP and Megatron fixtures (real writers): nothing unsafe.
        folders = [os.path.join(ROOT, "fixtures", f) for f in ("deepspeed", "dcp", "megatron")]
        checked = 0
        for top in folders:
            for dirpath, _, names in os.walk(top):
                for n in names:
                    if not (n.endswith(".pt") or n.endswith(".bin")) or "/bad" in dirpath:
                        continue
                    path = os.path.join(dirpath, n)
                    r = run("inspect", "--json", path)
                    if r.returncode != 0:
                        continue  # not a checkpoint file on its own (checked by its suite)
                    for f in json.loads(r.stdout)["files"]:
                        with self.subTest(file=path):
                            self.assertEqual(f.get("unsafe_globals", []), [])
                    checked += 1
        self.assertGreater(checked, 50)


if __name__ == "__main__":
    unittest.main()
