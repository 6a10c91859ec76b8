#!/usr/bin/env python3
"""Marks a rectangle of a different, random size in every mask of a
folder-format data set as ignored (255), so that the valid pixels of the
crops differ from rank to rank: a per-rank mean would then differ from the
mean over the whole window.

  ignore_regions.py DATA_DIR [--seed K]"""
import os, random, sys

from PIL import Image


def main():
    root = sys.argv[1]
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 7
    rng = random.Random(seed)
    masks = os.path.join(root, "masks")
    for name in sorted(os.listdir(masks)):
        path = os.path.join(masks, name)
        m = Image.open(path)
        w, h = m.size
        px = m.load()
        rw, rh = rng.randint(1, w - 1), rng.randint(1, h - 1)
        x0, y0 = rng.randint(0, w - rw), rng.randint(0, h - rh)
        for y in range(y0, y0 + rh):
            for x in range(x0, x0 + rw):
                px[x, y] = 255
        m.save(path)


if __name__ == "__main__":
    main()
