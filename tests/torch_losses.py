"""The loss terms of `tiletrain train --loss` for class-index masks, in
PyTorch, as the trainer defines them over one accumulation window (a batch
of every micro-batch's images): the reference torch_train.py --loss checks
the engine's window against.  Written from the definitions
(segmentation_models_pytorch's formulas, Berman et al. for Lovász), with
the trainer's normalisers (train/loss_spec.h):

  ce        sum of weight[label] * CE over valid pixels / sum of weight[label]
  focal     sum over valid pixels and classes of weight[c] * focal / valid pixels
  dice      per image and class (reduce=image): sum over images of the
            classes' weighted mean of 1 - score, / images;
            reduce=window: per class over the window, the weighted mean
  tversky   the same with (alpha, beta)
  lovasz    Lovász softmax per image over the classes present, weighted
            mean, / images

  parse("ce+0.5*dice:reduce=window+focal:gamma=2") -> [(weight, name, keys)]
"""
import torch
import torch.nn.functional as F

IGNORE = 255

DEFAULTS = {
    "ce": {},
    "focal": {"gamma": 2.0, "alpha": -1.0},
    "dice": {"smooth": 1.0, "reduce": "image"},
    "tversky": {"alpha": 0.3, "beta": 0.7, "smooth": 1.0, "reduce": "image"},
    "lovasz": {},
}


def parse(spec):
    terms = []
    for text in spec.split("+"):
        weight = 1.0
        if "*" in text:
            w, text = text.split("*", 1)
            weight = float(w)
        name, *pairs = text.split(":")
        keys = dict(DEFAULTS[name])
        for pair in pairs:
            k, v = pair.split("=")
            keys[k] = v if k == "reduce" else float(v)
        terms.append((weight, name, keys))
    return terms


def _onehot(y, classes):
    valid = (y != IGNORE) & (y < classes)
    t = F.one_hot(torch.where(valid, y, torch.zeros_like(y)), classes).permute(0, 3, 1, 2)
    return t.to(torch.float64), valid.unsqueeze(1).to(torch.float64)


def ce(logits, y, w):
    valid = (y != IGNORE) & (y < logits.shape[1])
    total = w[y[valid]].sum()
    return F.cross_entropy(logits, y, weight=w.to(logits.dtype), ignore_index=IGNORE,
                           reduction="sum") / total


def focal(logits, y, w, gamma, alpha):
    t, valid = _onehot(y, logits.shape[1])
    t = t.to(logits.dtype)
    b = F.binary_cross_entropy_with_logits(logits, t, reduction="none")
    pt = torch.exp(-b)
    f = (1 - pt) ** gamma * b
    if alpha >= 0:
        f = f * (alpha * t + (1 - alpha) * (1 - t))
    f = f * w.view(1, -1, 1, 1).to(logits.dtype) * valid.to(logits.dtype)
    return f.sum() / valid.sum()


def tversky(logits, y, w, alpha, beta, smooth, per_window):
    t, valid = _onehot(y, logits.shape[1])
    t, valid = t.to(logits.dtype), valid.to(logits.dtype)
    p = torch.softmax(logits, 1) * valid
    t = t * valid
    dims = (0, 2, 3) if per_window else (2, 3)
    inter, psum, tsum = (p * t).sum(dims), p.sum(dims), t.sum(dims)
    score = (inter + smooth) / (inter + alpha * (psum - inter) + beta * (tsum - inter) + smooth)
    w = w.to(logits.dtype)
    term = ((1 - score) * w).sum(-1) / w.sum()
    return term if per_window else term.sum() / logits.shape[0]


def _lovasz_steps(fg_sorted):
    """J_i - J_{i-1} for targets in decreasing-error order."""
    g = fg_sorted.sum()
    inter = g - fg_sorted.cumsum(0)
    union = g + (1 - fg_sorted).cumsum(0)
    jac = 1 - inter / union
    return torch.cat([jac[:1], jac[1:] - jac[:-1]])


def lovasz(logits, y, w):
    classes = logits.shape[1]
    p = torch.softmax(logits, 1)
    total = 0
    for n in range(logits.shape[0]):
        valid = (y[n] != IGNORE) & (y[n] < classes)
        num, den = 0, 0
        for c in range(classes):
            fg = (y[n][valid] == c).to(logits.dtype)
            if fg.sum() == 0:
                continue
            err = (fg - p[n, c][valid]).abs()
            order = torch.sort(-err.detach(), stable=True)[1]  # ties: pixel order
            num = num + w[c] * torch.dot(err[order], _lovasz_steps(fg[order]))
            den = den + float(w[c])
        if den > 0:
            total = total + num / den
    return total / logits.shape[0]


def window_loss(spec, logits, y, w):
    """The loss of one window (logits of all its images) under `spec`."""
    loss = 0
    for weight, name, k in parse(spec):
        if name == "ce":
            term = ce(logits, y, w)
        elif name == "focal":
            term = focal(logits, y, w, k["gamma"], k["alpha"])
        elif name in ("dice", "tversky"):
            a, b, s = (0.5, 0.5, k["smooth"] / 2) if name == "dice" else (k["alpha"], k["beta"], k["smooth"])
            term = tversky(logits, y, w, a, b, s, k["reduce"] == "window")
        elif name == "lovasz":
            term = lovasz(logits, y, w)
        else:
            raise SystemExit("torch_losses: no term " + name)
        loss = loss + weight * term
    return loss
