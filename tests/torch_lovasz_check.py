"""The Lovász losses in PyTorch, float64 with autograd, written from the
paper's definition (Berman et al. 2018: lovasz_grad as a cumulative sum,
per image), for tests/test_lovasz.c.

Usage: torch_lovasz_check.py DIR.  DIR holds `shape` (6 int32: N, C, H, W,
softmax, ignore), `logits` (float32, N*C*H*W) and `targets` (uint8: 0/1 per
(N, C, H, W) for hinge, labels per (N, H, W) for softmax).  Writes `loss`
(one float64: the sum over images of the class mean) and `grad` (float64,
d loss / d logits).  Exits 77 when torch is missing.
"""
import sys

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)


def jaccard_steps(sorted_targets):
    """J_i - J_{i-1} of the targets sorted by decreasing error."""
    positives = sorted_targets.sum()
    intersection = positives - sorted_targets.cumsum(0)
    union = positives + (1.0 - sorted_targets).cumsum(0)
    jaccard = 1.0 - intersection / union
    steps = jaccard.clone()
    steps[1:] = jaccard[1:] - jaccard[:-1]
    return steps


def plane_loss(errors, targets, relu):
    order = torch.sort(errors, descending=True, stable=True).indices
    sorted_errors = errors[order]
    if relu:
        sorted_errors = torch.relu(sorted_errors)
    return torch.dot(sorted_errors, jaccard_steps(targets[order]))


def main(folder):
    n, c, h, w, softmax, ignore = (int(v) for v in np.fromfile(folder + "/shape", dtype=np.int32))
    x = torch.from_numpy(np.fromfile(folder + "/logits", dtype=np.float32)).double()
    x = x.reshape(n, c, h * w).requires_grad_()
    raw = torch.from_numpy(np.fromfile(folder + "/targets", dtype=np.uint8).astype(np.int64))
    total = x.new_zeros(())
    for image in range(n):
        terms = []
        if softmax:
            labels = raw.reshape(n, h * w)[image]
            valid = (labels != ignore) & (labels < c)
            probs = torch.softmax(x[image], dim=0)[:, valid]
            labels = labels[valid]
            for k in range(c):
                fg = (labels == k).double()
                if fg.sum() == 0:
                    continue  # only the classes present in the image
                terms.append(plane_loss((fg - probs[k]).abs(), fg, False))
        else:
            targets = raw.reshape(n, c, h * w)[image]
            for k in range(c):
                valid = (targets[k] != ignore) & (targets[k] <= 1)
                t = targets[k][valid].double()
                signs = 2.0 * t - 1.0
                terms.append(plane_loss(1.0 - x[image, k][valid] * signs, t, True))
        if terms:
            total = total + torch.stack(terms).mean()
    total.backward()
    np.array([total.item()], dtype=np.float64).tofile(folder + "/loss")
    x.grad.numpy().astype(np.float64).tofile(folder + "/grad")


if __name__ == "__main__":
    main(sys.argv[1])
