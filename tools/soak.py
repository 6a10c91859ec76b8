#!/usr/bin/env python3
"""A soak of `tiletrain train` (issue 44): many optimizer steps of a small
recipe, validation and checkpoints at intervals, with each training
process's resident memory and open file descriptors sampled from /proc and
the device bytes read from train.jsonl.  Samples are compared in two
windows of the run's time, after the warm-up (the first fifth) and before
the end (the last tenth: the end's validation, checkpoint and report):
early (20%..50%) and late (50%..90%).  Nothing may grow:

  - resident memory: its largest value late is at most --rss-slack bytes
    above its largest early: a leak of a few bytes a step over thousands
    of steps shows, allocator noise does not;
  - open file descriptors: the fewest open late no more than the fewest
    early (a checkpoint being written, or MPI's own, come and go: a
    sample may catch one open, but a leaked one stays);
  - device bytes (peak_device_bytes of each step line after warm-up): one
    value.

  tools/soak.py --build build [--steps 10000] [--ranks 2] [--json OUT]

Exit 0 when nothing grew, 1 when something did (what and by how much is
printed), 2 on a failed run.  Only the Python standard library.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def children(pid):
    """The processes whose parent is pid (mpirun's ranks)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(name))
        except OSError:
            pass
    return out


def sample(pid):
    """(resident bytes, open descriptors) of pid, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--ranks", type=int, default=1, help="under mpirun -np RANKS when above 1")
    ap.add_argument("--every", type=float, default=0.1, help="seconds between samples")
    ap.add_argument("--rss-slack", type=int, default=512 << 10)
    ap.add_argument("--json", help="write the samples and the verdict here")
    a = ap.parse_args()
    tt = os.path.abspath(os.path.join(a.build, "tiletrain"))
    work = tempfile.mkdtemp(prefix="tt-soak-")
    try:
        data, run = os.path.join(work, "data"), os.path.join(work, "run")
        subprocess.run([tt, "data", "synth", "--out", data, "--format", "kaggle-rle", "--count", "8",
                        "--size", "64x96", "--classes", "2", "--seed", "3"], check=True,
                       stdout=subprocess.DEVNULL)
        every = max(1, a.steps // 20)
        cmd = [tt, "train", "--data", data, "--out", run, "--cache-dir", os.path.join(work, "tiles"),
               "--plan", "off", "--tile", "32x32", "--micro-batch", "2", "--accum", "1",
               "--steps", str(a.steps), "--base-channels", "4", "--depth", "2", "--groups", "2",
               "--val-fraction", "0.25", "--val-every", str(every), "--checkpoint-every",
               str(2 * every), "--quiet"]
        if a.ranks > 1:
            mpirun = shutil.which("mpirun")
            if not mpirun:
                print("soak: mpirun not found", file=sys.stderr)
                return 2
            cmd = [mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(a.ranks),
                   "-x", "POCL_MAX_PTHREAD_COUNT=1"] + cmd
        start = time.time()
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        samples = []  # (seconds, [(rss, fds) per rank])
        while proc.poll() is None:
            pids = children(proc.pid) if a.ranks > 1 else [proc.pid]
            got = [s for s in (sample(p) for p in pids) if s]
            if len(got) == a.ranks:
                samples.append((time.time() - start, got))
            time.sleep(a.every)
        err = proc.stderr.read()
        if proc.returncode != 0:
            print(f"soak: the run failed ({proc.returncode}):\n{err}", file=sys.stderr)
            return 2
        lines = [json.loads(l) for l in open(os.path.join(run, "train.jsonl"))]
        steps = [l for l in lines if "loss" in l]
        device = sorted({l["peak_device_bytes"] for l in steps[len(steps) // 5:]})
        checks, grew = [], False
        n = len(samples)
        if n < 20:
            print(f"soak: only {n} samples in {time.time() - start:.1f} s; give more --steps",
                  file=sys.stderr)
            return 2
        for r in range(a.ranks):
            rss = [s[1][r][0] for s in samples]
            fds = [s[1][r][1] for s in samples]
            early, late = slice(n // 5, n // 2), slice(n // 2, n * 9 // 10)
            growth = max(rss[late]) - max(rss[early])
            fd_early, fd_late = min(fds[early]), min(fds[late])
            bad = growth > a.rss_slack or fd_late > fd_early
            grew |= bad
            checks.append({"rank": r, "rss_early_max": max(rss[early]), "rss_late_max": max(rss[late]),
                           "rss_growth": growth, "fds_early_min": fd_early, "fds_late_min": fd_late,
                           "grew": bad})
            print(f"rank {r}: resident at most {max(rss[early]) / 2**20:.1f} MiB early, "
                  f"{max(rss[late]) / 2**20:.1f} MiB late ({growth:+d} bytes); open descriptors "
                  f"at least {fd_early} early, {fd_late} late{'  GREW' if bad else ''}")
        if len(device) > 1:
            grew = True
        print(f"device bytes after warm-up: {device}{'  GREW' if len(device) > 1 else ''}")
        print(f"{len(steps)} steps, {sum('validation' in l for l in lines)} validations, "
              f"{n} samples in {samples[-1][0]:.1f} s, {a.ranks} rank(s): "
              f"{'something grew' if grew else 'nothing grew'}")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"steps": len(steps), "ranks": a.ranks, "checks": checks,
                           "device_bytes": device, "grew": grew,
                           "samples": [[t] + [list(x) for x in s] for t, s in samples]}, f)
        return 1 if grew else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
