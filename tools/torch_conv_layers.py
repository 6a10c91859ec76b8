#!/usr/bin/env python3
"""Times each convolution shape of `tiletrain bench --layers --json` in PyTorch
(torch.nn.Conv2d, no bias, 2 threads, the same micro-batch, forward and
the backward a training step asks for, best of 5 after an untimed run) and
prints it beside tiletrain's own times from that file.

  build/tiletrain bench --layers --json --model unet-resnet34 >layers.json
  PY/bin/python tools/torch_conv_layers.py layers.json

PY: a Python with torch (Debian's python3-torch, or PyTorch 2.x in a
virtual environment: see tools/bench_vs_torch.sh --help).  ratio: PyTorch's
time over tiletrain's for the directions both run (above 1: tiletrain is
faster).  A benchmark, never a test: the two sides run one after the other
on a machine whose speed moves.
"""
import argparse
import json
import time

import torch

REPS = 5


def best_ms(run):
    run()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e3


def time_layer(layer, batch):
    k, s = layer["kernel"], layer["stride"]
    wants_input_grad = "backward_data" in layer["ms"]
    x = torch.randn(batch, layer["in_channels"], layer["h"], layer["w"],
                    requires_grad=wants_input_grad)
    conv = torch.nn.Conv2d(layer["in_channels"], layer["out_channels"], k, s, k // 2, bias=False)
    dout = torch.randn_like(conv(x))

    def forward():
        with torch.no_grad():
            conv(x)

    def step():
        conv.zero_grad(set_to_none=True)
        x.grad = None
        conv(x).backward(dout)

    return best_ms(forward), best_ms(step)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", help="the output of tiletrain bench --layers --json")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    o = json.load(open(args.layers))
    batch = o["micro_batch"]
    print(f"PyTorch {torch.__version__}, {args.threads} threads, micro-batch {batch}; "
          f"ms per call ({o['device']} for tiletrain)")
    print(f"{'layer':30s} {'k/s':>6s} {'torch fwd':>10s} {'ours fwd':>9s} "
          f"{'torch all':>10s} {'ours all':>9s} {'ratio':>6s}")
    theirs_total = ours_total = 0.0
    for layer in o["layers"]:
        fwd, both = time_layer(layer, batch)
        ours = sum(layer["ms"].values())
        theirs_total += layer["count"] * both
        ours_total += layer["count"] * ours
        ks = f"{layer['kernel']}x{layer['kernel']}/{layer['stride']}"
        print(f"{layer['label']:30s} {ks:>6s} {fwd:10.2f} {layer['ms']['forward']:9.2f} "
              f"{both:10.2f} {ours:9.2f} {both / ours:6.2f}")
    print(f"{'all, by count':30s} {'':>6s} {'':>10s} {'':>9s} {theirs_total:10.2f} "
          f"{ours_total:9.2f} {theirs_total / ours_total:6.2f}")


if __name__ == "__main__":
    main()
