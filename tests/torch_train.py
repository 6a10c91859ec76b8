#!/usr/bin/env python3
"""PyTorch side of the parity test: trains the PyTorch UNet (torch_model.py:
python/tiletrain_torch.py or $TT_TORCH_UNET) exactly as `tiletrain train
--no-shuffle --no-augment` does, from the same safetensors weights on the
same folder data set, and writes the normalised gradients of the last
window and the final weights as safetensors files.

  torch_train.py --data DIR --init F --grads-out F --weights-out F
                 --steps S --micro-batch B --accum N --optimizer adamw|sgd
                 [--float64] ...

Data: DIR/images/*.png (RGB) in sorted name order, masks DIR/masks/NAME.png
with class indices (255 = ignore); B images per micro-batch, N micro-batches
per window, cycling; pixels / 255. Loss: softmax cross-entropy summed over
valid pixels, normalised by the valid pixels of the whole window; with
--loss SPEC [--class-weights W], the terms of torch_losses.py over the whole
window as one batch (what the engine's window must equal).
"""
import argparse, os, sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--grads-out", required=True)
    ap.add_argument("--weights-out", required=True)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--base-channels", type=int, default=4)
    ap.add_argument("--depth", type=int, default=2)
    ap.add_argument("--norm", default="group")
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--loss", default="")
    ap.add_argument("--class-weights", default="")
    ap.add_argument("--float64", action="store_true",
                    help="train in float64: the reference that fp32 rounding on either side is measured against")
    args = ap.parse_args()

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import st_io
    import torch_model
    UNet = torch_model.unet_class()
    torch.set_num_threads(1)
    model = UNet(3, args.classes, args.base_channels, args.depth, args.norm, args.groups)
    state = st_io.load(args.init)
    own = model.state_dict()
    model.load_state_dict({k: state[k] if k in state else own[k] for k in own})
    dtype = torch.float64 if args.float64 else torch.float32
    model.to(dtype)
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                              weight_decay=args.weight_decay)

    names = sorted(os.listdir(os.path.join(args.data, "images")))
    images, masks = [], []
    for name in names:
        img = np.asarray(Image.open(os.path.join(args.data, "images", name)).convert("RGB"))
        images.append((torch.from_numpy(img.astype(np.float32)) / 255.0).to(dtype).permute(2, 0, 1))
        stem = os.path.splitext(name)[0]
        m = np.asarray(Image.open(os.path.join(args.data, "masks", stem + ".png")))
        masks.append(torch.from_numpy(m.astype(np.int64)))
    cursor = 0
    model.train()
    for step in range(args.steps):
        window = []
        for _ in range(args.accum):
            idx = [(cursor + i) % len(names) for i in range(args.micro_batch)]
            cursor = (cursor + args.micro_batch) % len(names)
            window.append((torch.stack([images[i] for i in idx]), torch.stack([masks[i] for i in idx])))
        valid = sum(int((y != 255).sum()) for _, y in window)
        opt.zero_grad(set_to_none=False)
        if args.loss:
            import torch_losses
            w = torch.tensor([float(v) for v in args.class_weights.split(",")]
                             if args.class_weights else [1.0] * args.classes, dtype=torch.float64)
            x = torch.cat([x for x, _ in window])
            y = torch.cat([y for _, y in window])
            torch_losses.window_loss(args.loss, model(x), y, w).backward()
        for x, y in ([] if args.loss else window):
            loss = F.cross_entropy(model(x), y, ignore_index=255, reduction="sum") / valid
            loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        opt.step()
    st_io.save(args.grads_out, grads)
    st_io.save(args.weights_out, {k: v for k, v in model.state_dict().items()})


if __name__ == "__main__":
    main()
