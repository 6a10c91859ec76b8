#!/usr/bin/env python3
"""PyTorch side of test_resnet_unet and test_fpn (tests/smp_compare.c):
python/unet_resnet.py's UnetResNet (smp's Unet over a torchvision ResNet,
smp's names), or python/smp_decoders.py's FPN over one, in float64.

  torch_resnet_unet_check.py step IN.safetensors OUT.safetensors CONFIG_JSON
      IN holds the model's whole state_dict (parameters, running statistics,
      num_batches_tracked as I64), "input" (N, 3, H, W) and "dlogits"
      (N, classes, H, W); it is loaded strictly: a name either side lacks or
      a shape that differs is an error.  One forward (train mode, with
      freeze_encoder_bn() when "freeze", every batch norm in eval mode when
      "freeze_all", or eval mode when "eval"), backward
      of sum(logits * dlogits), then OUT gets "logits", "grad.<name>" of
      every parameter, every buffer after the step (running statistics F32,
      num_batches_tracked I64), "grad32.<name>" of every parameter from
      the same step in float32 (in training: how far float32 PyTorch is
      from float64), and how far the float64 forward is from the places where float32 rounding could change a gradient's path:
      "margin.relu" (the smallest |x| into a ReLU) and "margin.maxpool"
      (the smallest gap between a pooling window's largest and second
      largest value, windows of positive maxima).
      CONFIG_JSON: {"encoder": "resnet18"|"resnet34"|..., "classes": C,
                    "mode": "train"|"freeze"|"freeze_all"|"eval",
                    "decoder": "unet" (the default)|"fpn"|"linknet"|"deeplabv3plus",
                    "dropout_seed": S, "drop_path": R (EfficientNet encoders)}
      A dropout layer's mask is tiletrain's (src/ops/dropout.h): image k
      (crop k of the run's stream: the step's micro-batch is crops 0 ..
      N-1) draws from its own seed mix(L ^ mix(k ^ 0xbb67ae8584caa73b)),
      mix splitmix64's finaliser and L the layer's seed S ^
      (0x9e3779b97f4a7c15 * (salt + 1)), salt 0 for a decoder's dropout
      and 1 + i for encoder block i's drop-path, by the same 32-bit hash of
      the image's one index 0, its channel's or its element's index.
  torch_resnet_unet_check.py window IN.safetensors OUT.safetensors CONFIG_JSON
      two micro-batches accumulated and one AdamW step (window() says what
      IN holds and OUT gets); CONFIG_JSON as step's (mode train) plus "lr".
  torch_resnet_unet_check.py state-dict ENCODER CLASSES OUT.safetensors [SEED]
      a torch-initialised model's state_dict (running statistics moved off
      0 and 1, counters off 0, so a load that misplaces them shows).
  torch_resnet_unet_check.py torchvision ENCODER OUT.pth [SEED]
      torchvision's resnet18() or resnet34() state_dict (random weights,
      with fc), as torch.save writes it: tools/convert_weights.py's input.
  torch_resnet_unet_check.py self-test
      step against float32 PyTorch on the parameters the C test sets
      (controlled(): no ReLU input near 0), and strict loading refuses a
      missing and an extra name.
"""
import json, math, os, subprocess, sys, tempfile

import numpy as np
import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(here), "python"), here]
import st_io  # noqa: E402
from unet_resnet import UnetResNet  # noqa: E402

EXTRA = ("input", "dlogits", "input.0", "dlogits.0", "input.1", "dlogits.1")
M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


def fmix32(h):
    """MurmurHash3's finaliser on uint64 arrays holding 32-bit values."""
    u = np.uint64
    h = h ^ (h >> u(16))
    h = (h * u(0x85EBCA6B)) & u(M32)
    h = h ^ (h >> u(13))
    h = (h * u(0xC2B2AE35)) & u(M32)
    return h ^ (h >> u(16))


def dropout_keep(seed, count, p):
    """tiletrain's mask (src/ops/dropout.h): index i in 0..count-1 kept
    when hash(seed, i) >= (uint32)(p * 2^32)."""
    lo, hi = np.uint64(seed & M32), np.uint64(seed >> 32)
    key_a = fmix32(lo ^ fmix32(hi ^ np.uint64(0x9E3779B9)))
    key_b = fmix32(hi ^ fmix32(lo ^ np.uint64(0x7F4A7C15)))
    index = np.arange(count, dtype=np.uint64)
    h = fmix32((fmix32(index ^ key_a) + key_b) & np.uint64(M32))
    return h >= np.uint64(int(float(np.float32(p)) * 2.0**32))


class SeededDropout(torch.nn.Module):
    """Dropout with tiletrain's mask (src/ops/dropout.h) for the model's
    seed `base`, the layer's `salt` and image k's crop `first` + k: whole
    images ("sample": drop-path), whole channels of an image ("channel":
    Dropout2d) or elements dropped, the rest scaled by float32(1 / (1 -
    p))."""

    def __init__(self, p, base, salt, unit):
        super().__init__()
        self.p, self.base, self.salt, self.unit, self.first = p, base, salt, unit, 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        shape = {"sample": (1, 1, 1), "channel": x.shape[1:2] + (1, 1),
                 "element": x.shape[1:]}[self.unit]
        seed = layer_seed(self.base, self.salt)
        keep = np.stack([dropout_keep(image_seed(seed, self.first + k), math.prod(shape),
                                      self.p).reshape(shape) for k in range(x.shape[0])])
        scale = float(np.float32(1.0 / (1.0 - float(np.float32(self.p)))))
        return x * (torch.from_numpy(keep).to(x.dtype) * scale)


def layer_seed(seed, salt):
    return (seed ^ (0x9E3779B97F4A7C15 * (salt + 1))) & M64


def mix64(z):
    """splitmix64's finaliser on a Python int."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def image_seed(layer, crop):
    """The seed of the image that is crop `crop` of the run's stream."""
    return mix64(layer ^ mix64((crop & M64) ^ 0xBB67AE8584CAA73B))


def build_model(cfg):
    """The model CONFIG_JSON names, its dropout tiletrain's."""
    decoder = cfg.get("decoder", "unet")
    if decoder == "unet" and not cfg["encoder"].startswith("efficientnet"):
        return UnetResNet(cfg["encoder"], cfg["classes"])
    from smp_decoders import build
    from smp_encoders import DropPath
    model = build(cfg["encoder"], decoder, cfg["classes"], drop_path_rate=cfg.get("drop_path"))
    seed = int(cfg.get("dropout_seed", 0))
    if decoder == "fpn":
        model.decoder.dropout = SeededDropout(model.decoder.dropout.p, seed, 0, "channel")
    elif decoder == "deeplabv3plus":
        project = model.decoder.aspp[0].project
        project[3] = SeededDropout(project[3].p, seed, 0, "element")
    if cfg["encoder"].startswith("efficientnet"):  # drop-path: block i's salt 1 + i
        blocks = [b for stage in model.encoder.model.blocks for b in stage]
        for i, b in enumerate(blocks):
            if isinstance(b.drop_path, DropPath):
                b.drop_path = SeededDropout(b.drop_path.drop_prob, seed, 1 + i, "sample")
    return model


def freeze_encoder_bn(model):
    """FrozenBatchNorm2d in the encoder: running statistics used and kept."""
    for m in model.encoder.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eval()


def state_dict_for(model, data):
    """The model's state_dict from `data`, strictly: exits naming what differs."""
    own = model.state_dict()
    missing = [k for k in own if k not in data]
    unexpected = [k for k in data if k not in own and k not in EXTRA]
    shapes = [f"{k}: {tuple(data[k].shape)} in the file, {tuple(own[k].shape)} in torch"
              for k in own if k in data and tuple(data[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        sys.exit(f"state_dict differs: missing {missing[:5]} ({len(missing)}), unexpected "
                 f"{unexpected[:5]} ({len(unexpected)}), shapes {shapes[:5]}")
    return {k: data[k].to(own[k].dtype) for k in own}


def margins(model):
    """Hooks that keep the float64 forward's margins (see step)."""
    m = {"relu": float("inf"), "maxpool": float("inf")}

    def relu(_, inp):  # before an in-place ReLU changes it
        m["relu"] = min(m["relu"], float(inp[0].detach().abs().min()))

    def pool(mod, inp):
        x = inp[0].detach()
        k, s, p = mod.kernel_size, mod.stride, mod.padding
        cols = F.unfold(F.pad(x, (p, p, p, p), value=-float("inf")), k, stride=s)
        top = cols.view(x.shape[0], x.shape[1], k * k, -1).topk(2, dim=2).values
        live = top[:, :, 0] > 0
        if live.any():
            m["maxpool"] = min(m["maxpool"], float((top[:, :, 0] - top[:, :, 1])[live].min()))

    for mod in model.modules():
        if isinstance(mod, torch.nn.ReLU):
            mod.register_forward_pre_hook(relu)
        elif isinstance(mod, torch.nn.MaxPool2d):
            mod.register_forward_pre_hook(pool)
    return m


def run_step(data, cfg, dtype, hooks):
    """One forward and backward of the model CONFIG_JSON names in `dtype`
    from data's weights; (model after it, logits, margins or None)."""
    model = build_model(cfg)
    model.load_state_dict(state_dict_for(model, data), strict=True)
    model = model.to(dtype)
    mode = cfg.get("mode", "train")
    if mode not in ("train", "freeze", "freeze_all", "eval"):
        sys.exit(f"mode '{mode}': give train, freeze, freeze_all or eval")
    model.train(mode != "eval")
    if mode == "freeze":
        freeze_encoder_bn(model)
    elif mode == "freeze_all":  # tiletrain's --freeze-bn
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.eval()
    margin = margins(model) if hooks else None
    logits = model(data["input"].to(dtype))
    (logits * data["dlogits"].to(dtype)).sum().backward()
    return model, logits, margin


def step(inp, out, cfg):
    torch.set_num_threads(1)
    data = st_io.load(inp)
    model, logits, margin = run_step(data, cfg, torch.float64, True)
    result = {"logits": logits.float()}
    for name, p in model.named_parameters():
        result["grad." + name] = p.grad.float()
    for name, b in model.named_buffers():
        result[name] = b.float() if b.is_floating_point() else b.long()
    for k, v in margin.items():
        result["margin." + k] = torch.tensor([v], dtype=torch.float32)
    if cfg.get("mode", "train") != "eval":  # how far float32 PyTorch is from float64
        model32, _, _ = run_step(data, cfg, torch.float32, False)
        for name, p in model32.named_parameters():
            result["grad32." + name] = p.grad.float()
    st_io.save(out, result)


def window(inp, out, cfg):
    """Two micro-batches ("input.0", "dlogits.0", "input.1", "dlogits.1";
    dropout seeds S and S + 1) accumulated, then one AdamW step (lr
    cfg["lr"], weight decay 0.01, betas 0.9 and 0.999, eps 1e-8), in
    float64 ("grad.<name>": the window's gradient; "after.<name>": the
    weights after the step; the buffers after both forwards) and the
    gradient in float32 ("grad32.<name>")."""
    torch.set_num_threads(1)
    data = st_io.load(inp)
    result = {}
    for dtype in (torch.float64, torch.float32):
        model = build_model(cfg)
        model.load_state_dict(state_dict_for(model, data), strict=True)
        model = model.to(dtype).train()
        for m in range(2):
            for mod in model.modules():
                if isinstance(mod, SeededDropout):
                    mod.first = m * data[f"input.{m}"].shape[0]  # crops of micro-batch m
            logits = model(data[f"input.{m}"].to(dtype))
            (logits * data[f"dlogits.{m}"].to(dtype)).sum().backward()
        if dtype == torch.float32:
            for name, p in model.named_parameters():
                result["grad32." + name] = p.grad.float()
            continue
        for name, p in model.named_parameters():
            result["grad." + name] = p.grad.float()
        torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=0.01).step()
        for name, p in model.named_parameters():
            result["after." + name] = p.detach().float()
        for name, b in model.named_buffers():
            result[name] = b.float() if b.is_floating_point() else b.long()
    st_io.save(out, result)


def controlled(sd, model):
    """The batch norm parameters test_resnet_unet.c gives the model, so that
    float32 cannot flip a ReLU: gamma in [0.05, 0.15], beta 1 (-1 on every
    fourth channel of a norm a ReLU follows directly: a dead channel), so
    the ReLU's input is +-1 + gamma * x_hat, 0 only at |x_hat| = 10;
    running statistics off 0 and 1 for eval-mode norms."""
    norms = {n for n, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)}
    for k, v in sd.items():
        owner, leaf = k.rsplit(".", 1)
        if owner not in norms:
            continue
        if leaf == "weight":
            v.uniform_(0.05, 0.15)
        elif leaf == "bias":
            v.fill_(1.0)
            if ".bn2" not in k and "downsample." not in k:
                v[3::4] = -1.0
        elif leaf == "running_mean":
            v.uniform_(-0.1, 0.1)
        elif leaf == "running_var":
            v.uniform_(0.8, 1.2)


def state_dict(encoder, classes, out, seed=0):
    torch.manual_seed(seed)
    model = UnetResNet(encoder, classes)
    sd = model.state_dict()
    for k, v in sd.items():
        if k.endswith("running_mean"):
            v.uniform_(-0.1, 0.1)
        elif k.endswith("running_var"):
            v.uniform_(0.8, 1.2)
        elif k.endswith("num_batches_tracked"):
            v.fill_(7)
    st_io.save(out, sd)


def torchvision_weights(encoder, out, seed=0):
    import torchvision
    torch.manual_seed(seed)
    torch.save(getattr(torchvision.models, encoder)().state_dict(), out)


def self_test():
    """step on a file made here (controlled() parameters) against float32
    PyTorch in every mode: logits, gradients, statistics and counters; and
    strict loading refuses a missing name and an extra one."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        sd_path, inp, out = (os.path.join(tmp, n) for n in ("sd.st", "in.st", "out.st"))
        state_dict("resnet18", 3, sd_path, seed=1)
        data = st_io.load(sd_path)
        controlled(data, UnetResNet("resnet18", 3))
        torch.manual_seed(2)
        data["input"] = torch.rand(2, 3, 64, 96)
        data["dlogits"] = torch.rand(2, 3, 64, 96) * 2 - 1
        st_io.save(inp, data)
        cfg = {"encoder": "resnet18", "classes": 3}
        for mode in ("train", "freeze", "eval"):
            step(inp, out, dict(cfg, mode=mode))
            got = st_io.load(out)
            model = UnetResNet("resnet18", 3)
            model.load_state_dict({k: v for k, v in data.items() if k not in EXTRA})
            model.train(mode != "eval")
            if mode == "freeze":
                model.freeze_encoder_bn()
            logits = model(data["input"])  # float32: the script's float64 within float error
            (logits * data["dlogits"]).sum().backward()
            e = (logits - got["logits"]).abs().max() / got["logits"].abs().max()
            ge = max(float((p.grad - got["grad." + n]).abs().max() / got["grad." + n].abs().max())
                     for n, p in model.named_parameters())
            se = max(float((b - got[n]).abs().max() / got[n].abs().max())
                     for n, b in model.named_buffers() if b.is_floating_point())
            nbt = {k: int(v) for k, v in got.items() if k.endswith("num_batches_tracked")}
            enc_nbt = {v for k, v in nbt.items() if k.startswith("encoder.")}
            dec_nbt = {v for k, v in nbt.items() if not k.startswith("encoder.")}
            want_enc, want_dec = {7 if mode != "train" else 8}, {7 if mode == "eval" else 8}
            moved = not torch.equal(got["encoder.bn1.running_mean"], data["encoder.bn1.running_mean"])
            ok = (e < 1e-5 and ge < 1e-4 and se < 1e-5 and enc_nbt == want_enc and dec_nbt == want_dec
                  and moved == (mode == "train") and len([k for k in got if k.startswith("grad.")])
                  == len(list(model.parameters())))
            print(f"{'ok:  ' if ok else 'FAIL:'} {mode}: float32 torch vs the script's float64: "
                  f"logits {e:.1e}, worst gradient {ge:.1e}, statistics {se:.1e}; margins "
                  f"relu {float(got['margin.relu']):.1e} maxpool {float(got['margin.maxpool']):.1e}; "
                  f"encoder counters {enc_nbt}, "
                  f"decoder {dec_nbt}, encoder statistics {'moved' if moved else 'kept'}")
            failures += 0 if ok else 1
        for what, change in (("a missing name", lambda d: d.pop("encoder.bn1.running_var")),
                             ("an extra name", lambda d: d.update(extra=torch.zeros(1)))):
            bad = dict(data)
            change(bad)
            st_io.save(inp, bad)
            r = subprocess.run([sys.executable, __file__, "step", inp, out, json.dumps(cfg)],
                               capture_output=True, text=True)
            ok = r.returncode != 0 and "state_dict differs" in r.stderr
            print(f"{'ok:  ' if ok else 'FAIL:'} {what} refused: {r.stderr.strip()[:120]}")
            failures += 0 if ok else 1
    return 1 if failures else 0


def main(argv):
    if len(argv) == 4 and argv[0] == "step":
        return step(argv[1], argv[2], json.loads(argv[3]))
    if len(argv) == 4 and argv[0] == "window":
        return window(argv[1], argv[2], json.loads(argv[3]))
    if len(argv) in (4, 5) and argv[0] == "state-dict":
        return state_dict(argv[1], int(argv[2]), argv[3], *[int(a) for a in argv[4:]])
    if len(argv) in (3, 4) and argv[0] == "torchvision":
        return torchvision_weights(argv[1], argv[2], *[int(a) for a in argv[3:]])
    if argv == ["self-test"]:
        return self_test()
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
