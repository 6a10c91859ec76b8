#!/usr/bin/env python3
"""PyTorch weights to a safetensors file tiletrain's --init reads.

Reads a `.pth`/`.pt` file: a state_dict (torchvision's resnet34-*.pth), a
checkpoint dict holding one ("state_dict", "model", "model_state_dict"), or
a whole pickled module (torch.save(smp_model)); writes every tensor as F32
(num_batches_tracked as I64) under its name, after --strip and --drop.

    tools/convert_weights.py resnet34-b627a593.pth resnet34.safetensors --drop fc.
    build/tiletrain train ... --model unet-resnet34 --init resnet34.safetensors --init-prefix encoder.
    tools/convert_weights.py smp_model.pth unet.safetensors --strip module.

Needs PyTorch (Debian: python3-torch; run with /usr/bin/python3). Exit 1
with a message naming the file when it holds no tensors."""
import argparse
import json
import os
import struct
import sys

import torch


def state_dict_of(obj, path):
    if isinstance(obj, torch.nn.Module):
        return obj.state_dict()
    if isinstance(obj, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if key in obj and isinstance(obj[key], (dict, torch.nn.Module)):
                return state_dict_of(obj[key], path)
        tensors = {k: v for k, v in obj.items() if torch.is_tensor(v)}
        if tensors:
            return tensors
    raise SystemExit(f"{path}: no state_dict in it (a {type(obj).__name__}); give a state_dict, "
                     "a checkpoint dict with 'state_dict' or 'model', or a saved module")


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype in (torch.int64, torch.int32, torch.uint8) and t.dim() == 0:
            dtype, data = "I64", struct.pack("<q", int(t.item()))
        elif t.is_floating_point():
            dtype, data = "F32", t.float().numpy().astype("<f4").tobytes()
        else:
            dtype, data = "I64", t.long().numpy().astype("<i8").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for b in blobs:
            f.write(b)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help=".pth or .pt file")
    ap.add_argument("output", help="the safetensors file to write")
    ap.add_argument("--strip", action="append", default=[], metavar="PREFIX",
                    help="remove PREFIX from names that start with it (e.g. module.)")
    ap.add_argument("--drop", action="append", default=[], metavar="PREFIX",
                    help="leave out tensors whose names start with PREFIX (e.g. fc.)")
    args = ap.parse_args(argv)
    # a whole module pickled from tiletrain's own definition (python/unet_resnet.py)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    try:
        obj = torch.load(args.input, map_location="cpu")
    except ModuleNotFoundError as e:
        raise SystemExit(f"{args.input}: a pickled module whose class needs {e.name}: install it "
                         "(segmentation_models_pytorch for an smp model) or save "
                         "model.state_dict() instead")
    except Exception as e:  # a damaged file, not a torch file
        raise SystemExit(f"{args.input}: cannot be read by torch.load: {e}")
    tensors = {}
    for name, t in state_dict_of(obj, args.input).items():
        for p in args.strip:
            if name.startswith(p):
                name = name[len(p):]
        if any(name.startswith(p) for p in args.drop) or not torch.is_tensor(t):
            continue
        tensors[name] = t
    if not tensors:
        raise SystemExit(f"{args.input}: no tensors left after --drop {args.drop}")
    write_safetensors(args.output, tensors, {"source": args.input.rsplit("/", 1)[-1]})
    print(f"{args.output}: {len(tensors)} tensors, "
          f"{sum(t.numel() for t in tensors.values() if t.is_floating_point()) / 1e6:.2f}M values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
