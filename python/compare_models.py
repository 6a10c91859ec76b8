#!/usr/bin/env python3
"""Checks that python/tiletrain_torch.py and another PyTorch definition of
tiletrain's UNet (an older copy, a peer kept outside the repository) are the
same model: state_dict names, shapes and order; the same seeded
initialisation; the same float64 logits, gradients and batch-norm running
statistics from the same weights and input (atol 1e-12); and the same JSON
fields from the bench, mem and names commands. Not part of the test suite.

  /usr/bin/python3 python/compare_models.py OTHER.py
"""
import importlib.util
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.path.join(HERE, "tiletrain_torch.py")

# (classes, base_channels, depth, norm, groups)
CONFIGS = [(4, 16, 3, "group", 8), (2, 4, 2, "batch", 1), (3, 8, 4, "none", 1),
           (1, 4, 2, "group", 2), (3, 4, 4, "batch", 1), (2, 6, 3, "none", 1)]


def module_from(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(model, x, dlogits, train):
    model.train(train)
    for p in model.parameters():
        p.grad = None
    logits = model(x)
    (logits * dlogits).sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    return logits.detach(), grads, {n: b.clone() for n, b in model.named_buffers()}


def compare_config(ours_mod, other_mod, cfg, failures):
    classes, base, depth, norm, groups = cfg
    torch.manual_seed(1)
    a = ours_mod.UNet(3, classes, base, depth, norm, groups)
    torch.manual_seed(1)
    b = other_mod.UNet(3, classes, base, depth, norm, groups)
    sa, sb = a.state_dict(), b.state_dict()
    shapes_a = [(k, tuple(v.shape)) for k, v in sa.items()]
    shapes_b = [(k, tuple(v.shape)) for k, v in sb.items()]
    if shapes_a != shapes_b:
        failures.append(f"{cfg}: state_dict names/shapes differ")
        return
    if any(not torch.equal(sa[k], sb[k]) for k in sa):
        failures.append(f"{cfg}: seeded initialisation differs")
    # perturb norm parameters and statistics so that they matter
    state = {k: (v + 0.1 * torch.randn_like(v) if v.is_floating_point() else v)
             for k, v in sa.items()}
    for k in state:
        if k.endswith("running_var"):
            state[k] = state[k].abs() + 0.5
    a.load_state_dict(state)
    b.load_state_dict(state)
    a, b = a.double(), b.double()
    side = 2 ** depth * 3
    x = torch.randn(2, 3, side, side + 2 ** depth, dtype=torch.float64)
    dlogits = torch.randn(2, classes, side, side + 2 ** depth, dtype=torch.float64)
    for train in (False, True):
        la, ga, ba = run(a, x, dlogits, train)
        lb, gb, bb = run(b, x, dlogits, train)
        worst = (la - lb).abs().max().item()
        for n in ga:
            worst = max(worst, (ga[n] - gb[n]).abs().max().item())
        for n in ba:
            if ba[n].is_floating_point():
                worst = max(worst, (ba[n] - bb[n]).abs().max().item())
            elif not torch.equal(ba[n], bb[n]):
                worst = float("inf")
        status = "ok" if worst <= 1e-12 else "DIFFERS"
        print(f"  {cfg} train={int(train)}: max |difference| {worst:.3g} {status}")
        if worst > 1e-12:
            failures.append(f"{cfg} train={int(train)}: max difference {worst:.3g}")


def command_fields(path, args):
    out = subprocess.run([sys.executable, path] + args, check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()
    if len(out) != 1:
        raise RuntimeError(f"{path} {' '.join(args)}: {len(out)} lines, want 1")
    return json.loads(out[0])


def compare_commands(other_path, failures):
    small = ["--tile", "32x32", "--micro-batch", "1", "--threads", "1"]
    cases = [["bench"] + small + ["--accum", "2", "--steps", "1"], ["mem"] + small,
             ["names", "--base-channels", "4", "--depth", "2", "--classes", "2",
              "--norm", "batch"]]
    for args in cases:
        a, b = command_fields(OURS, args), command_fields(other_path, args)
        same_keys = list(a) == list(b)
        fixed = [k for k in a if k in ("peer", "torch", "threads", "tile", "micro_batch",
                                        "accum") or args[0] == "names"]
        same_values = all(a[k] == b.get(k) for k in fixed)
        print(f"  {args[0]}: fields {'same' if same_keys else 'DIFFER'}, "
              f"fixed values {'same' if same_values else 'DIFFER'}")
        if not (same_keys and same_values):
            failures.append(f"{args[0]}: output differs: {a} vs {b}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    other_path = os.path.abspath(sys.argv[1])
    torch.set_num_threads(1)
    ours_mod = module_from(OURS, "tt_ours")
    other_mod = module_from(other_path, "tt_other")
    failures = []
    print(f"models ({OURS} vs {other_path}):")
    for cfg in CONFIGS:
        compare_config(ours_mod, other_mod, cfg, failures)
    print("commands:")
    compare_commands(other_path, failures)
    for f in failures:
        print("FAIL:", f)
    print("same model" if not failures else f"{len(failures)} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
