#!/usr/bin/env python3
"""Checks python/smp_encoders.py and python/smp_decoders.py against
segmentation_models_pytorch (smp 0.6), timm and torchvision. Needs torch
2.x with smp, timm and torchvision (the ~/torch2 virtual environment):

    ~/torch2/bin/python tools/check_smp_models.py            # everything
    ~/torch2/bin/python tools/check_smp_models.py --quick    # resnet50 + tu-b0 only

For every encoder x decoder pair (FPN, DeepLabV3Plus, Linknet over
resnet50, resnext50_32x4d, tu-efficientnet_b0/b2, timm-efficientnet-b0/b2):
  * builds smp's model (encoder_weights=None) and ours, and compares the
    state_dicts' names, shapes and order (missing / unexpected / shape
    differences printed);
  * perturbs smp's weights and BN statistics so that every tensor matters,
    loads them into ours (strict), converts both to float64, and compares
    - eval mode: the logits;
    - train mode, RNG seeded identically before each forward (so Dropout2d,
      Dropout and drop-path draw the same masks): the logits, the gradients
      of every parameter for a random upstream gradient, and the BN running
      statistics afterwards;
    on 2x3x64x64 (DeepLabV3+ also on 2x3x48x80: its sides only need to be
    multiples of 16). Train mode needs a batch of 2 (DeepLabV3+'s pooled
    branch has 1x1 maps and BN).
Also tu-efficientnet_b2 + FPN with drop_path_rate=0.2 (smp hands it to timm).
For b1, b3, b4 (both EfficientNet namings) and resnet18/34: the key check
(and the encoders' out_channels); with in_channels=4 for three of them.

Then that ImageNet-style checkpoints (random init, nothing downloaded) load
into our encoders with nothing missing:
  torchvision resnet50(weights=None), resnext50_32x4d(weights=None): drop
    fc.* (the classifier; smp's ResNetEncoder deletes fc and avgpool);
  timm efficientnet_b2(pretrained=False) into tu-efficientnet_b2 (under
    model.): drop classifier.*, conv_head.*, bn2.* (the classifier and the
    1x1 head conv + its BN after the last stage: timm's features_only model
    has no head);
  the same into timm-efficientnet-b2: drop classifier.* only (smp keeps
    conv_head/bn2 in that encoder, unused).
Exit 1 when anything differs by more than --atol (1e-10)."""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import smp_decoders  # noqa: E402
import smp_encoders  # noqa: E402

import segmentation_models_pytorch as smp  # noqa: E402
import timm  # noqa: E402
import torchvision  # noqa: E402

SMP_CLASSES = {"fpn": smp.FPN, "deeplabv3plus": smp.DeepLabV3Plus, "linknet": smp.Linknet}
FULL = ["resnet50", "resnext50_32x4d", "tu-efficientnet_b0", "tu-efficientnet_b2",
        "timm-efficientnet-b0", "timm-efficientnet-b2"]
KEYS_ONLY = ["resnet18", "resnet34"] + [f"tu-efficientnet_{v}" for v in ("b1", "b3", "b4")] + \
    [f"timm-efficientnet-{v}" for v in ("b1", "b3", "b4")]
CLASSES = 3


def key_report(theirs, ours):
    """(ok, text) for two state_dicts: names, shapes, order."""
    ts = [(k, tuple(v.shape)) for k, v in theirs.items()]
    os_ = [(k, tuple(v.shape)) for k, v in ours.items()]
    missing = [k for k in theirs if k not in ours]
    unexpected = [k for k in ours if k not in theirs]
    shapes = [k for k in theirs if k in ours and theirs[k].shape != ours[k].shape]
    if not missing and not unexpected and not shapes:
        order = "same order" if ts == os_ else "ORDER DIFFERS"
        return ts == os_, f"{len(ts)} keys equal, shapes equal, {order}"
    return False, (f"missing in ours {len(missing)} {missing[:6]}; unexpected {len(unexpected)} "
                   f"{unexpected[:6]}; shapes differ {[(k, tuple(theirs[k].shape), tuple(ours[k].shape)) for k in shapes[:6]]}")


def perturbed(state, gen):
    out = {}
    for k, v in state.items():
        if not v.is_floating_point():
            out[k] = v.clone()
        elif k.endswith("running_var"):
            out[k] = 0.5 + torch.rand(v.shape, generator=gen, dtype=v.dtype)
        elif k.endswith("running_mean"):
            out[k] = 0.1 * torch.randn(v.shape, generator=gen, dtype=v.dtype)
        else:
            out[k] = v + 0.05 * torch.randn(v.shape, generator=gen, dtype=v.dtype)
    return out


def maxdiff(a, b):
    return (a - b).abs().max().item() if a.numel() else 0.0


def run_train(model, x, dlogits, seed):
    model.train()
    for p in model.parameters():
        p.grad = None
    torch.manual_seed(seed)
    y = model(x)
    (y * dlogits).sum().backward()
    grads = {n: p.grad.clone() if p.grad is not None else None for n, p in model.named_parameters()}
    return y.detach(), grads, {n: b.clone() for n, b in model.named_buffers()}


def compare_pair(enc, dec, shapes, atol, drop_path_rate=None):
    torch.manual_seed(0)
    kw = {} if drop_path_rate is None else {"drop_path_rate": drop_path_rate}
    theirs = SMP_CLASSES[dec](encoder_name=enc, encoder_weights=None, classes=CLASSES, **kw)
    ours = smp_decoders.build(enc, dec, CLASSES, drop_path_rate=drop_path_rate)
    ok, text = key_report(theirs.state_dict(), ours.state_dict())
    extra = f" drop_path_rate {drop_path_rate}" if kw else ""
    line = f"{dec:13s} {enc:22s}{extra} keys: {text}"
    if not ok:
        print(line)
        return False
    gen = torch.Generator().manual_seed(1)
    state = perturbed(theirs.state_dict(), gen)
    theirs.load_state_dict(state)
    ours.load_state_dict(state, strict=True)
    theirs.double()
    ours.double()
    worst = {"eval": 0.0, "train": 0.0, "grad": 0.0, "grad_rel": 0.0, "buffers": 0.0}
    for shape in shapes:
        x = torch.randn(*shape, generator=gen, dtype=torch.float64)
        theirs.eval()
        ours.eval()
        with torch.no_grad():
            worst["eval"] = max(worst["eval"], maxdiff(theirs(x), ours(x)))
        dl = torch.randn(shape[0], CLASSES, shape[2], shape[3], generator=gen, dtype=torch.float64)
        # fresh copies of the state for the train step (running stats change)
        theirs.load_state_dict(state)
        ours.load_state_dict(state)
        ya, ga, ba = run_train(theirs, x, dl, seed=123)
        yb, gb, bb = run_train(ours, x, dl, seed=123)
        worst["train"] = max(worst["train"], maxdiff(ya, yb))
        gmax = max(g.abs().max().item() for g in ga.values() if g is not None)
        for n in ga:
            if (ga[n] is None) != (gb[n] is None):
                worst["grad"] = float("inf")
                print(f"  gradient of {n}: smp {'none' if ga[n] is None else 'set'}, "
                      f"ours {'none' if gb[n] is None else 'set'}")
            elif ga[n] is not None:
                worst["grad"] = max(worst["grad"], maxdiff(ga[n], gb[n]))
                # relative to the parameter's largest gradient, or to a millionth of the
                # model's (a bias before a train-mode BN has a zero gradient up to rounding)
                scale = max(ga[n].abs().max().item(), 1e-6 * gmax)
                worst["grad_rel"] = max(worst["grad_rel"], maxdiff(ga[n], gb[n]) / scale)
        for n in ba:
            if ba[n].is_floating_point():
                worst["buffers"] = max(worst["buffers"], maxdiff(ba[n], bb[n]))
            elif not torch.equal(ba[n], bb[n]):
                worst["buffers"] = float("inf")
        theirs.load_state_dict(state)
        ours.load_state_dict(state)
    good = all(worst[k] <= atol for k in ("eval", "train", "grad_rel", "buffers"))
    print(f"{line}; max |diff| eval {worst['eval']:.2e} train {worst['train']:.2e} "
          f"grads {worst['grad']:.2e} (relative {worst['grad_rel']:.1e}) BN stats {worst['buffers']:.2e} "
          f"{'OK' if good else 'DIFFERS'}")
    return good


def keys_only(enc, dec, in_channels=3):
    theirs = SMP_CLASSES[dec](encoder_name=enc, encoder_weights=None, classes=CLASSES,
                              in_channels=in_channels)
    ours = smp_decoders.build(enc, dec, CLASSES, in_channels)
    ok, text = key_report(theirs.state_dict(), ours.state_dict())
    oc = f"out_channels smp {list(theirs.encoder.out_channels)} ours {list(ours.encoder.out_channels)}"
    ok = ok and list(theirs.encoder.out_channels) == list(ours.encoder.out_channels)
    extra = f" in_channels {in_channels}" if in_channels != 3 else ""
    print(f"{dec:13s} {enc:22s}{extra} keys: {text}; {oc}")
    return ok


def load_source(label, source_state, drop, encoder, prefix=""):
    kept = {prefix + k: v for k, v in source_state.items() if not any(k.startswith(d) for d in drop)}
    res = encoder.load_state_dict(kept, strict=False)
    dropped = len(source_state) - len(kept)
    ok = not res.missing_keys and not res.unexpected_keys
    print(f"{label}: {len(kept)} tensors loaded after dropping {dropped} ({', '.join(drop)}); "
          f"missing {len(res.missing_keys)} {res.missing_keys[:4]}, unexpected "
          f"{len(res.unexpected_keys)} {res.unexpected_keys[:4]} {'OK' if ok else 'FAILED'}")
    return ok


def check_sources():
    ok = True
    for name in ("resnet50", "resnext50_32x4d"):
        tv = getattr(torchvision.models, name)(weights=None).state_dict()
        ok &= load_source(f"torchvision {name} -> {name}", tv, ["fc."],
                          smp_encoders.get_encoder(name))
    tm = timm.create_model("efficientnet_b2", pretrained=False).state_dict()
    ok &= load_source("timm efficientnet_b2 -> tu-efficientnet_b2 (model.)", tm,
                      ["classifier.", "conv_head.", "bn2."],
                      smp_encoders.get_encoder("tu-efficientnet_b2"), prefix="model.")
    ok &= load_source("timm efficientnet_b2 -> timm-efficientnet-b2", tm, ["classifier."],
                      smp_encoders.get_encoder("timm-efficientnet-b2"))
    # and the loaded timm trunk computes timm's features (eval, float64)
    m = timm.create_model("efficientnet_b2", pretrained=False, features_only=True).double().eval()
    ours = smp_encoders.get_encoder("tu-efficientnet_b2").double().eval()
    ours.model.load_state_dict(m.state_dict())
    x = torch.randn(1, 3, 64, 64, dtype=torch.float64)
    with torch.no_grad():
        d = max(maxdiff(a, b) for a, b in zip(m(x), ours(x)[1:]))
    print(f"timm efficientnet_b2(features_only) vs our tu-efficientnet_b2 features: max |diff| {d:.2e}")
    ok &= d < 1e-10
    return ok


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="resnet50 and tu-efficientnet_b0 only")
    ap.add_argument("--atol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    print(f"torch {torch.__version__}, smp {smp.__version__}, timm {timm.__version__}, "
          f"torchvision {torchvision.__version__}")
    full = ["resnet50", "tu-efficientnet_b0"] if args.quick else FULL
    ok = True
    for enc in full:
        for dec in smp_decoders.DECODERS:
            shapes = [(2, 3, 64, 64)] + ([(2, 3, 48, 80)] if dec == "deeplabv3plus" else [])
            ok &= compare_pair(enc, dec, shapes, args.atol)
    if not args.quick:
        # smp passes extra kwargs to timm: stochastic depth in a tu- encoder
        ok &= compare_pair("tu-efficientnet_b2", "fpn", [(2, 3, 64, 64)], args.atol,
                           drop_path_rate=0.2)
    if not args.quick:
        for enc in KEYS_ONLY:
            for dec in smp_decoders.DECODERS:
                ok &= keys_only(enc, dec)
        for enc in ("resnet50", "tu-efficientnet_b0", "timm-efficientnet-b0"):
            ok &= keys_only(enc, "fpn", in_channels=4)
    ok &= check_sources()
    print("all match" if ok else "DIFFERENCES FOUND")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
