#!/usr/bin/python3
"""Runs torch.optim.AdamW / torch.optim.SGD on numbers written by the C tests.

Usage: optim_torch_check.py SPEC.json
SPEC: {"cases": [{"optimizer": "adamw" | "sgd", "n": N, "steps": S,
        "lrs": [S floats], "config": {...hyperparameters...},
        "param": raw float32 file (N), "grads": raw float32 file (S*N),
        "out": file to write}]}
OUT: raw float32: the final parameters, then the state (AdamW: exp_avg,
exp_avg_sq; SGD with momentum: momentum_buffer), N floats each.
The learning rate of step s is lrs[s], set on the param group before it.
"""
import json
import sys

import numpy as np
import torch


def run_groups(case):
    """AdamW over parameter groups: slices of the arena, each with its rate
    scale, frozen (grad None: skipped, no state) for its first steps."""
    n, steps, cfg = case["n"], case["steps"], case["config"]
    param = np.fromfile(case["param"], dtype="<f4")
    grads = np.fromfile(case["grads"], dtype="<f4").reshape(steps, n)
    g = case["groups"]
    groups = [(int(g[i]), int(g[i + 1]), g[i + 2], int(g[i + 3])) for i in range(0, len(g), 4)]
    ps = [torch.nn.Parameter(torch.from_numpy(param[b:e].copy())) for b, e, _, _ in groups]
    opt = torch.optim.AdamW([{"params": [p], "lr": case["lrs"][0] * sc}
                             for p, (_, _, sc, _) in zip(ps, groups)],
                            betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"],
                            weight_decay=cfg["weight_decay"])
    for s in range(steps):
        for p, group, (b, e, sc, frozen) in zip(ps, opt.param_groups, groups):
            group["lr"] = case["lrs"][s] * sc
            p.grad = None if s < frozen else torch.from_numpy(grads[s, b:e].copy())
        opt.step()
    out = [torch.cat([p.detach() for p in ps]).numpy()]
    for key in ("exp_avg", "exp_avg_sq"):
        out.append(torch.cat([opt.state[p][key] if p in opt.state else torch.zeros_like(p)
                              for p in ps]).detach().numpy())
    np.concatenate(out).astype("<f4").tofile(case["out"])


def run_case(case):
    if "groups" in case:
        return run_groups(case)
    n, steps = case["n"], case["steps"]
    cfg = case["config"]
    param = torch.from_numpy(np.fromfile(case["param"], dtype="<f4").copy())
    grads = np.fromfile(case["grads"], dtype="<f4").reshape(steps, n)
    assert param.numel() == n, "param file has the wrong length"
    p = torch.nn.Parameter(param)
    if case["optimizer"] == "adamw":
        opt = torch.optim.AdamW([p], lr=case["lrs"][0], betas=(cfg["beta1"], cfg["beta2"]),
                                eps=cfg["eps"], weight_decay=cfg["weight_decay"])
    elif case["optimizer"] == "sgd":
        opt = torch.optim.SGD([p], lr=case["lrs"][0], momentum=cfg["momentum"],
                              dampening=cfg["dampening"], weight_decay=cfg["weight_decay"],
                              nesterov=bool(cfg["nesterov"]))
    else:
        raise SystemExit("unknown optimizer " + case["optimizer"])
    for s in range(steps):
        for group in opt.param_groups:
            group["lr"] = case["lrs"][s]
        p.grad = torch.from_numpy(grads[s].copy())
        opt.step()
    out = [p.detach().numpy()]
    state = opt.state[p]
    if case["optimizer"] == "adamw":
        out += [state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()]
    elif cfg["momentum"] != 0:
        out.append(state["momentum_buffer"].numpy())
    np.concatenate(out).astype("<f4").tofile(case["out"])


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    for case in spec["cases"]:
        run_case(case)
    print("torch %s: %d case(s) done" % (torch.__version__, len(spec["cases"])))


if __name__ == "__main__":
    main()
