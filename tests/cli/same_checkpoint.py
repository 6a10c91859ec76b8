#!/usr/bin/env python3
"""Two tiletrain checkpoints hold the same training state: the same step
counters in the metadata and, tensor by tensor (weights, optimizer state,
running statistics), the same names, shapes and values within a relative
tolerance (max |a - b| over the tensor's largest magnitude).  Reads the
safetensors format with struct + json + numpy; prints the worst tensor.

  same_checkpoint.py A.safetensors B.safetensors [--tol 1e-4] [--scale file] [--only TEXT]
                     [--no-counters]
--scale file measures every difference against the largest magnitude of the
whole file instead of the tensor's own (a gradient that is rounding noise by
design, a bias before batch norm, then does not decide); --only compares
the tensors whose names contain TEXT; --no-counters leaves the step
counters out (runs that split the same windows differently).
Exit status 0 when they agree, 1 (with what differs) when not."""
import json, struct, sys

import numpy as np

COUNTERS = ("step", "updates", "micro_batches", "images_seen", "skipped_steps")
DTYPES = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8"), "U8": np.dtype("u1")}


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = DTYPES[info["dtype"]]
        values = np.frombuffer(data, dtype, (end - begin) // dtype.itemsize, 8 + n + begin)
        tensors[name] = (tuple(info["shape"]), values)
    return meta, tensors


def largest_abs(x):
    return float(np.max(np.abs(x))) if x.size else 0.0


def largest_difference(x, y):
    """max |x - y|, in float64 (exact for float32 values) or int64."""
    if np.array_equal(x, y):
        return 0.0
    wide = np.float64 if x.dtype.kind == "f" else np.int64
    return largest_abs(x.astype(wide) - y.astype(wide))


def main():
    args = sys.argv[1:]
    tol = 1e-4
    if "--tol" in args:
        i = args.index("--tol")
        tol = float(args[i + 1])
        del args[i:i + 2]
    scale_file = False
    if "--scale" in args:
        i = args.index("--scale")
        scale_file = args[i + 1] == "file"
        del args[i:i + 2]
    counters = COUNTERS
    if "--no-counters" in args:
        args.remove("--no-counters")
        counters = ()
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    (meta_a, a), (meta_b, b) = read(args[0]), read(args[1])
    if only is not None:
        a = {k: v for k, v in a.items() if only in k}
        b = {k: v for k, v in b.items() if only in k}
    largest = max((largest_abs(x) for _, x in a.values()), default=0.0)
    problems = []
    for key in counters:
        if meta_a.get(key) != meta_b.get(key):
            problems.append(f"metadata {key}: {meta_a.get(key)} vs {meta_b.get(key)}")
    for mine, other, which in ((a, b, "A"), (b, a, "B")):
        only = sorted(set(mine) - set(other))
        if only:
            problems.append(f"{len(only)} tensors only in {which}: {', '.join(only[:4])}"
                            + (", ..." if len(only) > 4 else ""))
    worst, worst_name = 0.0, "(none)"
    for name in sorted(set(a) & set(b)):
        (shape_a, x), (shape_b, y) = a[name], b[name]
        if shape_a != shape_b:
            problems.append(f"{name}: shape {shape_a} vs {shape_b}")
            continue
        if not np.isfinite(x).all() or not np.isfinite(y).all():
            problems.append(f"{name}: not finite")
            continue
        scale = max(largest if scale_file else largest_abs(x), 1e-6)
        e = largest_difference(x, y) / scale
        if e > worst:
            worst, worst_name = e, name
    steps = (f"step {meta_a['step']} = {meta_b.get('step')}, " if "step" in meta_a else "")
    print(f"{steps}{len(a)} tensors, worst {worst:.2e} ({worst_name}), tolerance {tol:.0e}")
    if worst > tol:
        problems.append(f"{worst_name} differs by {worst:.2e} (relative to its largest value)")
    for p in problems:
        print("differs:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
