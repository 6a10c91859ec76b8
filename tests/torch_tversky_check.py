#!/usr/bin/env python3
"""PyTorch cross-check of the Tversky region loss (src/ops/tversky.h).

  torch_tversky_check.py DIR

For each DIR/case*/ written by tests/test_tversky.c (params: float64 n, c,
h, w, alpha, beta, smooth, softmax, per_image, ignore, has_weights; weights:
float64 c, when has_weights; logits: float32 (n, c, h, w); targets: uint8
(n, c, h, w), or labels (n, h, w) when softmax), writes loss (float64) and
grad (float64, d loss / d logits) by autograd in float64.

The formulas are those of segmentation_models_pytorch's DiceLoss and
TverskyLoss with from_logits: probabilities by sigmoid (multilabel) or
softmax over classes (multiclass), ignored items masked out of both
prediction and target, per-class sums over dims (batch, pixels) for one
region a class (per_image 0) or over pixels for a region per image and class
(per_image 1), then
  Tversky: score = (I + s) / (I + alpha FP + beta FN + s), FP = sum p (1 - t),
           FN = sum (1 - p) t
  Dice (alpha = beta = 0.5): score = (2 I + S) / (sum p + sum t + S), S = 2 s
and loss = 1 - score, the classes' weighted mean, summed over images when
per_image.  Unlike smp, classes absent from the targets keep their term
(smooth keeps it finite) and there is no eps clamp or gamma power.
Exits 77 when torch is missing.
"""
import pathlib
import sys

import numpy as np

try:
    import torch
except ImportError:
    sys.exit(77)


def region_loss(x, target, mask, alpha, beta, smooth, softmax, per_image, weights):
    """x (n, c, h, w) float64 logits; target (n, c, h, w) 0/1; mask same shape."""
    n, c = x.shape[:2]
    prob = x.log_softmax(dim=1).exp() if softmax else torch.nn.functional.logsigmoid(x).exp()
    prob = (prob * mask).reshape(n, c, -1)
    target = (target * mask).reshape(n, c, -1)
    dims = (2,) if per_image else (0, 2)
    inter = (prob * target).sum(dims)
    if alpha == 0.5 and beta == 0.5:
        smooth2 = 2 * smooth
        score = (2 * inter + smooth2) / ((prob + target).sum(dims) + smooth2)
    else:
        fp = (prob * (1 - target)).sum(dims)
        fn = ((1 - prob) * target).sum(dims)
        score = (inter + smooth) / (inter + alpha * fp + beta * fn + smooth)
    term = 1 - score  # (n, c) or (c,)
    w = weights if weights is not None else torch.ones(c, dtype=torch.float64)
    per_class = (term * w).sum(-1) / w.sum()
    return per_class.sum()


def run_case(case):
    n, c, h, w, alpha, beta, smooth, softmax, per_image, ignore, has_weights = \
        np.fromfile(case / "params", dtype=np.float64)
    n, c, h, w, ignore = int(n), int(c), int(h), int(w), int(ignore)
    softmax, per_image = bool(softmax), bool(per_image)
    weights = None
    if has_weights:
        weights = torch.from_numpy(np.fromfile(case / "weights", dtype=np.float64))
    x = torch.from_numpy(np.fromfile(case / "logits", dtype=np.float32).reshape(n, c, h, w))
    x = x.double().requires_grad_()
    if softmax:
        labels = torch.from_numpy(
            np.fromfile(case / "targets", dtype=np.uint8).reshape(n, h, w)).long()
        keep = (labels != ignore).double()
        target = torch.nn.functional.one_hot(labels * (labels != ignore), c)
        target = target.permute(0, 3, 1, 2).double()
        mask = keep.unsqueeze(1).expand(n, c, h, w)
    else:
        raw = torch.from_numpy(
            np.fromfile(case / "targets", dtype=np.uint8).reshape(n, c, h, w)).long()
        mask = (raw != ignore).double()
        target = (raw * (raw != ignore)).double()
    loss = region_loss(x, target, mask, alpha, beta, smooth, softmax, per_image, weights)
    loss.backward()
    np.array([loss.item()], dtype=np.float64).tofile(case / "loss")
    x.grad.numpy().astype(np.float64).tofile(case / "grad")


def main():
    cases = sorted(pathlib.Path(sys.argv[1]).glob("case*"))
    if not cases:
        print("torch_tversky_check: no case* directories under", sys.argv[1])
        return 1
    for case in cases:
        run_case(case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
