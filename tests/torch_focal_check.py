#!/usr/bin/env python3
"""The PyTorch cross-check of the sigmoid focal loss (src/ops/focal.h), run
by tests/test_focal.c: reads the case the suite wrote into DIR, computes the
loss as segmentation_models_pytorch's FocalLoss defines it, and its gradient
by autograd, in float64, and writes them back.

  binary / multi-label (class_index 0): one focal term per element whose
      target is not `ignore`, averaged over those elements;
  multi-class (class_index 1): for each class k, the binary focal loss of
      plane k against (label == k), averaged over the pixels whose label is
      not `ignore`, summed over the classes.

Each term is a_t (1 - pt)^gamma BCE(x, t), pt = exp(-BCE(x, t)), a_t = alpha t
+ (1 - alpha)(1 - t) (no alpha factor when alpha < 0).  Class weights (not in
smp) multiply the terms of plane k by w[k].

DIR holds: shape (int32 n, c, h, w), params (float64 gamma, alpha,
class_index, ignore: -1 for none), logits (float32 n*c*h*w), targets (uint8:
n*c*h*w for class_index 0, n*h*w for 1), weights (float32 c).  Written:
loss (float64 the mean loss, the valid item count) and grad (float64
n*c*h*w, d loss / d logits).  Exits 77 when torch cannot be imported.

  torch_focal_check.py DIR
"""
import sys

import numpy as np

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)


def focal_terms(x, t, gamma, alpha):
    """a_t (1 - pt)^gamma BCE(x, t), element by element"""
    bce = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    pt = torch.exp(-bce)
    terms = (1.0 - pt).pow(gamma) * bce
    if alpha >= 0:
        terms = terms * (alpha * t + (1.0 - alpha) * (1.0 - t))
    return terms


def main():
    d = sys.argv[1]
    n, c, h, w = (int(v) for v in np.fromfile(d + "/shape", dtype=np.int32))
    gamma, alpha, class_index, ignore = np.fromfile(d + "/params", dtype=np.float64)
    class_index, ignore = int(class_index), int(ignore)
    x = torch.from_numpy(np.fromfile(d + "/logits", dtype=np.float32).reshape(n, c, h, w))
    x = x.double().requires_grad_()
    weights = torch.from_numpy(np.fromfile(d + "/weights", dtype=np.float32)).double()
    if class_index:
        labels = torch.from_numpy(np.fromfile(d + "/targets", dtype=np.uint8).reshape(n, h, w))
        labels = labels.long()
        valid = labels != ignore
        loss = x.new_zeros(())
        for k in range(c):
            xk = x[:, k][valid]
            tk = (labels[valid] == k).double()
            loss = loss + weights[k] * focal_terms(xk, tk, gamma, alpha).mean()
        count = int(valid.sum())
    else:
        t = torch.from_numpy(np.fromfile(d + "/targets", dtype=np.uint8).reshape(n, c, h, w))
        t = t.long()
        valid = t != ignore
        plane_weights = weights.view(1, c, 1, 1).expand(n, c, h, w)
        terms = focal_terms(x[valid], t[valid].double(), gamma, alpha)
        loss = (plane_weights[valid] * terms).mean()
        count = int(valid.sum())
    loss.backward()
    np.array([loss.item(), count], dtype=np.float64).tofile(d + "/loss")
    x.grad.numpy().astype(np.float64).tofile(d + "/grad")


if __name__ == "__main__":
    main()
