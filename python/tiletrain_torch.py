#!/usr/bin/env python3
"""tiletrain's UNet in PyTorch: the same parameters under the same
state_dict names and shapes, and the same computation, as the C model
(src/model/unet_config.h, unet.c). A tiletrain checkpoint loads into it, its
weights load into tiletrain, and the tests compare the two sides with it.

Architecture: level i has base_channels * 2**i channels; a block is
(3x3 conv with bias, norm, ReLU) twice; the encoder goes down by 2x2 max
pooling, the decoder up by a 2x2 stride-2 transposed conv whose output is
concatenated with the skip as [upsampled, skip]; a 1x1 conv head gives the
logits. norm: "group" (GroupNorm with `groups` groups), "batch"
(BatchNorm2d) or "none".

Needs PyTorch 1.13 or 2.x (Debian: apt-get install python3-torch; run it with
the python3 that has torch, e.g. /usr/bin/python3).

As a library:
    from tiletrain_torch import UNet, load_checkpoint
    model, meta = load_checkpoint("runs/x/best.safetensors")

As a command (the peer of `tiletrain bench` and `tiletrain mem`), each mode
printing one JSON line:
    tiletrain_torch.py bench --tile 256x256 --micro-batch 4 --accum 5 --threads 2
    tiletrain_torch.py mem   --tile 1400x2104 --micro-batch 1
    tiletrain_torch.py names --base-channels 16 --depth 3 --classes 4
bench: training throughput over whole optimizer steps (forward, backward,
accumulation, AdamW); mem: growth of resident memory over one training step
(peak minus the level once model and optimizer exist); names: the
state_dict's names and shapes.
"""
import argparse
import json
import os
import resource
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

EPS = 1e-5  # both norms, as the C side


def norm_layer(kind, channels, groups):
    """The normalisation after each conv of a block."""
    if kind == "group":
        return nn.GroupNorm(groups, channels, eps=EPS)
    if kind == "batch":
        return nn.BatchNorm2d(channels, eps=EPS, momentum=0.1)
    if kind == "none":
        return nn.Identity()
    raise ValueError(f"norm '{kind}': give group, batch or none")


class ConvBlock(nn.Module):
    """Two rounds of 3x3 conv (bias) -> norm -> ReLU; the state_dict names
    are conv1, norm1, conv2, norm2."""

    def __init__(self, in_ch, out_ch, norm, groups):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, kernel_size=3, padding=1, bias=True)
        self.norm1 = norm_layer(norm, out_ch, groups)
        self.conv2 = nn.Conv2d(out_ch, out_ch, kernel_size=3, padding=1, bias=True)
        self.norm2 = norm_layer(norm, out_ch, groups)

    def forward(self, x):
        x = torch.relu(self.norm1(self.conv1(x)))
        x = torch.relu(self.norm2(self.conv2(x)))
        return x


class UNet(nn.Module):
    """UNet(in_channels, classes, base_channels, depth, norm, groups), with
    tiletrain's defaults. The submodules are registered in tiletrain's
    parameter order: enc.<i>, bottleneck, up.<i>, dec.<i>, head."""

    def __init__(self, in_channels=3, classes=4, base_channels=16, depth=3,
                 norm="group", groups=8):
        super().__init__()
        if depth < 1:
            raise ValueError(f"depth {depth}: give 1 or more")
        width = [base_channels << level for level in range(depth + 1)]
        self.depth = depth
        self.enc = nn.ModuleList()
        for level in range(depth):
            prev = in_channels if level == 0 else width[level - 1]
            self.enc.append(ConvBlock(prev, width[level], norm, groups))
        self.bottleneck = ConvBlock(width[depth - 1], width[depth], norm, groups)
        self.up = nn.ModuleList(
            nn.ConvTranspose2d(width[level + 1], width[level], kernel_size=2, stride=2)
            for level in range(depth))
        self.dec = nn.ModuleList(
            ConvBlock(2 * width[level], width[level], norm, groups) for level in range(depth))
        self.head = nn.Conv2d(width[0], classes, kernel_size=1)

    def forward(self, x):
        skips = []
        for block in self.enc:
            x = block(x)
            skips.append(x)
            x = F.max_pool2d(x, kernel_size=2, stride=2)
        x = self.bottleneck(x)
        for level in range(self.depth - 1, -1, -1):
            x = torch.cat((self.up[level](x), skips[level]), dim=1)
            x = self.dec[level](x)
        return self.head(x)


# safetensors dtype -> (torch dtype, bytes per element); the checkpoint uses F32 and I64
ST_DTYPES = {"F64": (torch.float64, 8), "F32": (torch.float32, 4), "F16": (torch.float16, 2),
             "I64": (torch.int64, 8), "I32": (torch.int32, 4), "U8": (torch.uint8, 1)}


def read_safetensors(path):
    """(tensors by name, metadata dict) of a safetensors file, with only the
    standard library and torch (the `safetensors` package is not in Debian)."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + size])
    meta = header.pop("__metadata__", {}) or {}
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        dtype, width = ST_DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        raw = bytearray(blob[base + begin:base + end])
        flat = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(info["shape"]).clone()
    return tensors, meta


ENCODERS = ("resnet18", "resnet34", "resnet50", "resnext50_32x4d") + tuple(
    f"efficientnet-b{i}" for i in range(5))
MODELS = ("unet",) + tuple(f"{d}-{e}" for d in ("unet", "fpn", "linknet", "deeplabv3plus") for e in ENCODERS)


def smp_model(kind, classes, in_channels=3):
    """The PyTorch twin of tiletrain's --model `kind` (not the plain unet):
    python/unet_resnet.py's UnetResNet for unet-resnet*, python/smp_decoders.py's
    models for the others (efficientnet-bN is smp's tu-efficientnet_bN), each
    with smp's state_dict."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    decoder, encoder = kind.split("-", 1)
    if decoder == "unet" and not encoder.startswith("efficientnet"):
        from unet_resnet import UnetResNet
        return UnetResNet(encoder, classes, in_channels)
    from smp_decoders import build
    return build(encoder, decoder, classes, in_channels)


def load_checkpoint(path):
    """A tiletrain checkpoint as (model in eval mode, metadata): the model is
    built from the checkpoint's "model" metadata (the UNet, or smp_model()
    for the smp-style kinds) and loaded
    strictly; the optimizer state ("optim.*") is left out. metadata["mean"]
    and ["std"] hold the input normalisation tiletrain trained with, if any."""
    tensors, meta = read_safetensors(path)
    cfg = json.loads(meta["model"])
    kind = cfg.get("kind", "unet")
    if kind == "unet":
        model = UNet(cfg["in_channels"], cfg["classes"], cfg["base_channels"], cfg["depth"],
                     cfg["norm"], cfg["groups"])
    else:
        model = smp_model(kind, cfg["classes"], cfg["in_channels"])
    model.load_state_dict({k: v for k, v in tensors.items() if not k.startswith("optim.")})
    return model.eval(), meta


# ---- the command line: the PyTorch peer of `tiletrain bench` and `mem` ----

def tile_size(text):
    h, w = text.lower().split("x")
    return int(h), int(w)


def bce_window(model, opt, x, y, accum):
    """One optimizer step over `accum` identical micro-batches: BCE with
    logits summed, divided by the items of the whole window (as tiletrain
    normalises), AdamW; returns the window's loss."""
    items = accum * y.numel()
    total = 0.0
    for _ in range(accum):
        loss = F.binary_cross_entropy_with_logits(model(x), y, reduction="sum") / items
        loss.backward()
        total += loss.item()
    opt.step()
    opt.zero_grad(set_to_none=False)
    return total


def resident_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def emit(**fields):
    print(json.dumps(fields))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_mem(args, model, opt, x, y):
    device = x.device
    if device.type == "cuda":
        # device memory: the allocator's peak over the step above the
        # model's and the optimizer's (as tiletrain's measured peak)
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device) / 2**20
        start = time.time()
        bce_window(model, opt, x, y, 1)
        sync(device)
        seconds = time.time() - start
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        emit(peer="pytorch-cuda", torch=torch.__version__, device=torch.cuda.get_device_name(device),
             model=args.model, tile=args.tile, micro_batch=args.micro_batch,
             step_s=round(seconds, 3), allocated_base_mib=round(before),
             allocated_peak_mib=round(peak), step_mem_mib=round(peak - before))
        return
    before = resident_mib()
    start = time.time()
    bce_window(model, opt, x, y, 1)
    seconds = time.time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    emit(peer="pytorch-cpu", torch=torch.__version__, model=args.model, tile=args.tile,
         micro_batch=args.micro_batch, step_s=round(seconds, 3),
         rss_base_mib=round(before), rss_peak_mib=round(peak),
         step_mem_mib=round(peak - before))


def run_bench(args, model, opt, x, y):
    h, w = tile_size(args.tile)
    bce_window(model, opt, x, y, args.accum)  # warm-up, not timed
    sync(x.device)
    start = time.time()
    for _ in range(args.steps):
        bce_window(model, opt, x, y, args.accum)
    sync(x.device)
    per_step = (time.time() - start) / args.steps
    images = args.micro_batch * args.accum
    emit(peer="pytorch-" + x.device.type, torch=torch.__version__, model=args.model,
         threads=torch.get_num_threads(),
         tile=args.tile, micro_batch=args.micro_batch, accum=args.accum,
         images_per_s=round(images / per_step, 3),
         mpix_per_s=round(images * h * w / per_step / 1e6, 4))


def main(argv=None):
    ap = argparse.ArgumentParser(description="tiletrain's UNet in PyTorch: bench, mem or names")
    ap.add_argument("what", choices=["bench", "mem", "names"])
    ap.add_argument("--tile", default="256x256", help="HxW of one training tile")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--accum", type=int, default=5, help="micro-batches per optimizer step")
    ap.add_argument("--steps", type=int, default=2, help="timed optimizer steps")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--model", default="unet", choices=MODELS,
                    help="unet (sized below), or smp's Unet, FPN, Linknet or DeepLabV3+ over a "
                         "ResNet encoder")
    ap.add_argument("--base-channels", type=int, default=16)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--norm", choices=["group", "batch", "none"], default="group")
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu",
                    help="where the peer runs: cpu (default), cuda (NVIDIA, or AMD through "
                         "ROCm's build), or auto: cuda where torch sees one")
    args = ap.parse_args(argv)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: this torch sees no GPU (torch.cuda.is_available() is False)")
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.model == "unet":
        model = UNet(3, args.classes, args.base_channels, args.depth, args.norm, args.groups)
    else:
        model = smp_model(args.model, args.classes)
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    if args.what == "names":
        emit(**{k: list(v.shape) for k, v in model.state_dict().items()})
        return 0
    h, w = tile_size(args.tile)
    x = torch.rand(args.micro_batch, 3, h, w).to(device)
    y = (torch.rand(args.micro_batch, args.classes, h, w) > 0.5).float().to(device)
    if args.what == "mem":
        run_mem(args, model, opt, x, y)
    else:
        run_bench(args, model, opt, x, y)
    return 0


if __name__ == "__main__":
    sys.exit(main())
