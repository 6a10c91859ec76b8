#!/usr/bin/env python3
"""The PyTorch side of issue 20's models (CTest: test_resnet_torch):
  - python/unet_resnet.py's encoder keys and shapes equal torchvision's
    resnet18() and resnet34() (without fc), and the whole model has 24.4M
    parameters for resnet34 as smp's Unet does;
  - tools/convert_weights.py turns a torchvision state_dict (random
    weights), a checkpoint dict and a whole pickled module into safetensors
    files whose tensors equal the originals, names as asked (--drop, --strip);
  - tests/torch_resnet_unet_check.py self-test (test_resnet_unet's reference).
Exit 77 (skipped) without torch or torchvision."""
import os, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
try:
    import torch
    import torchvision
except ImportError as e:
    print(f"skipped: {e} (Debian: python3-torch python3-torchvision)")
    sys.exit(77)
sys.path[:0] = [os.path.join(root, "python"), here, os.path.join(root, "tools")]
import convert_weights  # noqa: E402
import torch_resnet_unet_check  # noqa: E402
from st_io import load  # noqa: E402
from unet_resnet import UnetResNet, check_keys  # noqa: E402

failures = 0


def check(ok, what):
    global failures
    print(("ok:   " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1


def convert(src, dst, *flags):
    """tools/convert_weights.py's main in this process (its command line runs
    in test_resnet_unet's torchvision check): a torch import saved a call."""
    if os.path.exists(dst):
        os.remove(dst)
    try:
        return convert_weights.main([src, dst, *flags])
    except SystemExit as e:
        print(e.code)
        return e.code if isinstance(e.code, int) else 1


check(check_keys() == 0, "encoder keys and shapes equal torchvision's resnet18 and resnet34")
n = sum(p.numel() for p in UnetResNet("resnet34", 4).parameters())
check(abs(n - 24_436_804) < 1, f"UnetResNet(resnet34, 4 classes) has {n} parameters (smp: 24,436,804)")

with tempfile.TemporaryDirectory() as tmp:
    torch.manual_seed(0)
    ref = torchvision.models.resnet34().state_dict()
    pth, out = os.path.join(tmp, "r34.pth"), os.path.join(tmp, "r34.safetensors")
    torch.save(ref, pth)
    check(convert(pth, out, "--drop", "fc.") == 0, "torchvision resnet34 converted")
    got = load(out)
    want = {k: v for k, v in ref.items() if not k.startswith("fc.")}
    check(set(got) == set(want) and all(torch.equal(got[k].to(want[k].dtype), want[k]) for k in want),
          f"its {len(want)} tensors equal, fc left out")
    model = UnetResNet("resnet34", 4)
    torch.save({"epoch": 3, "state_dict": {"module." + k: v for k, v in model.state_dict().items()}},
               pth)
    check(convert(pth, out, "--strip", "module.") == 0, "a DDP checkpoint dict converted")
    got = load(out)
    check(set(got) == set(model.state_dict()), "its names are smp's without 'module.'")
    torch.save(model, pth)
    check(convert(pth, out) == 0, "a whole pickled module converted")
    sd = model.state_dict()
    got = load(out) if os.path.exists(out) else {}
    check(set(got) == set(sd) and all(torch.equal(got[k].to(sd[k].dtype), sd[k]) for k in sd),
          "its tensors equal")
    open(pth, "wb").write(b"not a torch file")
    check(convert(pth, out) != 0, "a damaged file is an error naming it")

check(torch_resnet_unet_check.main(["self-test"]) == 0, "tests/torch_resnet_unet_check.py "
      "(test_resnet_unet's reference) agrees with float32 torch in train, freeze and eval modes "
      "and loads strictly")

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
