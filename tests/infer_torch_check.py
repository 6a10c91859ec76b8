#!/usr/bin/env python3
"""PyTorch side of the sliding-window test: an independent implementation of
nnU-Net-style tiled prediction (evenly spread tile origins with the last
tile on the border, an image smaller than the tile centred in it, numpy
reflect or zero padding, Gaussian weights sigma = tile/8 normalised to a
peak of 1 and clamped per axis at 1e-3, or mean weights) over the PyTorch
UNet (torch_model.py) in float64.  Writes the blended logits (C, H, W).

  infer_torch_check.py IN.safetensors OUT.safetensors CONFIG_JSON
IN holds the weights and "image" (U8, H x W x 3).
CONFIG_JSON: {"classes", "base_channels", "depth", "norm", "groups",
              "tile": [th, tw], "overlap", "blend": "gaussian"|"mean", "pad": "reflect"|"zero"}
"""
import json, math, os, sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io
import torch_model


def origins(length, tile, overlap):
    if length <= tile:
        return [-((tile - length) // 2)]
    step = max(1, math.floor(tile * (1 - overlap)))
    n = -(-(length - tile) // step) + 1
    return [int(math.floor((length - tile) * i / (n - 1) + 0.5)) for i in range(n)]


def weights(tile, blend):
    if blend == "mean":
        return np.ones(tile)
    d = np.arange(tile) + 0.5 - tile / 2
    sigma = tile / 8
    g = np.exp(-d * d / (2 * sigma * sigma))
    return np.maximum((g / g.max()).astype(np.float32), np.float32(1e-3)).astype(np.float64)


def main():
    inp, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    UNet = torch_model.unet_class()
    torch.set_num_threads(1)
    model = UNet(3, cfg["classes"], cfg["base_channels"], cfg["depth"], cfg["norm"], cfg["groups"])
    data = st_io.load(inp)
    model.load_state_dict({k: data[k] for k in model.state_dict()})
    model = model.double().eval()
    image = data["image"].numpy().astype(np.float64) / 255.0
    h, w, _ = image.shape
    th, tw = cfg["tile"]
    # pad so that every tile lies inside the padded image
    ys, xs = origins(h, th, cfg["overlap"]), origins(w, tw, cfg["overlap"])
    top, left = max(0, -ys[0]), max(0, -xs[0])
    bottom, right = max(0, ys[-1] + th - h), max(0, xs[-1] + tw - w)
    mode = "reflect" if cfg["pad"] == "reflect" else "constant"
    padded = np.pad(image, ((top, bottom), (left, right), (0, 0)), mode=mode)
    wy, wx = weights(th, cfg["blend"]), weights(tw, cfg["blend"])
    acc = np.zeros((cfg["classes"], h + top + bottom, w + left + right))
    wsum = np.zeros((h + top + bottom, w + left + right))
    with torch.no_grad():
        for y0 in ys:
            for x0 in xs:
                tile = padded[y0 + top:y0 + top + th, x0 + left:x0 + left + tw]
                x = torch.from_numpy(np.ascontiguousarray(tile.transpose(2, 0, 1)))[None]
                logits = model(x)[0].numpy()
                wt = np.outer(wy, wx)
                acc[:, y0 + top:y0 + top + th, x0 + left:x0 + left + tw] += wt * logits
                wsum[y0 + top:y0 + top + th, x0 + left:x0 + left + tw] += wt
    result = (acc / wsum)[:, top:top + h, left:left + w]
    st_io.save(out, {"logits": torch.from_numpy(np.ascontiguousarray(result)).float()})


if __name__ == "__main__":
    main()
