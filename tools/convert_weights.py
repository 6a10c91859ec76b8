#!/usr/bin/env python3
"""PyTorch weights to a safetensors file tiletrain's --init reads.

Reads a `.pth`/`.pt`/`.bin` file: a state_dict (torchvision's
resnet34-*.pth), a checkpoint dict holding one ("state_dict", "model",
"model_state_dict"; timm's train.py checkpoints too), or a whole pickled
module (torch.save(smp_model)); or a `.safetensors` file (timm's weights
from the Hugging Face hub). Writes every tensor as F32 (num_batches_tracked
as I64) under its name, after --source, --strip and --drop.

    tools/convert_weights.py resnet34-b627a593.pth resnet34.safetensors --drop fc.
    build/tiletrain train ... --model unet-resnet34 --init resnet34.safetensors --init-prefix encoder.
    tools/convert_weights.py smp_model.pth unet.safetensors --strip module.

--source names where an ImageNet checkpoint comes from and drops its
classifier (the part an smp encoder does not have), so that what is left is
exactly the state_dict of the smp encoder (python/smp_encoders.py):

  torchvision   drops fc.* (smp's ResNetEncoder deletes fc; avgpool has no
                tensors). For resnet18/34/50 and resnext50_32x4d:
      tools/convert_weights.py resnet50-11ad3fa6.pth r50.safetensors --source torchvision
      tools/convert_weights.py resnext50_32x4d-1a0047aa.pth rx50.safetensors --source torchvision
      build/tiletrain train ... --init r50.safetensors --init-prefix encoder.
  timm          drops classifier.*, conv_head.* and bn2.* (the linear
                classifier and the 1x1 head conv + BN after the last
                stage, which smp's tu-efficientnet_bN encoder, timm's
                features_only model, does not have). For timm's
                efficientnet_b0..b4 (not tf_efficientnet_*), e.g.
                efficientnet_b2_ra-bcdf34b7.pth or the hub's
                timm/efficientnet_b2.ra_in1k model.safetensors:
      tools/convert_weights.py efficientnet_b2_ra-bcdf34b7.pth b2.safetensors --source timm
      build/tiletrain train ... --init b2.safetensors --init-prefix encoder.model.
                (smp's deprecated timm-efficientnet-bN encoder keeps
                conv_head/bn2: use `--drop classifier.` instead and
                --init-prefix encoder.)
--check ENCODER compares the names and shapes written with those of that
encoder in python/smp_encoders.py (e.g. resnet50, tu-efficientnet_b2;
a tu- encoder's `model.` is left out of the comparison) and exits 1 when
any is missing or unexpected.

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


ST_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
             "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
             "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}

# --source: what an ImageNet checkpoint has that the smp encoder has not
SOURCES = {"torchvision": ("fc.",), "timm": ("classifier.", "conv_head.", "bn2.")}
# a name each source's checkpoints have (a warning when it is absent)
SOURCE_MARK = {"torchvision": "layer1.0.conv1.weight", "timm": "conv_stem.weight"}


def read_safetensors(path):
    """A safetensors file's tensors (little-endian, as the format is)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + n])
    except Exception as e:
        raise SystemExit(f"{path}: not a safetensors file: {e}")
    base, tensors = 8 + n, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in ST_DTYPES:
            raise SystemExit(f"{path}: {name} has dtype {info['dtype']}, which this tool does not read")
        a, b = info["data_offsets"]
        buf = bytearray(raw[base + a:base + b])
        dtype = ST_DTYPES[info["dtype"]]
        t = torch.frombuffer(buf, dtype=dtype) if buf else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"])
    return tensors


def check_against(encoder_name, tensors):
    """Names and shapes against python/smp_encoders.py's encoder; 0 when equal."""
    import smp_encoders
    enc = smp_encoders.get_encoder(encoder_name)
    want = {k[len("model."):] if encoder_name.startswith("tu-") else k: tuple(v.shape)
            for k, v in enc.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in tensors.items()}
    missing = [k for k in want if k not in got]
    unexpected = [k for k in got if k not in want]
    shapes = [k for k in want if k in got and want[k] != got[k]]
    print(f"--check {encoder_name}: {len(want)} encoder tensors; missing {len(missing)} "
          f"{missing[:4]}, unexpected {len(unexpected)} {unexpected[:4]}, shapes differ "
          f"{len(shapes)} {[(k, got[k], want[k]) for k in shapes[:4]]}")
    return 1 if missing or unexpected or shapes else 0


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
    ap.add_argument("input", help=".pth, .pt, .bin or .safetensors file")
    ap.add_argument("output", help="the safetensors file to write")
    ap.add_argument("--source", choices=sorted(SOURCES),
                    help="torchvision: drop fc.; timm: drop classifier., conv_head., bn2.")
    ap.add_argument("--strip", action="append", default=[], metavar="PREFIX",
                    help="remove PREFIX from names that start with it (e.g. module.)")
    ap.add_argument("--drop", action="append", default=[], metavar="PREFIX",
                    help="leave out tensors whose names start with PREFIX (e.g. fc.)")
    ap.add_argument("--check", metavar="ENCODER",
                    help="compare the result with that encoder of python/smp_encoders.py")
    args = ap.parse_args(argv)
    # a whole module pickled from tiletrain's own definition (python/unet_resnet.py)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    if args.input.endswith(".safetensors"):
        state = read_safetensors(args.input)
    else:
        try:
            obj = torch.load(args.input, map_location="cpu")
        except ModuleNotFoundError as e:
            raise SystemExit(f"{args.input}: a pickled module whose class needs {e.name}: install it "
                             "(segmentation_models_pytorch for an smp model) or save "
                             "model.state_dict() instead")
        except Exception as e:  # a damaged file, not a torch file
            raise SystemExit(f"{args.input}: cannot be read by torch.load: {e}")
        state = state_dict_of(obj, args.input)
    drop = list(args.drop) + list(SOURCES.get(args.source, ()))
    tensors = {}
    for name, t in state.items():
        for p in args.strip:
            if name.startswith(p):
                name = name[len(p):]
        if any(name.startswith(p) for p in drop) or not torch.is_tensor(t):
            continue
        tensors[name] = t
    if not tensors:
        raise SystemExit(f"{args.input}: no tensors left after --drop {drop}")
    if args.source and SOURCE_MARK[args.source] not in tensors:
        print(f"{args.input}: warning: no {SOURCE_MARK[args.source]}, which a {args.source} "
              "checkpoint has (a wrapper prefix to --strip, or another --source?)", file=sys.stderr)
    write_safetensors(args.output, tensors, {"source": args.input.rsplit("/", 1)[-1]})
    print(f"{args.output}: {len(tensors)} tensors, "
          f"{sum(t.numel() for t in tensors.values() if t.is_floating_point()) / 1e6:.2f}M values"
          + (f" (dropped {', '.join(drop)})" if drop else ""))
    if args.check:
        return check_against(args.check, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
