#!/usr/bin/python3
"""Benchmark of --part I/N (issue 13): one process against N = 2 parts side by side.

The claim under test: on this machine, `zerofold merge` (or `shrink` of a folder) run as
`--part 0/2` and `--part 1/2` side by side, then `--part finish`, reads and writes in total
the bytes one run does (no part reads another part's bytes beyond the metadata every part
plans from), and the slowest part's wall time is what a job array waits for.

Cases (--cases, default all three):
  dcp     bench/dcp_gen.py: an 8-rank torch 1.13 Distributed Checkpoint, 1.76 GB of fp32
          weights in 5.27 GB of .distcp files; `zerofold merge --max-shard-size 300MB`
          (7 torch files)
  zero    build/bench/merge_gen: a ZeRO-3 checkpoint, world size 4, 1.51 GB of fp32 params
          in 4.54 GB of files; `zerofold merge --max-shard-size 200MB` (7 torch files)
  shrink  build/bench/shrink_gen: a bloated folder of 4 shards, each carrying the whole 1 GiB
          bf16 flat buffer (4.29 GB of files, 1.07 GB of params, largest tensor 128 MiB);
          `zerofold shrink IN OUT/` (4 output shards; parts divide the shards by input bytes)

For each case:
1. The input is generated; `--dry-run --json --part I/2` gives each part's files and bytes.
2. Untimed: one run with --verify writes the reference folder (the floors' input); a dry run
   measures the reads of planning alone (PLAN: what every part and finish read again).
3. ROUNDS alternating rounds, the order rotating, each run after removing the previous
   output, `sync`, dropping the page cache (`echo 3 > /proc/sys/vm/drop_caches`, as root;
   --warm or no permission: not dropped, and the report says so) and SETTLE seconds:
     single  one `zerofold ... OUT` (no --part; includes its fsyncs)
     parts   `--part 0/2` and `--part 1/2` started together, both waited for, then
             `--part finish`; parts' total = the slowest part + finish
     floor   `cat` of every reference output file to a new file, then `sync` (one stream)
     floor2  two `cat`s side by side, each of one part's files, then `sync`: the same floor
             as two streams on the same disk
   The first parts run's folder is compared with the reference byte for byte.
   Then, for the first case only (one disk), a disk probe of PROBE_ROUNDS alternating rounds
   (see disk_probe): cold `cat` to /dev/null, `dd` direct reads, `dd` direct writes, and
   direct reads and writes at once, of the output's bytes, as one stream and as two side by
   side: what the disk gives one process and two, without the page cache's copies that
   `cat > file` pays.
4. Per zerofold process: wall time (monotonic clock, from the start of the run to the
   process's exit), peak RSS and CPU from wait4's rusage, and /proc/PID/io. How the I/O is
   read: the driver waits with waitid(WEXITED | WNOWAIT), which returns when the process
   has exited but leaves it a zombie; its /proc/PID/io then holds the final totals (every
   thread's counts are folded into the process's when the thread exits), read once, then
   wait4 reaps it. No sampling, nothing lost between a last sample and the exit.
     rchar/wchar            bytes passed through read/pread/write/pwrite calls, cached or
                            not (the figure compared; the dynamic loader's reads of the
                            shared libraries' headers included, a few KiB per process)
     read_bytes/write_bytes bytes the process caused to be fetched from / sent to the
                            block device (page cache misses incl. readahead; O_DIRECT
                            writes). With the cache dropped, reads show the disk's share.
5. Checks (exit 1 if any fails):
   - reads: sum of rchar over parts + finish <= single's rchar + N x PLAN + 64 KiB, where
     PLAN is the dry run's rchar. Justification: a part and finish each plan from the same
     metadata the single run plans from (DCP: .metadata and every chunk archive's
     directory; ZeRO: the rank files' pickles; shrink: the shards' data.pkl), so N + 1
     processes plan where one did, N plans more. The 64 KiB is room for what a real run's
     metadata reads add to a dry run's (measured: 0.6-1.0 KB over the N + 1 processes).
     A part reading another part's tensor bytes would exceed this by hundreds of MB.
   - per part: rchar - PLAN <= the output bytes of its own files (a part's tensor reads are
     at most its files' bytes; another part's file is ~800 MB more).
   - writes: sum of wchar over parts + finish equals single's wchar within 64 KiB (the
     index is written by finish instead).
6. Medians of every figure, ratios, the every-run lists and the load average range are
   printed and appended to bench/RESULTS.md with the machine and date (not with
   --no-results). Generated files are removed at the end unless --keep.

usage: bench/parts_bench.py [--build build] [--work DIR] [--cases dcp,zero,shrink]
                            [--rounds 5] [--settle 3] [--probe-rounds 3] [--warm] [--keep]
                            [--no-results]
The defaults take about 10 minutes on the 2-core VM (generation included); a quick
end-to-end check: --cases zero --rounds 1 --probe-rounds 1 --no-results
"""

import argparse
import datetime
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
MiB = 2**20
N = 2  # parts
SLACK = 64 * 1024
CONTENDERS = ("single", "parts", "floor", "floor2")

sys.path.insert(0, HERE)
from merge_bench import machine, run_measured, sync  # noqa: E402  (the merge benchmark's conventions)


# ---- measuring processes ----------------------------------------------------------------

def read_io(pid):
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f)}


def spawn(argv, err_path):
    """posix_spawn of argv, stdout to /dev/null, stderr to err_path; returns the pid."""
    actions = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)]
    return os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)


def run_together(argvs, err_dir):
    """Starts every argv at once and waits for all; returns one record per argv:
    {wall, rss, cpu, io} with wall from the common start to that process's exit."""
    start = time.monotonic()
    pids = {}
    for i, argv in enumerate(argvs):
        pids[spawn(argv, os.path.join(err_dir, f"stderr.{i}"))] = i
    records = [None] * len(argvs)
    while pids:
        # WNOWAIT: the process has exited but stays a zombie, so its /proc/PID/io holds the
        # final counts; wait4 then reaps it for the rusage.
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)
        wall = time.monotonic() - start
        pid = info.si_pid
        io = read_io(pid) if pid in pids else None
        _, status, usage = os.wait4(pid, 0)
        if pid not in pids:
            continue
        i = pids.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            with open(os.path.join(err_dir, f"stderr.{i}")) as f:
                sys.exit(f"{' '.join(argvs[i])} failed with exit {code}:\n{f.read()}")
        records[i] = {"wall": wall, "rss": usage.ru_maxrss * 1024, "cpu": usage.ru_utime + usage.ru_stime,
                      "io": io}
    return records


def drop_caches(warm):
    """sync, then drops the page cache; False where not permitted (or --warm)."""
    sync()
    if warm:
        return False
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def cache_text(dropped, warm):
    """What the runs read from, given drop_caches' results for each run."""
    if all(dropped):
        return "the page cache dropped before every run (cold reads)"
    if warm:
        return "inputs in the page cache (--warm)"
    if not any(dropped):
        return "inputs in the page cache (dropping it was not permitted)"
    return "the page cache dropped before some runs only"


def alternate(commands, outputs, rounds, warm, runners=None):
    """Runs each of `commands` (name -> argv) `rounds` times, the order rotating by one name a
    round, each run after removing its last output (outputs: name -> file or folder) and dropping
    the page cache (drop_caches). runners: name -> a function of argv giving (wall seconds, peak
    RSS bytes); run_measured by default. Prints a line a run. Returns ({name: [(wall, rss)]}, the
    load average before each run, drop_caches' result for each run)."""
    results = {name: [] for name in commands}
    loads, dropped = [], []
    order = list(commands)
    for round_ in range(rounds):
        for name in order[round_ % len(order):] + order[:round_ % len(order)]:
            if os.path.isdir(outputs[name]):
                shutil.rmtree(outputs[name])
            elif os.path.exists(outputs[name]):
                os.remove(outputs[name])
            dropped.append(drop_caches(warm))
            loads.append(loadavg())
            wall, rss = (runners or {}).get(name, run_measured)(commands[name])
            results[name].append((wall, rss))
            print(f"round {round_ + 1} {name:9s} {wall:8.2f} s  peak RSS {rss / 2**20:8.1f} MiB  "
                  f"(load {loads[-1]:.1f})", flush=True)
    return results, loads, dropped


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# ---- cases ------------------------------------------------------------------------------

def make_case(name, work, build):
    """Generates the input of a case; returns {cmd, ckpt, flags, describe}."""
    ckpt = os.path.join(work, name + "_ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    start = time.monotonic()
    if name == "dcp":
        subprocess.run(["nice", PY, os.path.join(HERE, "dcp_gen.py"), ckpt], check=True, stdout=subprocess.DEVNULL)
        files = sum(os.path.getsize(os.path.join(ckpt, f)) for f in os.listdir(ckpt))
        case = {"cmd": "merge", "flags": ["--max-shard-size", "300MB"],
                "describe": f"bench/dcp_gen.py: 8-rank torch 1.13 Distributed Checkpoint, {files / 1e9:.2f} GB of "
                            f".distcp files (model weights and Adam state); `zerofold merge --max-shard-size 300MB` "
                            f"(the model weights, torch output)"}
    elif name == "zero":
        info = json.loads(subprocess.run([os.path.join(build, "bench", "merge_gen"), ckpt], check=True,
                                         capture_output=True, text=True).stdout)
        case = {"cmd": "merge", "flags": ["--max-shard-size", "200MB"],
                "describe": f"bench/merge_gen.cc: ZeRO-3, world size {info['world_size']}, "
                            f"{info['params_bytes'] / 1e9:.2f} GB of fp32 params in {info['files_bytes'] / 1e9:.2f} GB "
                            f"of files; `zerofold merge --max-shard-size 200MB` (torch output)"}
    elif name == "shrink":
        info = json.loads(subprocess.run([os.path.join(build, "bench", "shrink_gen"), ckpt, str(2**30), "4", "30",
                                          "bfloat16", str(2**27)], check=True, capture_output=True, text=True).stdout)
        case = {"cmd": "shrink", "flags": [],
                "describe": f"bench/shrink_gen.cc: 4 shards each carrying the whole 1 GiB bf16 flat buffer, "
                            f"{info['files_bytes'] / 1e9:.2f} GB of files, "
                            f"{info['params_bytes'] / 1e9:.2f} GB of params (largest tensor 128 MiB); "
                            f"`zerofold shrink IN OUT/` (parts divide the shards by input bytes)"}
    else:
        sys.exit(f"unknown case {name!r}")
    sync()
    print(f"{name}: generated in {time.monotonic() - start:.1f} s", flush=True)
    case.update(name=name, ckpt=ckpt)
    return case


def argv_of(zerofold, case, out, *extra):
    out_arg = out + "/" if case["cmd"] == "shrink" else out
    return [zerofold, case["cmd"], "--quiet", "--no-progress", *case["flags"], *extra, case["ckpt"], out_arg]


def plan_parts(zerofold, case, work):
    """[(files (basenames), output bytes)] per part, from the dry run's JSON."""
    q = os.path.join(work, "dry")
    parts = []
    for i in range(N):
        r = subprocess.run(argv_of(zerofold, case, q, "--dry-run", "--json", "--part", f"{i}/{N}"),
                           check=True, capture_output=True, text=True)
        doc = json.loads(r.stdout)
        if case["cmd"] == "merge":
            size = {o["path"]: o["bytes"] for o in doc["outputs"]}
            p = doc["parts"][i]
            parts.append(([os.path.basename(f) for f in p["files"]], sum(size[f] for f in p["files"])))
        else:
            parts.append(([os.path.basename(f["output"]) for f in doc["files"]],
                          sum(f["output_bytes"] for f in doc["files"])))
    return parts


def bench_case(args, zerofold, case):
    work = args.work
    ref, out = os.path.join(work, "ref"), os.path.join(work, "out")
    floor_out = os.path.join(work, "floor")
    err_dir = os.path.join(work, "stderr")
    os.makedirs(err_dir, exist_ok=True)
    for p in (ref, out, floor_out):
        shutil.rmtree(p, ignore_errors=True)

    parts = plan_parts(zerofold, case, work)
    r = subprocess.run(argv_of(zerofold, case, ref, "--verify"), capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"reference run failed ({r.returncode}):\n{r.stderr}")
    ref_files = sorted(f for f in os.listdir(ref) if os.path.getsize(os.path.join(ref, f)) > 0)
    out_bytes = sum(os.path.getsize(os.path.join(ref, f)) for f in ref_files)
    planned = sorted(f for files, _ in parts for f in files)
    data_files = sorted(f for f in ref_files if f in planned)
    if planned != data_files or len(planned) < 4:
        sys.exit(f"{case['name']}: the parts' files {planned} are not the output's {ref_files} (or fewer than 4)")
    # Planning alone: what every part and finish read again.
    (plan,) = run_together([argv_of(zerofold, case, os.path.join(work, "dry"), "--dry-run", "--json")], err_dir)
    plan_rchar = plan["io"]["rchar"]
    print(f"{case['name']}: {len(planned)} output files, {out_bytes} bytes; parts "
          + ", ".join(f"{i}: {len(f)} files {b} bytes" for i, (f, b) in enumerate(parts))
          + f"; a dry run reads {plan_rchar} bytes", flush=True)

    results = {c: [] for c in CONTENDERS}
    dropped, loads = [], []
    compared = False
    for round_ in range(args.rounds):
        k = round_ % len(CONTENDERS)
        for name in CONTENDERS[k:] + CONTENDERS[:k]:
            for p in (out, floor_out):
                shutil.rmtree(p, ignore_errors=True)
            dropped.append(drop_caches(args.warm))
            time.sleep(args.settle)
            loads.append(loadavg())
            if name == "single":
                (rec,) = run_together([argv_of(zerofold, case, out)], err_dir)
                row = {"wall": rec["wall"], "procs": {"single": rec}}
            elif name == "parts":
                recs = run_together([argv_of(zerofold, case, out, "--part", f"{i}/{N}") for i in range(N)], err_dir)
                (fin,) = run_together([argv_of(zerofold, case, out, "--part", "finish")], err_dir)
                row = {"wall": max(r["wall"] for r in recs) + fin["wall"],
                       "procs": {**{f"part{i}": r for i, r in enumerate(recs)}, "finish": fin}}
                if not compared:
                    names = sorted(os.listdir(ref))
                    if sorted(os.listdir(out)) != names:
                        sys.exit(f"parts + finish wrote {sorted(os.listdir(out))}, one run {names}")
                    _, mismatch, errors = filecmp.cmpfiles(ref, out, names, shallow=False)
                    if mismatch or errors:
                        sys.exit(f"parts + finish differ from one run: {mismatch + errors}")
                    compared = True
                    print(f"{case['name']}: parts + finish = one run, byte for byte ({len(names)} files)", flush=True)
            else:
                os.makedirs(floor_out)
                streams = [ref_files] if name == "floor" else [files for files, _ in parts]
                cmds = [["sh", "-c", " && ".join(f"cat '{os.path.join(ref, f)}' > '{os.path.join(floor_out, f)}'"
                                                 for f in files)] for files in streams]
                start = time.monotonic()
                recs = run_together(cmds, err_dir)
                sync()
                row = {"wall": time.monotonic() - start, "procs": {}}
            results[name].append(row)
            detail = "  ".join(f"{p} {r['wall']:.2f} s {r['rss'] / MiB:.0f} MiB" for p, r in row["procs"].items())
            print(f"{case['name']} round {round_ + 1} {name:6s} {row['wall']:7.2f} s  {detail}", flush=True)
    for p in (out, floor_out):
        shutil.rmtree(p, ignore_errors=True)
    probe = disk_probe(args, ref, [ref_files] + [files for files, _ in parts], out_bytes, err_dir) \
        if args.probe_rounds else None
    return {"case": case, "parts": parts, "out_bytes": out_bytes, "n_files": len(planned), "plan_rchar": plan_rchar,
            "results": results, "dropped": dropped, "loads": loads, "probe": probe}


PROBES = ("cat1", "cat2", "read1", "read2", "write1", "write2", "rw1", "rw2")


def disk_probe(args, ref, streams, nbytes, err_dir):
    """The disk alone, one stream against two (each part's files, or half the bytes, side by
    side), the cache dropped and 1 s of settling before each:
      cat    `cat` of the reference output to /dev/null: cold reads through the page cache,
             as zerofold reads its inputs
      read   `dd iflag=direct bs=4M` of the same files: the device's reads alone
      write  `dd oflag=direct conv=fsync bs=4M` of as many bytes: the device's writes, as
             zerofold's writer issues them
      rw     read and write at once (one reader and one writer; two of each): the device
             shared by reads and writes, as in a merge
    Returns {"walls": {probe: [wall, ...]}, "bytes": the bytes read (and written) per probe}."""
    scratch = os.path.join(args.work, "probe")
    blocks = nbytes // (4 * MiB) // N * N

    def reader(files, tool):
        if tool == "cat":
            return ["sh", "-c", "cat " + " ".join(f"'{os.path.join(ref, f)}'" for f in files) + " >/dev/null"]
        return ["sh", "-c", "; ".join(f"dd if='{os.path.join(ref, f)}' of=/dev/null bs=4M iflag=direct status=none"
                                      for f in files)]

    def writer(name, count):
        return ["dd", "if=/dev/zero", f"of={os.path.join(scratch, name)}", "bs=4M", f"count={count}",
                "oflag=direct", "conv=fsync", "status=none"]
    halves = [writer(f"w{i}", blocks // N) for i in range(N)]
    cmds = {"cat1": [reader(streams[0], "cat")], "cat2": [reader(f, "cat") for f in streams[1:]],
            "read1": [reader(streams[0], "dd")], "read2": [reader(f, "dd") for f in streams[1:]],
            "write1": [writer("w", blocks)], "write2": halves,
            "rw1": [reader(streams[0], "dd"), writer("w", blocks)],
            "rw2": [reader(f, "dd") for f in streams[1:]] + halves}
    walls = {p: [] for p in PROBES}
    for round_ in range(args.probe_rounds):
        k = round_ % len(PROBES)
        for name in PROBES[k:] + PROBES[:k]:
            shutil.rmtree(scratch, ignore_errors=True)
            os.makedirs(scratch)
            drop_caches(args.warm)
            time.sleep(1)
            recs = run_together(cmds[name], err_dir)
            walls[name].append(max(r["wall"] for r in recs))
            print(f"disk probe round {round_ + 1} {name:6s} {walls[name][-1]:7.2f} s", flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    return {"walls": walls, "bytes": nbytes}


# ---- report -----------------------------------------------------------------------------

def med(values):
    return statistics.median(values)


def proc_median(rows, proc, key):
    return med(r["procs"][proc][key] for r in rows)


def io_median(rows, proc, key):
    return med(r["procs"][proc]["io"][key] for r in rows)


def report(run, verdicts):
    case, res = run["case"], run["results"]
    single, parts = res["single"], res["parts"]
    plan_rchar = run["plan_rchar"]
    w = {c: med(r["wall"] for r in res[c]) for c in CONTENDERS}
    part_walls = [[r["procs"][f"part{i}"]["wall"] for r in parts] for i in range(N)]
    slowest = [max(r["procs"][f"part{i}"]["wall"] for i in range(N)) for r in parts]
    finish = [r["procs"]["finish"]["wall"] for r in parts]
    procs = ["single"] + [f"part{i}" for i in range(N)] + ["finish"]

    def rows_of(p):
        return single if p == "single" else parts

    # I/O sums per round (exact counts; every round must pass, the medians are reported).
    keys = ("rchar", "wchar", "read_bytes", "write_bytes")
    sums = {k: [sum(r["procs"][p]["io"][k] for p in procs[1:]) for r in parts] for k in keys}
    one = {k: [r["procs"]["single"]["io"][k] for r in single] for k in keys}
    allowed = N * plan_rchar + SLACK
    extra_read = [s - med(one["rchar"]) for s in sums["rchar"]]
    extra_write = [s - med(one["wchar"]) for s in sums["wchar"]]
    name = case["name"]

    def check(ok, text):
        verdicts.append(f"{'PASS' if ok else 'FAIL'}: {name}: {text}")

    spread_r = max(one["rchar"]) - min(one["rchar"])
    check(max(extra_read) <= allowed,
          f"parts + finish read {med(extra_read):+,} bytes against one run (max over rounds {max(extra_read):+,}; "
          f"{100 * med(extra_read) / med(one['rchar']):+.3f}%) <= {N} x {plan_rchar:,} bytes of planning + 64 KiB "
          f"= {allowed:,} (single run's rchar varies by {spread_r:,} bytes over rounds)")
    for i, (files, nbytes) in enumerate(run["parts"]):
        got = max(r["procs"][f"part{i}"]["io"]["rchar"] for r in parts) - plan_rchar
        check(got <= nbytes, f"part {i}/{N} read {got:,} bytes beyond planning <= its {len(files)} files' "
                             f"{nbytes:,} bytes")
    check(max(abs(x) for x in extra_write) <= SLACK,
          f"parts + finish wrote {med(extra_write):+,} bytes against one run (max |difference| over rounds "
          f"{max(abs(x) for x in extra_write):,}) within 64 KiB")

    gb = run["out_bytes"] / 1e9
    lines = [f"### {name}", "",
             f"{case['describe']}. Output: {run['n_files']} files, {gb:.2f} GB; part 0 "
             f"{len(run['parts'][0][0])} files / {run['parts'][0][1] / 1e9:.3f} GB, part 1 "
             f"{len(run['parts'][1][0])} files / {run['parts'][1][1] / 1e9:.3f} GB. A dry run (planning alone) "
             f"reads {plan_rchar:,} bytes.", "",
             "| run | median wall (s) | best (s) | / single | / floor | GB/s of output |",
             "|---|---|---|---|---|---|"]
    labels = {"single": "single: one zerofold process",
              "parts": f"parts: slowest of {N} side by side + finish",
              "floor": "floor: cat output + sync (one stream)",
              "floor2": f"floor2: {N} cats side by side + sync"}
    for c in CONTENDERS:
        best = min(r["wall"] for r in res[c])
        lines.append(f"| {labels[c]} | {w[c]:.2f} | {best:.2f} | {w[c] / w['single']:.2f}x | {w[c] / w['floor']:.2f}x "
                     f"| {gb / w[c]:.2f} |")
    lines += ["", "Per process, medians:", "",
              "| process | wall (s) | CPU (s) | peak RSS (MiB) | rchar | wchar | read_bytes | write_bytes |",
              "|---|---|---|---|---|---|---|---|"]
    for p in procs:
        rows = rows_of(p)
        lines.append(f"| {p} | {proc_median(rows, p, 'wall'):.2f} | {proc_median(rows, p, 'cpu'):.2f} | "
                     f"{proc_median(rows, p, 'rss') / MiB:.1f} | "
                     + " | ".join(f"{io_median(rows, p, k):,}" for k in keys) + " |")
    lines.append("| parts + finish, summed | | | | " + " | ".join(f"{med(sums[k]):,}" for k in keys) + " |")
    lines.append("| difference to single | | | | " + " | ".join(
        f"{med(sums[k]) - med(one[k]):+,}" + (f" ({100 * (med(sums[k]) - med(one[k])) / med(one[k]):+.3f}%)"
                                              if med(one[k]) >= MiB else "")
        for k in keys) + " |")
    lines += ["",
              f"Slowest part {med(slowest):.2f} s + finish {med(finish):.2f} s = {w['parts']:.2f} s against one "
              f"process {w['single']:.2f} s: {w['single'] / w['parts']:.2f}x the speed; the part walls "
              f"{med(part_walls[0]):.2f} s and {med(part_walls[1]):.2f} s. Two streams of `cat` gave "
              f"{w['floor'] / w['floor2']:.2f}x one stream's speed on this disk "
              f"({gb / w['floor']:.2f} -> {gb / w['floor2']:.2f} GB/s).",
              "",
              "Every run (s): " + "; ".join(f"{c} " + ", ".join(f"{r['wall']:.2f}" for r in res[c]) for c in CONTENDERS)
              + "; slowest part " + ", ".join(f"{x:.2f}" for x in slowest)
              + "; finish " + ", ".join(f"{x:.2f}" for x in finish) + ".",
              f"Page cache dropped before {sum(run['dropped'])} of {len(run['dropped'])} runs; load average "
              f"{min(run['loads']):.2f}-{max(run['loads']):.2f} at the runs' starts.", ""]
    if run["probe"]:
        lines += probe_lines(run["probe"])
    return lines


def probe_lines(probe):
    walls, gb = probe["walls"], probe["bytes"] / 1e9
    w = {p: med(v) for p, v in walls.items()}
    rows = (("cat: cold reads through the page cache", "cat"), ("read: dd iflag=direct, 4 MiB", "read"),
            ("write: dd oflag=direct conv=fsync, 4 MiB", "write"), ("rw: read and write at once, direct", "rw"))
    lines = [f"Disk probe, {gb:.2f} GB (this case's output) read and/or written, one stream against two side by "
             f"side ({len(walls['cat1'])} alternating rounds, medians; rw moves the bytes both ways, its GB/s counts "
             f"each byte once):", "",
             "| probe | one stream (s) | GB/s | two streams (s) | GB/s | two / one |",
             "|---|---|---|---|---|---|"]
    for label, p in rows:
        one, two = w[p + "1"], w[p + "2"]
        lines.append(f"| {label} | {one:.2f} | {gb / one:.2f} | {two:.2f} | {gb / two:.2f} | {one / two:.2f}x |")
    lines += ["", "Every probe (s): " + "; ".join(f"{p} " + ", ".join(f"{x:.2f}" for x in walls[p]) for p in PROBES)
              + ".", ""]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "parts_bench_data"))
    ap.add_argument("--cases", default="dcp,zero,shrink")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--settle", type=float, default=3.0, help="seconds to wait after dropping the cache")
    ap.add_argument("--warm", action="store_true", help="do not drop the page cache between runs")
    ap.add_argument("--probe-rounds", type=int, default=3, help="rounds of the disk probe (first case only; 0: none)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-results", action="store_true", help="do not append to bench/RESULTS.md")
    args = ap.parse_args()
    zerofold = os.path.join(args.build, "zerofold")
    os.makedirs(args.work, exist_ok=True)
    print(subprocess.run(["df", "-h", args.work], capture_output=True, text=True).stdout.strip())
    if shutil.disk_usage(args.work).free < 20 * 10**9:
        sys.exit(f"need 20 GB free in {args.work}")

    started = time.monotonic()
    runs = []
    try:
        for name in args.cases.split(","):
            case = make_case(name, args.work, args.build)
            try:
                runs.append(bench_case(args, zerofold, case))
                args.probe_rounds = 0  # one disk: probed once
            finally:
                if not args.keep:
                    shutil.rmtree(case["ckpt"], ignore_errors=True)
    finally:
        if not args.keep:
            for p in ("ref", "out", "floor", "dry", "stderr", "probe"):
                shutil.rmtree(os.path.join(args.work, p), ignore_errors=True)

    verdicts = []
    body = []
    for run in runs:
        body += report(run, verdicts)
    dropped = all(all(r["dropped"]) for r in runs)
    lines = [f"## parts: one process against --part 0/2 and 1/2 side by side + finish "
             f"({datetime.date.today().isoformat()})", "",
             f"Machine: {machine()}.",
             f"`python3 bench/parts_bench.py --cases {args.cases} --rounds {args.rounds}"
             f"{' --warm' if args.warm else ''}` "
             f"({time.monotonic() - started:.0f} s in all). Medians of {args.rounds} alternating rounds; before "
             f"every run the previous output removed, `sync`, "
             + ("the page cache dropped (`echo 3 > /proc/sys/vm/drop_caches`): every run reads its input from "
                "the disk" if dropped else
                "the page cache kept (--warm): the inputs are read from memory" if args.warm else
                "the page cache NOT dropped in every run (see each case)")
             + f", {args.settle:g} s of settling. Wall times include each process's fsyncs (floors: `sync`). "
             "I/O from /proc/PID/io read at exit (the process waited for as a zombie, so the counts are final): "
             "rchar/wchar are bytes through read/write calls, read_bytes/write_bytes what reached the "
             "block device.", ""] + body + [f"- {v}" for v in verdicts] + [""]
    text = "\n".join(lines)
    print(text)
    if not args.no_results:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write("\n" + text)
    if any(v.startswith("FAIL") for v in verdicts):
        sys.exit(1)


if __name__ == "__main__":
    main()
