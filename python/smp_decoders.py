#!/usr/bin/env python3
"""FPN, DeepLabV3+ and Linknet in plain PyTorch, laid out and named as
segmentation_models_pytorch 0.6 (smp) builds them, over the encoders of
smp_encoders.py: `build(encoder_name, decoder_name, classes)` has exactly
the state_dict keys, shapes and order of

    smp.FPN(encoder_name=..., encoder_weights=None, classes=...)
    smp.DeepLabV3Plus(encoder_name=..., encoder_weights=None, classes=...)
    smp.Linknet(encoder_name=..., encoder_weights=None, classes=...)

and the same forward (tools/check_smp_models.py checks both against smp in
float64). No import of smp, timm or torchvision; torch 1.13 or 2.x.

FPN ("fpn"; smp defaults pyramid 256, segmentation 128, merge "add",
dropout 0.2, interpolation "nearest", upsampling 4). Reads features[-4:] =
c2..c5 (strides 4, 8, 16, 32): p5 = decoder.p5 (1x1 conv, bias) of c5;
p4 = nearest x2 of p5 + decoder.p4.skip_conv (1x1, bias) of c4; p3, p2
likewise. decoder.seg_blocks.0..3 on p5, p4, p3, p2 with 3, 2, 1, 0
upsamplings: each block.J = conv 3x3 (no bias) .block.0, GroupNorm(32
groups, eps 1e-5) .block.1, ReLU, then (when it upsamples) bilinear x2 with
align_corners=True; seg_blocks.3 is one conv+GN+ReLU without upsampling.
The four 128-channel maps are summed (torch.stack(...).sum(0)), then
Dropout2d(p=0.2) (whole channels zeroed per sample, kept ones scaled by
1/0.8; active in train mode only, identity in eval); then the head:
segmentation_head.0 = 1x1 conv (bias) to the classes, bilinear x4
(align_corners=True). Input sides: multiples of 32.

DeepLabV3+ ("deeplabv3plus"; smp defaults encoder_output_stride 16,
decoder_channels 256, atrous rates (12, 24, 36), aspp_separable True,
aspp_dropout 0.5, upsampling 4). The encoder's last stage is dilated so
features[-1] has stride 16 (see smp_encoders: ResNets dilate all of
layer4 with rate 2, padding 2 for the 3x3s, stride 1; tu-efficientnet lets
timm's builder drop the stride of blocks[5][0] and dilate later blocks;
timm-efficientnet dilates all of blocks[5:]). decoder.aspp.0 = ASPP on
features[-1]: convs.0 = 1x1 conv (no bias) + BN + ReLU; convs.1..3 =
SeparableConv2d (convs.i.0.0 depthwise 3x3, dilation = padding = rate, no
bias; convs.i.0.1 pointwise 1x1, no bias) + BN (.1) + ReLU for rates 12,
24, 36; convs.4 = image pooling: global average (AdaptiveAvgPool2d(1)),
1x1 conv (.1, no bias), BN (.2), ReLU, then bilinear (align_corners=False)
back to the map's size, i.e. a broadcast; concatenated in that order (5 x
256) -> project.0 1x1 conv (no bias) -> project.1 BN -> ReLU -> Dropout(0.5)
(elementwise, train only). Then decoder.aspp.1 = SeparableConv2d 3x3 pad 1
(aspp.1.0 depthwise, aspp.1.1 pointwise, no biases), aspp.2 BN, ReLU;
bilinear x4 (align_corners=True) to stride 4. decoder.block1 on features[2]
(stride 4): 1x1 conv to 48 (no bias) + BN + ReLU. cat([aspp, block1]) ->
decoder.block2: SeparableConv2d(304 -> 256, 3x3 pad 1, .0.0 dw, .0.1 pw,
no biases) + BN (.1) + ReLU. Head: 1x1 conv (bias) + bilinear x4
(align_corners=True). Input sides: multiples of 16 (smp checks the encoder's
output stride, 16). Train mode needs batch >= 2 (BN over the 1x1 pooled
map).

Linknet ("linknet"; prefinal channels 32, use_norm batchnorm). Channels
c = reversed(out_channels[1:]) + [32]; decoder.blocks.i (i = 0..4) maps
c[i] -> c[i+1]: block.0 = 1x1 conv (no bias) c[i] -> c[i]//4 + BN + ReLU;
block.1 = ConvTranspose2d(c[i]//4, c[i]//4, 4, stride 2, padding 1, with
bias) + BN + ReLU; block.2 = 1x1 conv (no bias) -> c[i+1] + BN + ReLU;
then + the skip (features[4], [3], [2], [1] for blocks 0..3; block 4
none). Head: segmentation_head.0 = 1x1 conv (bias), no upsampling (the
last block's transposed conv brings stride 2 to 1). Input sides:
multiples of 32.

All decoder BNs are nn.BatchNorm2d defaults (eps 1e-5, momentum 0.1).

    python3 python/smp_decoders.py names fpn-resnet50 unet-efficientnet-b0 --classes 4

(`names` takes tiletrain's --model names, decoder-encoder, as many as
given in one process: one JSON line per tensor, {"model", "name", "shape"}.)
"""
import argparse
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from smp_encoders import encoder_names, get_encoder

DECODERS = ("fpn", "deeplabv3plus", "linknet", "unet")


# -------------------------------------------------------------------- FPN

class Conv3x3GNReLU(nn.Module):
    def __init__(self, in_ch, out_ch, upsample=False):
        super().__init__()
        self.upsample = upsample
        self.block = nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, 1, 1, bias=False),
                                   nn.GroupNorm(32, out_ch), nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.block(x)
        if self.upsample:
            x = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True)
        return x


class FPNBlock(nn.Module):
    def __init__(self, pyramid_ch, skip_ch):
        super().__init__()
        self.skip_conv = nn.Conv2d(skip_ch, pyramid_ch, 1)

    def forward(self, x, skip):
        return F.interpolate(x, scale_factor=2.0, mode="nearest") + self.skip_conv(skip)


class SegmentationBlock(nn.Module):
    def __init__(self, in_ch, out_ch, n_upsamples=0):
        super().__init__()
        blocks = [Conv3x3GNReLU(in_ch, out_ch, upsample=bool(n_upsamples))]
        blocks += [Conv3x3GNReLU(out_ch, out_ch, upsample=True) for _ in range(1, n_upsamples)]
        self.block = nn.Sequential(*blocks)

    def forward(self, x):
        return self.block(x)


class FPNDecoder(nn.Module):
    def __init__(self, encoder_channels, pyramid_channels=256, segmentation_channels=128,
                 dropout=0.2):
        super().__init__()
        ch = list(encoder_channels)[::-1]
        self.out_channels = segmentation_channels
        self.p5 = nn.Conv2d(ch[0], pyramid_channels, 1)
        self.p4 = FPNBlock(pyramid_channels, ch[1])
        self.p3 = FPNBlock(pyramid_channels, ch[2])
        self.p2 = FPNBlock(pyramid_channels, ch[3])
        self.seg_blocks = nn.ModuleList(SegmentationBlock(pyramid_channels, segmentation_channels, n)
                                        for n in (3, 2, 1, 0))
        self.dropout = nn.Dropout2d(p=dropout, inplace=True)

    def forward(self, features):
        c2, c3, c4, c5 = features[-4:]
        p5 = self.p5(c5)
        p4 = self.p4(p5, c4)
        p3 = self.p3(p4, c3)
        p2 = self.p2(p3, c2)
        pyramid = [blk(p) for blk, p in zip(self.seg_blocks, (p5, p4, p3, p2))]
        return self.dropout(torch.stack(pyramid).sum(dim=0))


# ------------------------------------------------------------ DeepLabV3+

class SeparableConv2d(nn.Sequential):
    """smp's SeparableConv2d: .0 depthwise (no bias), .1 pointwise."""

    def __init__(self, in_ch, out_ch, kernel_size, padding=0, dilation=1, bias=True):
        super().__init__(
            nn.Conv2d(in_ch, in_ch, kernel_size, padding=padding, dilation=dilation,
                      groups=in_ch, bias=False),
            nn.Conv2d(in_ch, out_ch, 1, bias=bias))


class ASPPPooling(nn.Sequential):
    def __init__(self, in_ch, out_ch):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_ch, out_ch, 1, bias=False),
                         nn.BatchNorm2d(out_ch), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_ch, out_ch, rates=(12, 24, 36), dropout=0.5):
        super().__init__()
        convs = [nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch),
                               nn.ReLU())]
        for r in rates:
            convs.append(nn.Sequential(
                SeparableConv2d(in_ch, out_ch, 3, padding=r, dilation=r, bias=False),
                nn.BatchNorm2d(out_ch), nn.ReLU()))
        convs.append(ASPPPooling(in_ch, out_ch))
        self.convs = nn.ModuleList(convs)
        self.project = nn.Sequential(nn.Conv2d(5 * out_ch, out_ch, 1, bias=False),
                                     nn.BatchNorm2d(out_ch), nn.ReLU(), nn.Dropout(dropout))

    def forward(self, x):
        return self.project(torch.cat([c(x) for c in self.convs], dim=1))


class DeepLabV3PlusDecoder(nn.Module):
    def __init__(self, encoder_channels, out_channels=256, rates=(12, 24, 36), output_stride=16,
                 dropout=0.5):
        super().__init__()
        self.out_channels = out_channels
        self.aspp = nn.Sequential(
            ASPP(encoder_channels[-1], out_channels, rates, dropout),
            SeparableConv2d(out_channels, out_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU())
        self.up = nn.Upsample(mode="bilinear", scale_factor=4 if output_stride == 16 else 2,
                              align_corners=True)
        self.block1 = nn.Sequential(nn.Conv2d(encoder_channels[2], 48, 1, bias=False),
                                    nn.BatchNorm2d(48), nn.ReLU())
        self.block2 = nn.Sequential(
            SeparableConv2d(48 + out_channels, out_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU())

    def forward(self, features):
        a = self.up(self.aspp(features[-1]))
        return self.block2(torch.cat([a, self.block1(features[2])], dim=1))


# ---------------------------------------------------------------- Linknet

def conv1x1_bn_relu(in_ch, out_ch):
    """smp's Conv2dReLU(kernel_size=1) with batch norm."""
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, bias=False), nn.BatchNorm2d(out_ch),
                         nn.ReLU(inplace=True))


class LinknetBlock(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        mid = in_ch // 4
        self.block = nn.Sequential(
            conv1x1_bn_relu(in_ch, mid),
            nn.Sequential(nn.ConvTranspose2d(mid, mid, 4, stride=2, padding=1),
                          nn.BatchNorm2d(mid), nn.ReLU(inplace=True)),
            conv1x1_bn_relu(mid, out_ch))

    def forward(self, x, skip=None):
        x = self.block(x)
        if skip is not None and skip.shape[1] != 0:
            x = x + skip
        return x


class LinknetDecoder(nn.Module):
    def __init__(self, encoder_channels, prefinal_channels=32, n_blocks=5):
        super().__init__()
        ch = list(encoder_channels[1:])[::-1] + [prefinal_channels]
        for i in range(1, len(ch) - 1):
            if ch[i] == 0:
                ch[i] = ch[i - 1]
        self.out_channels = prefinal_channels
        self.blocks = nn.ModuleList(LinknetBlock(ch[i], ch[i + 1]) for i in range(n_blocks))

    def forward(self, features):
        feats = features[1:][::-1]
        x, skips = feats[0], feats[1:]
        for i, blk in enumerate(self.blocks):
            x = blk(x, skips[i] if i < len(skips) else None)
        return x


# ------------------------------------------------------------------ model

def segmentation_head(in_ch, classes, kernel_size=1, upsampling=1):
    """smp's SegmentationHead: .0 conv (bias), .1 bilinear upsampling
    (align_corners=True) or identity, .2 activation (identity)."""
    up = (nn.Upsample(mode="bilinear", scale_factor=upsampling, align_corners=True)
          if upsampling > 1 else nn.Identity())
    return nn.Sequential(nn.Conv2d(in_ch, classes, kernel_size, padding=kernel_size // 2), up,
                         nn.Identity())


class SegmentationModel(nn.Module):
    def __init__(self, encoder_name, decoder_name, classes=1, in_channels=3,
                 drop_path_rate=None):
        super().__init__()
        d = decoder_name.lower().replace("_", "").replace("-", "")
        if d not in DECODERS:
            raise ValueError(f"decoder '{decoder_name}': give one of {', '.join(DECODERS)}")
        self.decoder_name = d
        self.encoder_name = encoder_name
        os_ = 16 if d == "deeplabv3plus" else 32
        self.encoder = get_encoder(encoder_name, in_channels, os_, drop_path_rate)
        ch = self.encoder.out_channels
        if d == "unet":  # smp's Unet: python/unet_resnet.py's decoder, a 3x3 head
            from unet_resnet import DECODER_CHANNELS, Decoder
            self.decoder = Decoder(ch)
            self.segmentation_head = segmentation_head(DECODER_CHANNELS[-1], classes, 3, 1)
        elif d == "fpn":
            self.decoder = FPNDecoder(ch)
            self.segmentation_head = segmentation_head(self.decoder.out_channels, classes, 1, 4)
        elif d == "deeplabv3plus":
            self.decoder = DeepLabV3PlusDecoder(ch, output_stride=os_)
            self.segmentation_head = segmentation_head(self.decoder.out_channels, classes, 1, 4)
        else:
            self.decoder = LinknetDecoder(ch)
            self.segmentation_head = segmentation_head(self.decoder.out_channels, classes, 1, 1)
        self.multiple = os_

    def forward(self, x):
        h, w = x.shape[-2:]
        if h % self.multiple or w % self.multiple:
            raise ValueError(f"input {tuple(x.shape)}: height and width must be multiples of "
                             f"{self.multiple} for {self.decoder_name}")
        return self.segmentation_head(self.decoder(self.encoder(x)))


def build(encoder_name, decoder_name, classes, in_channels=3, drop_path_rate=None):
    """smp.{FPN,DeepLabV3Plus,Linknet}(encoder_name, encoder_weights=None,
    classes, in_channels) with default decoder settings, as our module.
    decoder_name: fpn, deeplabv3plus or linknet. drop_path_rate (the
    EfficientNets only): None for smp's default."""
    return SegmentationModel(encoder_name, decoder_name, classes, in_channels, drop_path_rate)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    names = sub.add_parser("names", help="the state_dict's names and shapes, one JSON line each")
    names.add_argument("models", nargs="+", metavar="MODEL",
                       help="tiletrain's --model name: decoder-encoder, e.g. fpn-resnet50")
    names.add_argument("--classes", type=int, default=4)
    names.add_argument("--in-channels", type=int, default=3)
    args = ap.parse_args(argv)
    encoders = encoder_names()
    for kind in args.models:
        decoder, _, encoder = kind.partition("-")
        if decoder not in DECODERS or encoder not in encoders:
            ap.error(f"model '{kind}': give a decoder ({', '.join(DECODERS)}), a dash and an "
                     f"encoder ({', '.join(encoders)})")
        model = build(encoder, decoder, args.classes, args.in_channels)
        for k, v in model.state_dict().items():
            print(json.dumps({"model": kind, "name": k, "shape": list(v.shape)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
