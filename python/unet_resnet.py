#!/usr/bin/env python3
"""The UNet over a ResNet or ResNeXt encoder in PyTorch, laid out and named
as segmentation_models_pytorch's `Unet(encoder_name="resnet34")` (smp),
for tiletrain's `--model unet-resnet18`, `-34`, `-50` and
`unet-resnext50_32x4d`.  A state_dict of this module has exactly smp's
keys, and its encoder part exactly torchvision's `resnet34()` (...) keys
(without `fc`) under `encoder.`, so the same safetensors file loads into
smp, into this module and into tiletrain.

  encoder   torchvision's ResNet without fc/avgpool (smp_encoders.py):
            conv1 (7x7 stride 2, no bias), bn1, ReLU -> features[1] (stride
            2, 64 channels); maxpool 3x3 stride 2 pad 1, layer1 ->
            features[2] (stride 4); layer2, layer3, layer4 -> strides 8, 16,
            32; basic blocks (18, 34: 64..512 channels) or bottleneck blocks
            (50, ResNeXt-50 with its 3x3 in 32 groups: 256..2048 channels),
            the first of layer2..4 with stride 2 and a 1x1 stride-2 conv +
            BN `downsample`.
  decoder   decoder.blocks.0..4 with channels 256, 128, 64, 32, 16: each
            nearest x2 upsampling, the skip concatenated after it
            ([upsampled, skip]; blocks 0..3 take layer3, layer2, layer1 and
            the stem's output; block 4 none), then twice conv 3x3 (no bias)
            + BN + ReLU as conv1.0/conv1.1 and conv2.0/conv2.1.
  head      segmentation_head.0: a 3x3 conv (with bias) to the classes.

The input's height and width must be multiples of 32.

    python3 python/unet_resnet.py names --encoder resnet34 --classes 4
    python3 python/unet_resnet.py check-keys     # against torchvision, when installed
"""
import argparse
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from smp_encoders import RESNETS, ResNetEncoder  # noqa: E402 (python/ beside this file)

LAYERS = RESNETS  # the encoders: torchvision's ResNets and ResNeXt (smp_encoders.py)
DECODER_CHANNELS = (256, 128, 64, 32, 16)


def conv_bn_relu(in_ch, out_ch):
    """smp's Conv2dReLU with batch norm: conv (no bias) .0, BN .1, ReLU .2."""
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, 1, 1, bias=False), nn.BatchNorm2d(out_ch),
                         nn.ReLU(inplace=True))


class DecoderBlock(nn.Module):
    def __init__(self, in_ch, skip_ch, out_ch):
        super().__init__()
        self.conv1 = conv_bn_relu(in_ch + skip_ch, out_ch)
        self.conv2 = conv_bn_relu(out_ch, out_ch)

    def forward(self, x, skip=None):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        if skip is not None:
            x = torch.cat([x, skip], dim=1)
        return self.conv2(self.conv1(x))


class Decoder(nn.Module):
    def __init__(self, encoder_channels):
        super().__init__()
        head, *skips = list(reversed(encoder_channels[1:]))  # 512; 256, 128, 64, 64
        skips = skips + [0]
        ins = [head] + list(DECODER_CHANNELS[:-1])
        self.blocks = nn.ModuleList(DecoderBlock(i, s, o)
                                    for i, s, o in zip(ins, skips, DECODER_CHANNELS))

    def forward(self, features):
        head, *skips = list(reversed(features[1:]))
        x = head
        for i, block in enumerate(self.blocks):
            x = block(x, skips[i] if i < len(skips) else None)
        return x


class UnetResNet(nn.Module):
    def __init__(self, encoder="resnet34", classes=4, in_channels=3):
        super().__init__()
        self.encoder = ResNetEncoder(encoder, in_channels)
        self.decoder = Decoder(self.encoder.out_channels)
        self.segmentation_head = nn.Sequential(nn.Conv2d(DECODER_CHANNELS[-1], classes, 3, 1, 1))

    def forward(self, x):
        if x.shape[-1] % 32 or x.shape[-2] % 32:
            raise ValueError(f"input {tuple(x.shape)}: height and width must be multiples of 32")
        return self.segmentation_head(self.decoder(self.encoder(x)))

    def freeze_encoder_bn(self):
        """FrozenBatchNorm2d: the encoder's running statistics used and kept,
        its affine parameters still trained."""
        for m in self.encoder.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()


def check_keys():
    """Our encoder's keys and shapes against torchvision's ResNets (without fc)."""
    try:
        import torchvision
    except ImportError:
        print("check-keys: torchvision is not installed (Debian: python3-torchvision); skipped")
        return 0
    problems = 0
    for name in LAYERS:
        theirs = {k: tuple(v.shape) for k, v in getattr(torchvision.models, name)().state_dict().items()
                  if not k.startswith("fc.")}
        ours = {k[len("encoder."):]: tuple(v.shape)
                for k, v in UnetResNet(name).state_dict().items() if k.startswith("encoder.")}
        if theirs != ours:
            problems += 1
            print(f"{name}: only torchvision: {sorted(set(theirs) - set(ours))[:5]}; only ours: "
                  f"{sorted(set(ours) - set(theirs))[:5]}; shapes differ: "
                  f"{[k for k in theirs if k in ours and theirs[k] != ours[k]][:5]}")
        else:
            print(f"{name}: {len(ours)} encoder keys and shapes equal torchvision's")
    return 1 if problems else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    names = sub.add_parser("names", help="the state_dict's names and shapes, one JSON line each")
    names.add_argument("--encoder", default="resnet34", choices=sorted(LAYERS))
    names.add_argument("--classes", type=int, default=4)
    sub.add_parser("check-keys", help="the encoder's keys against torchvision's ResNets")
    args = ap.parse_args(argv)
    if args.mode == "check-keys":
        return check_keys()
    for k, v in UnetResNet(args.encoder, args.classes).state_dict().items():
        print(json.dumps({"name": k, "shape": list(v.shape)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
