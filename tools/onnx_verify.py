#!/usr/bin/env python3
"""Runs an ONNX file that `tiletrain export` wrote in onnxruntime and
compares its output with tiletrain's own (`tiletrain export --verify`
writes the inputs and tiletrain's outputs, then runs this; the command
embeds this file, so an installed tiletrain needs no source tree).

  onnx_verify.py --model M.onnx --tolerance 1e-4 NAME:INPUT:REFERENCE:N,C,H,W:CLASSES ...

Each INPUT is float32 (N, C, H, W) pixel values, each REFERENCE float32
(N, CLASSES, H, W), both raw little-endian.  For each pair it prints
max |diff| / max |reference| (and, where the batch is symbolic, the same
for all pairs of one shape as one batch) and fails (exit 1) when that is above the
tolerance; exit 4 when onnxruntime refuses the file, 3 when onnxruntime or numpy is missing (the message says
the pip command).  Needs numpy and onnxruntime (tools/venv.sh installs them).
"""
import argparse
import sys


def compare(session, input_name, label, x, want):
    """max |diff| / max |want| of the session's output on x, printed; None
    when the shapes differ."""
    import numpy as np
    got = session.run(None, {input_name: x})[0]
    if got.shape != want.shape:
        print(f"{label}: onnxruntime gave shape {got.shape}, tiletrain {want.shape}")
        return None
    diff = float(np.abs(got.astype(np.float64) - want).max())
    scale = float(np.abs(want).max()) or 1.0
    print(f"{label}: max |diff| {diff:.3g}, max |output| {scale:.3g}, |diff| / scale {diff / scale:.3g}")
    return diff / scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--tolerance", type=float, default=1e-4)
    ap.add_argument("pairs", nargs="+", help="NAME:INPUT:REFERENCE:N,C,H,W:CLASSES")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"--verify: {e.name} is not installed for {sys.executable}: run "
              f"{sys.executable} -m pip install onnxruntime numpy (tools/venv.sh makes "
              f"build/venv with them), or give --python an interpreter that has them",
              file=sys.stderr)
        return 3
    try:
        session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime's own exception types vary by version
        print(f"--verify: onnxruntime cannot load {args.model}: {e}", file=sys.stderr)
        return 4
    graph_input = session.get_inputs()[0]
    worst = 0.0
    xs, wants = [], []
    for pair in args.pairs:
        name, inp, ref, shape, classes = pair.split(":")
        n, c, h, w = (int(v) for v in shape.split(","))
        xs.append(np.fromfile(inp, dtype="<f4").reshape(n, c, h, w))
        wants.append(np.fromfile(ref, dtype="<f4").reshape(n, int(classes), h, w))
        ratio = compare(session, graph_input.name, f"{name} {h}x{w}", xs[-1], wants[-1])
        if ratio is None:
            return 1
        worst = max(worst, ratio)
    # a symbolic batch: the inputs again as one batch
    if isinstance(graph_input.shape[0], str) and len(xs) > 1 and \
            len({x.shape for x in xs}) == 1:
        ratio = compare(session, graph_input.name, f"batch of {len(xs)}",
                        np.concatenate(xs), np.concatenate(wants))
        if ratio is None:
            return 1
        worst = max(worst, ratio)
    print(f"largest |diff| / scale {worst:.3g} (tolerance {args.tolerance:g})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
