#!/usr/bin/env python3
"""The PyTorch peer of a tiletrain training run: the same recipe, trained in
PyTorch, scored by the same full-resolution validation Dice on the same
held-out images, so that tiletrain's figures can be put beside a plain
PyTorch + albumentations pipeline. A benchmark tool: it is never run in CI.

    torch_recipe.py --run RUN_DIR --data DATA_DIR [--threads 2]
                    [--augment tiletrain|none] [--steps N] [--seed K]
                    [--val-every K] [--blend mean|gaussian] [--out FILE.json]

RUN_DIR is a `tiletrain train --out` folder: its train.jsonl "recipe" line
(every option with its final value; plan.json's args fill in what it lacks)
gives the recipe, validation.txt the held-out images. DATA_DIR is a Kaggle
RLE data set (train_images/NAME.jpg, train.csv of `NAME.jpg_LABEL,RLE` with
1-based column-major runs; classes in the order the labels first appear).
The model is python/tiletrain_torch.py's UNet. Needs torch, numpy, pillow,
opencv and albumentations 2.x. Prints one JSON object (and writes it to --out).

What is the same as tiletrain: the recipe's values, the crop sampler (a
class drawn among those present, then one of its pixels, the crop centred
on it and clamped into the image), the window normalisation of the losses,
the tile origins of validation and its rule (sigmoid > threshold, components
under min-size removed, 8-connectivity). What differs: weight init and all
random streams; torch's CosineAnnealingLR takes the lr of step 0 first
(tiletrain that of step 1); albumentations warps the crop itself (outside it
masks are ignore) where tiletrain reads the image around the crop; tiletrain
validates with a gaussian blend, this with uniform weights unless --blend.
"""
import argparse
import csv
import json
import math
import os
import sys
import time

import cv2
import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from tiletrain_torch import UNet  # noqa: E402

IGNORE = 255


# ---- the recipe -----------------------------------------------------------

def read_recipe(run_dir):
    """({option: value string}, expanded augment spec or None, validation names)."""
    values = {}
    plan_path = os.path.join(run_dir, "plan.json")
    if os.path.exists(plan_path):  # the plan's args: overridden by the recipe line
        with open(plan_path) as f:
            args = json.load(f).get("args", [])
        values.update({a[2:]: v for a, v in zip(args[0::2], args[1::2])})
    table, expanded = None, None
    with open(os.path.join(run_dir, "train.jsonl")) as f:
        for line in f:
            obj = json.loads(line)
            if "recipe" in obj:
                table = obj["recipe"]  # the last one (a resumed run writes another)
            elif isinstance(obj.get("augment"), dict):
                expanded = obj["augment"].get("spec")
    if table is None:
        sys.exit(f"{run_dir}/train.jsonl has no \"recipe\" line")
    values.update({row["option"]: str(row["value"]) for row in table})
    with open(os.path.join(run_dir, "validation.txt")) as f:
        val = [s.strip() for s in f if s.strip() and not s.startswith("#")]
    return values, expanded, val


def floats(text):
    """"0.32,0.37,0.45" -> three floats (one value: for every channel); "" -> None."""
    v = [float(x) for x in text.split(",")] if text else None
    return v * 3 if v and len(v) == 1 else v


def make_recipe(values, args):
    """The values this run uses, typed; the command line overrides steps and seed."""
    th, tw = (int(v) for v in values["tile"].lower().split("x"))
    steps = args.steps or int(values.get("steps", 0))
    if steps <= 0:
        sys.exit("the run gives no --steps (an --epochs run?): pass --steps N")
    wd = float(values.get("weight-decay", -1))
    return {"tile": [th, tw], "micro_batch": int(values["micro-batch"]),
            "accum": int(values.get("accum", 1)), "steps": steps, "lr": float(values["lr"]),
            "schedule": values.get("schedule", "constant"),
            "warmup": int(values.get("warmup", 0)), "min_lr": float(values.get("min-lr", 0)),
            "weight_decay": 0.01 if wd < 0 else wd,
            "mean": floats(values.get("mean")), "std": floats(values.get("std")),
            "norm": values.get("norm", "group"), "groups": int(values.get("groups", 8)),
            "base_channels": int(values.get("base-channels", 16)),
            "depth": int(values.get("depth", 3)),
            "fg_fraction": float(values.get("fg-fraction", 0)),
            "loss": values.get("loss", "bce+dice"),
            "augment": values.get("augment", "default"),
            "val_overlap": float(values.get("val-overlap", 0.25)),
            "threshold": float(values.get("threshold", 0.5)),
            "min_size": int(values.get("min-size", 0)),
            "seed": args.seed if args.seed is not None else int(values.get("seed", 0))}


# ---- the data: Kaggle RLE ---------------------------------------------------

def read_rle_csv(data_dir):
    """(image names in order, class labels in order, {name: {label: rle text}})."""
    names, labels, rles = [], [], {}
    with open(os.path.join(data_dir, "train.csv"), newline="") as f:
        for row in csv.DictReader(f):
            name, label = row["Image_Label"].rsplit("_", 1)
            if name not in rles:
                names.append(name)
                rles[name] = {}
            if label not in labels:
                labels.append(label)
            rles[name][label] = (row["EncodedPixels"] or "").strip()
    return names, labels, rles


def runs_of(text):
    """0-based starts and lengths of an RLE's runs."""
    nums = np.array(text.split(), dtype=np.int64)
    return nums[0::2] - 1, nums[1::2]


def rle_decode(text, h, w):
    """One (h, w) uint8 0/1 plane; the runs number pixels down columns."""
    if not text:
        return np.zeros((h, w), np.uint8)
    starts, lengths = runs_of(text)
    edges = np.zeros(h * w + 1, np.int32)
    np.add.at(edges, starts, 1)
    np.add.at(edges, starts + lengths, -1)
    return (np.cumsum(edges[:-1]) > 0).astype(np.uint8).reshape(w, h).T.copy()


class Dataset:
    """Images and masks by name, decoded on demand and kept while they fit
    in cache_mb; the foreground runs of each class for the sampler."""

    def __init__(self, data_dir, names, labels, rles, cache_mb=4096):
        self.dir, self.labels, self.rles = data_dir, labels, rles
        self.cache, self.cache_bytes, self.cache_max = {}, 0, cache_mb << 20
        self.fg = {n: [runs_of(rles[n].get(l, "")) if rles[n].get(l) else None for l in labels]
                   for n in names}

    def load(self, name):
        """(image (H, W, 3) uint8, masks (C, H, W) uint8 0/1)."""
        if name in self.cache:
            return self.cache[name]
        with Image.open(os.path.join(self.dir, "train_images", name)) as im:
            image = np.array(im.convert("RGB"))
        h, w = image.shape[:2]
        masks = np.stack([rle_decode(self.rles[name].get(l, ""), h, w) for l in self.labels])
        if self.cache_bytes + image.nbytes + masks.nbytes <= self.cache_max:
            self.cache[name] = (image, masks)
            self.cache_bytes += image.nbytes + masks.nbytes
        return image, masks


def window(array, y0, x0, th, tw, fill):
    """array[..., y0:y0+th, x0:x0+tw] (the last two axes are H, W), with
    `fill` where the window leaves the array."""
    h, w = array.shape[-2:]
    out = np.full(array.shape[:-2] + (th, tw), fill, array.dtype)
    ya, yb, xa, xb = max(y0, 0), min(y0 + th, h), max(x0, 0), min(x0 + tw, w)
    if ya < yb and xa < xb:
        out[..., ya - y0:yb - y0, xa - x0:xb - x0] = array[..., ya:yb, xa:xb]
    return out


class Sampler:
    """Random crops as tiletrain's sampler: images in a shuffled order each
    epoch; with probability fg_fraction the crop is centred on a pixel of a
    class drawn among those present (as tiletrain: class first, then one of
    its pixels), clamped into the image; otherwise a uniform origin."""

    def __init__(self, data, names, tile, fg_fraction, rng):
        self.data, self.names, self.tile, self.fg, self.rng = data, names, tile, fg_fraction, rng
        self.order = []

    def crop(self):
        if not self.order:
            self.order = list(self.rng.permutation(len(self.names)))
        name = self.names[self.order.pop()]
        image, masks = self.data.load(name)
        (h, w), (th, tw) = image.shape[:2], self.tile
        lox, hix = (w - tw, 0) if w < tw else (0, w - tw)
        loy, hiy = (h - th, 0) if h < th else (0, h - th)
        present = [r for r in self.data.fg[name] if r is not None]
        if self.rng.random() < self.fg and present:
            starts, lengths = present[self.rng.integers(len(present))]
            ends = np.cumsum(lengths)
            nth = int(self.rng.integers(ends[-1]))
            run = int(np.searchsorted(ends, nth, side="right"))
            index = int(starts[run] + nth - (ends[run] - lengths[run]))
            px, py = index // h, index % h  # column-major
            x0, y0 = min(max(px - tw // 2, lox), hix), min(max(py - th // 2, loy), hiy)
        else:
            x0, y0 = int(self.rng.integers(lox, hix + 1)), int(self.rng.integers(loy, hiy + 1))
        rgb = window(image.transpose(2, 0, 1), y0, x0, th, tw, 0).transpose(1, 2, 0)
        return np.ascontiguousarray(rgb), window(masks, y0, x0, th, tw, IGNORE)


# ---- augmentation: albumentations ----------------------------------------

# tiletrain's transform names (the expanded spec in train.jsonl) and their
# albumentations equivalents at the parameters of the spec
# "default,affine,grid,gamma,hsv,noise,blur": flip, rot90, brightness,
# contrast, affine, grid, gamma, hsv, noise, blur. A run's spec "none" gives
# no augmentation; otherwise the transforms its expanded spec names (all of
# them if it has none); tiletrain's `elastic` has no equivalent here.
def build_augment(expanded, square, seed):
    import albumentations as A
    named = {item.split(":")[0] for item in (expanded or "").split(",") if item}
    everything = {"flip", "rot90", "brightness", "contrast", "affine", "grid", "gamma", "hsv",
                  "noise", "blur"}
    if not named:
        named = everything
    unknown = named - everything
    if unknown:
        print(f"torch_recipe: no albumentations equivalent of {sorted(unknown)}; left out",
              file=sys.stderr)
    on = named & everything
    t = []
    if "flip" in on:
        t += [A.HorizontalFlip(p=0.5), A.VerticalFlip(p=0.5)]
    if "rot90" in on and square:
        t.append(A.RandomRotate90(p=1))
    if on & {"brightness", "contrast"}:
        t.append(A.RandomBrightnessContrast(0.1 if "brightness" in on else 0,
                                            0.1 if "contrast" in on else 0, p=1))
    if "affine" in on:
        t.append(A.Affine(translate_percent=(-0.0625, 0.0625), scale=(0.9, 1.1), rotate=(-15, 15),
                          interpolation=cv2.INTER_LINEAR, mask_interpolation=cv2.INTER_NEAREST,
                          border_mode=cv2.BORDER_CONSTANT, fill=0, fill_mask=IGNORE, p=0.5))
    if "grid" in on:
        t.append(A.GridDistortion(num_steps=5, distort_limit=0.3, border_mode=cv2.BORDER_CONSTANT,
                                  fill=0, fill_mask=IGNORE, p=0.3))
    if "gamma" in on:
        t.append(A.RandomGamma(gamma_limit=(80, 120), p=0.3))
    if "hsv" in on:
        t.append(A.HueSaturationValue(hue_shift_limit=10, sat_shift_limit=20, val_shift_limit=0,
                                      p=0.3))
    if "noise" in on:
        t.append(A.GaussNoise(std_range=(0.03, 0.03), p=0.2))
    if "blur" in on:
        t.append(A.GaussianBlur(blur_limit=0, sigma_limit=(0.3, 1.0), p=0.1))
    return A.Compose(t, seed=seed), [type(x).__name__ for x in t]


# ---- losses: (sum over the micro-batch, its count), normalised per window --

def bce_terms(logits, target, valid):
    return (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * valid).sum()


def focal_terms(logits, target, valid, gamma=2.0):
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    return ((1 - torch.exp(-bce)) ** gamma * bce * valid).sum()


def dice_terms(logits, target, valid):
    """Sum over (image, class) of 1 - soft Dice over the valid pixels."""
    p, t = torch.sigmoid(logits) * valid, target * valid
    inter, total = (p * t).sum((2, 3)), p.sum((2, 3)) + t.sum((2, 3))
    return (1 - (2 * inter + 1) / (total + 1)).sum()


def lovasz_terms(logits, target, valid):
    """Sum over images of the mean over classes of the Lovasz hinge of the
    (image, class) plane's valid pixels."""
    n, c = logits.shape[:2]
    total = logits.new_zeros(())
    for i in range(n):
        for k in range(c):
            keep = valid[i, k].reshape(-1) > 0
            x, t = logits[i, k].reshape(-1)[keep], target[i, k].reshape(-1)[keep]
            if x.numel() == 0:
                continue
            errors = 1 - x * (2 * t - 1)
            errors, order = torch.sort(errors, descending=True)
            t = t[order]
            gts = t.sum()
            jaccard = 1 - (gts - t.cumsum(0)) / (gts + (1 - t).cumsum(0))
            jaccard = torch.cat((jaccard[:1], jaccard[1:] - jaccard[:-1]))
            total = total + torch.dot(F.relu(errors), jaccard) / c
    return total


LOSSES = {"bce": bce_terms, "dice": dice_terms, "focal": focal_terms, "lovasz": lovasz_terms}


def parse_loss(spec):
    """"bce+0.5*dice" -> [(1.0, "bce"), (0.5, "dice")]."""
    terms = []
    for part in spec.split("+"):
        weight, _, name = part.strip().rpartition("*")
        if name not in LOSSES:
            sys.exit(f"loss '{name}' in '{spec}': give {', '.join(LOSSES)} (multi-label)")
        terms.append((float(weight) if weight else 1.0, name))
    return terms


def window_counts(terms, masks):
    """The window's normaliser of each term: valid elements (bce, focal),
    images x classes (dice), images (lovasz)."""
    n, c = masks.shape[:2]
    valid = int((masks != IGNORE).sum())
    return {name: max(1, {"bce": valid, "focal": valid, "dice": n * c, "lovasz": n}[name])
            for _, name in terms}


# ---- validation --------------------------------------------------------------

def origins(length, tile, overlap):
    """tiletrain's tile origins along one axis (infer/tiling.c)."""
    if length <= tile:
        return [-((tile - length) // 2)]
    step = max(1, int(math.floor(tile * (1 - overlap))))
    count = (length - tile + step - 1) // step + 1
    return [int(math.floor((length - tile) * i / (count - 1) + 0.5)) for i in range(count)]


def blend_weights(tile, blend):
    if blend == "mean":
        return torch.ones(tile)
    d = torch.arange(tile, dtype=torch.float64) + 0.5 - tile / 2.0
    g = torch.exp(-d * d / (2 * (tile / 8.0) ** 2))
    return (g / g.max()).clamp(min=1e-3).float()  # tiletrain's gaussian blend (floor 1e-3)


@torch.no_grad()
def predict(model, x, tile, overlap, blend, batch=8):
    """Logits (C, H, W) of a normalised image x (3, H, W) from overlapping
    tiles (reflect padding where the image is smaller than a tile)."""
    (h, w), (th, tw) = x.shape[1:], tile
    py, px = max(0, th - h), max(0, tw - w)
    xp = F.pad(x[None], (px // 2, px - px // 2, py // 2, py - py // 2), mode="reflect")[0] \
        if py or px else x
    oy = [o + py // 2 for o in origins(h, th, overlap)]
    ox = [o + px // 2 for o in origins(w, tw, overlap)]
    weight = blend_weights(th, blend)[:, None] * blend_weights(tw, blend)[None, :]
    spots = [(y, x0) for y in oy for x0 in ox]
    acc, norm = None, torch.zeros(xp.shape[1:])
    for i in range(0, len(spots), batch):
        part = spots[i:i + batch]
        out = model(torch.stack([xp[:, y:y + th, x0:x0 + tw] for y, x0 in part]))
        if acc is None:
            acc = torch.zeros((out.shape[1],) + xp.shape[1:])
        for (y, x0), logits in zip(part, out):
            acc[:, y:y + th, x0:x0 + tw] += logits * weight
            norm[y:y + th, x0:x0 + tw] += weight
    return (acc / norm)[:, py // 2:py // 2 + h, px // 2:px // 2 + w]


def remove_small(mask, min_size):
    if min_size <= 1 or not mask.any():
        return mask
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    small = np.flatnonzero(stats[:, cv2.CC_STAT_AREA] < min_size)
    small = small[small > 0]
    if len(small):
        mask = mask.copy()
        mask[np.isin(labels, small)] = 0
    return mask


def validate(model, data, names, to_input, r, blend):
    """Mean competition Dice over (image, class), and the per-class means."""
    model.eval()
    scores = np.zeros((len(names), len(data.labels)))
    for i, name in enumerate(names):
        image, masks = data.load(name)
        probs = torch.sigmoid(predict(model, to_input(image[None])[0], r["tile"],
                                      r["val_overlap"], blend)).numpy()
        for c in range(len(data.labels)):
            pred = remove_small((probs[c] > r["threshold"]).astype(np.uint8), r["min_size"])
            truth = masks[c] > 0
            both = int(pred.sum()) + int(truth.sum())
            scores[i, c] = 1.0 if both == 0 else 2.0 * int((pred.astype(bool) & truth).sum()) / both
    model.train()
    return float(scores.mean()), scores.mean(0).tolist()


# ---- training -----------------------------------------------------------------

def check_supported(values):
    """Leaves out nothing silently: options of the run this peer does not do."""
    for option, plain in (("model", "unet"), ("optimizer", "adamw")):
        if values.get(option, plain) != plain:
            sys.exit(f"the run's {option} is {values[option]}: this peer does {plain} only")
    for option, plain in (("tta", "none"), ("ema", "0"), ("class-weights", ""),
                          ("precision", "fp32")):
        if values.get(option, plain) != plain:
            print(f"torch_recipe: the run's {option} {values[option]} is not reproduced here",
                  file=sys.stderr)


def make_schedule(opt, r, values):
    """Per optimizer step: cosine (torch's CosineAnnealingLR from lr to
    min-lr), step or constant, after a linear warmup as tiletrain's
    (lr * t / warmup at steps t = 1..warmup)."""
    lrs, warm, left = torch.optim.lr_scheduler, r["warmup"], r["steps"] - r["warmup"]
    if r["schedule"] == "cosine":
        if left < 1:
            sys.exit(f"cosine: steps {r['steps']} must exceed warmup {warm}")
        sched = lrs.CosineAnnealingLR(opt, T_max=left, eta_min=r["min_lr"])
    elif r["schedule"] == "step":
        sched = lrs.StepLR(opt, int(values["step-every"]), float(values.get("gamma", 0.1)))
    elif r["schedule"] == "constant":
        sched = lrs.LambdaLR(opt, lambda s: 1.0)
    else:
        sys.exit(f"schedule '{r['schedule']}': give cosine, step or constant")
    if warm <= 0:
        return sched
    ramp = lrs.LambdaLR(opt, lambda s: (s + 1) / warm)
    return lrs.SequentialLR(opt, [ramp, sched], milestones=[warm])


def sample_window(sampler, augment, r, to_input):
    """accum micro-batches of crops: [(inputs (B, 3, h, w), masks (B, C, h, w) uint8)]."""
    window = []
    for _ in range(r["accum"]):
        xs, ys = [], []
        for _ in range(r["micro_batch"]):
            rgb, masks = sampler.crop()
            if augment is not None:
                out = augment(image=rgb, masks=list(masks))
                rgb, masks = out["image"], np.stack(out["masks"])
            xs.append(rgb)
            ys.append(masks)
        window.append((to_input(np.stack(xs)), torch.from_numpy(np.stack(ys))))
    return window


def train_step(model, opt, window, terms, clip):
    """One optimizer step over a window: each term's sum over the window
    divided by the window's count (as tiletrain normalises), weighted."""
    counts = window_counts(terms, torch.cat([y for _, y in window]))
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for x, y in window:
        logits = model(x)
        valid, target = (y != IGNORE).float(), (y == 1).float()
        loss = sum(w * LOSSES[name](logits, target, valid) / counts[name] for w, name in terms)
        loss.backward()
        total += float(loss.detach())
    if clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="a tiletrain train --out folder")
    ap.add_argument("--data", required=True, help="the Kaggle RLE data set it trained on")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--augment", choices=["tiletrain", "none"], default="tiletrain")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (default: the run's)")
    ap.add_argument("--seed", type=int, default=None, help="default: the run's")
    ap.add_argument("--val-every", type=int, default=0, help="also validate every K steps")
    ap.add_argument("--blend", choices=["mean", "gaussian"], default="mean",
                    help="weights of overlapping validation tiles (tiletrain: gaussian)")
    ap.add_argument("--cache-mb", type=int, default=4096, help="decoded images kept in memory")
    ap.add_argument("--out", help="also write the JSON result here")
    args = ap.parse_args(argv)

    values, expanded, val_names = read_recipe(args.run)
    check_supported(values)
    r = make_recipe(values, args)
    torch.set_num_threads(args.threads)
    torch.manual_seed(r["seed"])
    names, labels, rles = read_rle_csv(args.data)
    data = Dataset(args.data, names, labels, rles, args.cache_mb)
    missing = [n for n in val_names if n not in rles]
    if missing:
        sys.exit(f"validation images not in {args.data}/train.csv: {missing[:5]}")
    train_names = [n for n in names if n not in set(val_names)]
    sampler = Sampler(data, train_names, r["tile"], r["fg_fraction"],
                      np.random.default_rng(r["seed"]))
    use_augment = args.augment == "tiletrain" and r["augment"] != "none"
    augment, augment_names = (build_augment(expanded, r["tile"][0] == r["tile"][1], r["seed"])
                              if use_augment else (None, []))
    terms = parse_loss(r["loss"])
    mean = torch.tensor(r["mean"] or [0.0] * 3).view(1, 3, 1, 1)
    std = torch.tensor(r["std"] or [1.0] * 3).view(1, 3, 1, 1)

    def to_input(rgb):  # (N, H, W, 3) uint8 -> (N, 3, H, W): pixels / 255, then (x - mean) / std
        return (torch.from_numpy(rgb).permute(0, 3, 1, 2).float() / 255 - mean) / std

    model = UNet(3, len(labels), r["base_channels"], r["depth"], r["norm"], r["groups"])
    opt = torch.optim.AdamW(model.parameters(), lr=r["lr"], weight_decay=r["weight_decay"])
    sched = make_schedule(opt, r, values)
    clip = float(values.get("clip-norm", 0))
    history, data_s, train_s = [], 0.0, 0.0
    model.train()
    for step in range(1, r["steps"] + 1):
        t0 = time.time()
        window = sample_window(sampler, augment, r, to_input)
        t1 = time.time()
        lr = opt.param_groups[0]["lr"]
        loss = train_step(model, opt, window, terms, clip)
        sched.step()
        data_s, train_s = data_s + t1 - t0, train_s + time.time() - t0
        print(f"step {step:6d}  loss {loss:.5f}  lr {lr:.3g}  {time.time() - t0:.3f} s",
              file=sys.stderr)
        if args.val_every and step % args.val_every == 0 and step < r["steps"]:
            dice, _ = validate(model, data, val_names, to_input, r, args.blend)
            history.append({"step": step, "mean_dice": round(dice, 5)})
            print(f"validation at step {step}: mean Dice {dice:.4f}", file=sys.stderr)
    dice, per_class = validate(model, data, val_names, to_input, r, args.blend)
    for label, d in zip(labels, per_class):
        print(f"  {label:20s} {d:.4f}", file=sys.stderr)
    r.update(augment_used="albumentations" if use_augment else "none",
             augment_transforms=augment_names, blend=args.blend, threads=args.threads,
             clip_norm=clip, train_images=len(train_names), val_images=len(val_names))
    images = r["steps"] * r["micro_batch"] * r["accum"]
    result = {"mean_dice": round(dice, 5),
              "classes": [{"name": l, "dice": round(d, 5)} for l, d in zip(labels, per_class)],
              "steps": r["steps"], "seconds": round(train_s, 3),
              "images_per_s": round(images / train_s, 3), "data_s": round(data_s, 3),
              "history": history, "torch": torch.__version__, "recipe": r}
    text = json.dumps(result)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
