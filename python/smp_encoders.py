#!/usr/bin/env python3
"""The encoders of tiletrain's FPN, DeepLabV3+ and Linknet models in plain
PyTorch, laid out and named as segmentation_models_pytorch 0.6 (smp) builds
them, so that a state_dict of `get_encoder(name)` has exactly the keys and
shapes of smp's `model.encoder.*` (without the `encoder.` prefix) and smp's
weights load into it (and back) with strict=True. No import of smp, timm or
torchvision; runs with torch 1.13 (Debian's python3-torch) and torch 2.x.

Encoder names (smp's `encoder_name`):

  resnet18, resnet34, resnet50, resnext50_32x4d
      torchvision's ResNet without avgpool/fc (smp's ResNetEncoder). Keys
      equal torchvision's `resnet50()` / `resnext50_32x4d()` state_dict
      minus `fc.*`. Bottleneck (torchvision v1.5: the stride sits on the 3x3
      conv2): conv1 1x1 -> bn1 -> relu -> conv2 3x3 (stride, groups) -> bn2
      -> relu -> conv3 1x1 (planes*4) -> bn3, + identity or downsample
      (1x1 conv with the stride, no bias, + BN), relu. ResNeXt-50 32x4d:
      conv2 has groups=32 and width = planes/64*4*32 = 2*planes (128, 256,
      512, 1024), conv3 still planes*4. BN eps 1e-5, momentum 0.1.
      Features (out_channels 3, 64, 256, 512, 1024, 2048 for the 50s):
      [input, relu(bn1(conv1 7x7 s2 p3)) (1/2), layer1 after maxpool 3x3 s2
      p1 (1/4), layer2 (1/8), layer3 (1/16), layer4 (1/32)].
      Output stride 16 (DeepLabV3+), smp's make_dilated: every Conv2d of
      layer4 gets stride 1, dilation 2, padding 2*(k//2), the first block's
      3x3 conv2 and 1x1 downsample included (torchvision's own
      replace_stride_with_dilation would keep dilation 1 in that first
      block; smp does not); layer4 then has stride 16 like layer3.

  tu-efficientnet_b0 .. tu-efficientnet_b4      <- the recommended names
      (smp 0.6 warns that the timm- names are deprecated and will be
      removed; tu- has no dead parameters; its ImageNet weights are timm's
      own efficientnet_bN ones, trained with this symmetric padding.)
      smp's TimmUniversalEncoder over timm's `efficientnet_bN(features_only
      =True)`: keys `model.conv_stem`, `model.bn1`, `model.blocks.*` (so
      `encoder.model.*` in the smp model). Those keys equal timm's
      `efficientnet_bN()` state_dict minus `conv_head.*`, `bn2.*` and
      `classifier.*` (the 1x1 head conv, its BN and the linear classifier,
      which a feature extractor does not use). Features: [input, blocks[0]
      (1/2), blocks[1] (1/4), blocks[2] (1/8), blocks[4] (1/16), blocks[6]
      (1/32)]; out_channels b0 (3, 16, 24, 40, 112, 320), b1 same, b2 (3,
      16, 24, 48, 120, 352), b3 (3, 24, 32, 48, 136, 384), b4 (3, 24, 32,
      56, 160, 448). Stochastic depth: timm's default drop_path_rate 0 (smp
      passes none), so training is deterministic in the encoder; give
      drop_path_rate= to match `smp.X("tu-efficientnet_b0",
      drop_path_rate=0.2)`. Output stride 16 (DeepLabV3+): timm builds it
      (EfficientNetBuilder): the first block of the last stride-2 stage
      (blocks[5][0]) loses its stride and keeps dilation 1, every later
      block (rest of blocks[5], blocks[6]) has dilation 2 on its depthwise
      conv, padding 2*(k//2).

  timm-efficientnet-b0 .. timm-efficientnet-b4  (deprecated in smp 0.6)
      smp's own EfficientNetEncoder (a timm EfficientNet with the classifier
      deleted): keys `conv_stem`, `bn1`, `blocks.*`, `conv_head`, `bn2` =
      timm's `efficientnet_bN()` state_dict minus `classifier.*` exactly;
      conv_head and bn2 are in the state_dict but unused by forward (they
      get no gradient). Features: [input, bn1 (stem, after SiLU) (1/2),
      blocks[1] (1/4), blocks[2] (1/8), blocks[4] (1/16), blocks[6] (1/32)];
      out_channels b0/b1 (3, 32, 24, 40, 112, 320), b2 (3, 32, 24, 48, 120,
      352), b3 (3, 40, 32, 48, 136, 384), b4 (3, 48, 32, 56, 160, 448).
      Stochastic depth fixed by smp at drop_path_rate 0.2. Output stride 16:
      smp's make_dilated sets stride 1, dilation 2, padding 2*(k//2) on every
      conv of blocks[5:] (so blocks[5][0]'s depthwise conv is dilated too,
      unlike tu-).

EfficientNet details (timm's efficientnet_bN, not the tf_ variants):
  * channel widths round_channels(c*mult, divisor 8, no drop below 90%);
    repeats ceil(r*depth_mult) per stage; stem round(32*mult).
  * padding is symmetric and static everywhere: k//2*dilation (timm's
    get_padding((s-1) + d*(k-1))//2 gives the same for odd k, s 1 or 2);
    no TF 'same' asymmetric padding (that is only tf_efficientnet_*).
  * BN: nn.BatchNorm2d defaults, eps 1e-5, momentum 0.1 (timm's
    BatchNormAct2d = BN then activation; tf_ variants would use eps 1e-3).
  * activation SiLU (x*sigmoid(x)) after bn1 of the stem, after the
    expansion BN and the depthwise BN; none after the projection BN.
  * block ds (blocks[0]): conv_dw kxk depthwise -> bn1+SiLU -> se ->
    conv_pw 1x1 -> bn2; block ir: conv_pw 1x1 (expand x6) -> bn1+SiLU ->
    conv_dw kxk depthwise (stride) -> bn2+SiLU -> se -> conv_pwl 1x1 ->
    bn3; all convs without bias. Residual (drop_path(x) + shortcut) iff
    stride 1 and in == out channels.
  * se: mean over H,W -> conv_reduce 1x1 (bias) -> SiLU -> conv_expand 1x1
    (bias) -> sigmoid -> multiply; reduced channels round(mid * 0.25 /
    exp_ratio), i.e. a quarter of the block's input channels.
  * drop_path (timm DropPath, training only): block i (global index over
    all blocks, 0-based) of n has rate drop_path_rate*i/n; per sample keep
    mask bernoulli(1-p) of shape (N,1,1,1), scaled by 1/(1-p).

Use:
    enc = get_encoder("resnet50", in_channels=3, output_stride=32)
    feats = enc(x)            # list of 6 tensors, enc.out_channels
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

BN_EPS = 1e-5       # every BN here (torchvision and timm's efficientnet_b*)
BN_MOMENTUM = 0.1

# ---------------------------------------------------------------- ResNets

RESNETS = {
    # name: (block, layers, groups, width_per_group)
    "resnet18": ("basic", (2, 2, 2, 2), 1, 64),
    "resnet34": ("basic", (3, 4, 6, 3), 1, 64),
    "resnet50": ("bottleneck", (3, 4, 6, 3), 1, 64),
    "resnext50_32x4d": ("bottleneck", (3, 4, 6, 3), 32, 4),
}


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (stride on the 3x3 conv)."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        # torchvision's order (downsample after the main path), so that
        # autograd sums the two gradients of x in the same order
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(out + identity)


def dilate_(module, rate):
    """smp's replace_strides_with_dilation: every Conv2d in `module` gets
    stride 1, dilation `rate` and padding (k//2)*rate."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            m.stride = (1, 1)
            m.dilation = (rate, rate)
            kh, kw = m.kernel_size
            m.padding = ((kh // 2) * rate, (kw // 2) * rate)


class ResNetEncoder(nn.Module):
    """torchvision's ResNet/ResNeXt without avgpool and fc, as smp's
    ResNetEncoder; forward gives [input, stem, layer1, ..., layer4]. With
    output_stride 16 layer4 is dilated (rate 2), with 8 layer3 (2) and
    layer4 (4), smp's make_dilated."""

    def __init__(self, name="resnet50", in_channels=3, output_stride=32):
        super().__init__()
        if name not in RESNETS:
            raise ValueError(f"encoder '{name}': give one of {', '.join(RESNETS)}")
        kind, layers, groups, base_width = RESNETS[name]
        block = BasicBlock if kind == "basic" else Bottleneck
        self.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = 64
        for i, (n, planes) in enumerate(zip(layers, (64, 128, 256, 512))):
            stride = 1 if i == 0 else 2
            downsample = None
            if stride != 1 or inplanes != planes * block.expansion:
                downsample = nn.Sequential(
                    nn.Conv2d(inplanes, planes * block.expansion, 1, stride, bias=False),
                    nn.BatchNorm2d(planes * block.expansion))
            blocks = [block(inplanes, planes, stride, downsample, groups, base_width)]
            inplanes = planes * block.expansion
            blocks += [block(inplanes, planes, 1, None, groups, base_width) for _ in range(1, n)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.out_channels = (in_channels, 64, 64 * block.expansion, 128 * block.expansion,
                             256 * block.expansion, 512 * block.expansion)
        self.output_stride = output_stride
        if output_stride in (8, 16):
            for stage_stride, layer in ((16, self.layer3), (32, self.layer4)):
                if stage_stride > output_stride:
                    dilate_(layer, stage_stride // output_stride)
        elif output_stride != 32:
            raise ValueError(f"output stride {output_stride}: give 8, 16 or 32")

    def forward(self, x):
        stem = self.relu(self.bn1(self.conv1(x)))
        f1 = self.layer1(self.maxpool(stem))
        f2 = self.layer2(f1)
        f3 = self.layer3(f2)
        return [x, stem, f1, f2, f3, self.layer4(f3)]


# ----------------------------------------------------------- EfficientNet

# (channel_multiplier, depth_multiplier) of timm's efficientnet_b0..b4
EFFNET_PARAMS = {"b0": (1.0, 1.0), "b1": (1.0, 1.1), "b2": (1.1, 1.2), "b3": (1.2, 1.4),
                 "b4": (1.4, 1.8)}
# timm's arch_def: (block type, repeats, kernel, stride, expansion, out channels), se 0.25
EFFNET_ARCH = [("ds", 1, 3, 1, 1.0, 16), ("ir", 2, 3, 2, 6.0, 24), ("ir", 2, 5, 2, 6.0, 40),
               ("ir", 3, 3, 2, 6.0, 80), ("ir", 3, 5, 1, 6.0, 112), ("ir", 4, 5, 2, 6.0, 192),
               ("ir", 1, 3, 1, 6.0, 320)]
SE_RATIO = 0.25


def make_divisible(v, divisor=8, min_value=None, round_limit=0.9):
    """timm.layers.make_divisible."""
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


def round_channels(channels, multiplier=1.0, divisor=8):
    """timm's round_channels."""
    if not multiplier:
        return channels
    return make_divisible(channels * multiplier, divisor)


class DropPath(nn.Module):
    """timm's DropPath (stochastic depth per sample), the same random calls."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if self.drop_prob == 0.0 or not self.training:
            return x
        keep_prob = 1 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    def extra_repr(self):
        return f"drop_prob={round(self.drop_prob, 3):0.3f}"


def swish(x):
    """timm's Swish (smp's timm-efficientnet encoders): x * sigmoid(x), the
    same function as F.silu; written out so that float64 rounding, and with
    it autograd's, is bit for bit smp's."""
    return x * x.sigmoid()


class SqueezeExcite(nn.Module):
    def __init__(self, channels, rd_channels, act=F.silu):
        super().__init__()
        self.act = act
        self.conv_reduce = nn.Conv2d(channels, rd_channels, 1, bias=True)
        self.conv_expand = nn.Conv2d(rd_channels, channels, 1, bias=True)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        s = self.conv_expand(self.act(self.conv_reduce(s)))
        return x * torch.sigmoid(s)


def dw_conv(channels, k, stride, dilation):
    return nn.Conv2d(channels, channels, k, stride, (k // 2) * dilation, dilation=dilation,
                     groups=channels, bias=False)


class DepthwiseSeparableConv(nn.Module):
    """timm's DepthwiseSeparableConv ('ds', blocks[0]): conv_dw, bn1+SiLU,
    se, conv_pw, bn2 (no activation)."""

    def __init__(self, in_ch, out_ch, k, stride, dilation, drop_path_rate, act=F.silu):
        super().__init__()
        self.act = act
        self.has_skip = stride == 1 and in_ch == out_ch
        self.conv_dw = dw_conv(in_ch, k, stride, dilation)
        self.bn1 = nn.BatchNorm2d(in_ch, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.se = SqueezeExcite(in_ch, round(in_ch * (SE_RATIO / 1.0)), act)
        self.conv_pw = nn.Conv2d(in_ch, out_ch, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.act(self.bn1(self.conv_dw(x)))
        x = self.bn2(self.conv_pw(self.se(x)))
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class InvertedResidual(nn.Module):
    """timm's InvertedResidual ('ir'): conv_pw, bn1+SiLU, conv_dw, bn2+SiLU,
    se, conv_pwl, bn3 (no activation)."""

    def __init__(self, in_ch, out_ch, k, stride, dilation, exp_ratio, drop_path_rate, act=F.silu):
        super().__init__()
        self.act = act
        mid = make_divisible(in_ch * exp_ratio)
        self.has_skip = stride == 1 and in_ch == out_ch
        self.conv_pw = nn.Conv2d(in_ch, mid, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.conv_dw = dw_conv(mid, k, stride, dilation)
        self.bn2 = nn.BatchNorm2d(mid, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.se = SqueezeExcite(mid, round(mid * (SE_RATIO / exp_ratio)), act)
        self.conv_pwl = nn.Conv2d(mid, out_ch, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_ch, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.drop_path = DropPath(drop_path_rate) if drop_path_rate else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.act(self.bn1(self.conv_pw(x)))
        x = self.act(self.bn2(self.conv_dw(x)))
        x = self.bn3(self.conv_pwl(self.se(x)))
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


def effnet_plan(variant):
    """Per stage, per block: (type, in, out, kernel, stride, exp); the stem
    width and the head width, as timm's builder computes them."""
    cm, dm = EFFNET_PARAMS[variant]
    stem = round_channels(32, cm)
    stages, in_ch = [], stem
    for kind, r, k, s, e, c in EFFNET_ARCH:
        out = round_channels(c, cm)
        n = int(math.ceil(r * dm))
        stage = []
        for b in range(n):
            stage.append((kind, in_ch, out, k, s if b == 0 else 1, e))
            in_ch = out
        stages.append(stage)
    return stem, stages, round_channels(1280, cm)


class EfficientNet(nn.Module):
    """The trunk of timm's efficientnet_bN: conv_stem, bn1, blocks (and with
    head=True the unused conv_head, bn2 of smp's timm-efficientnet encoder).

    dilation: "timm" (timm's builder for output_stride < 32, used by the
    tu- encoders) or "smp" (smp's make_dilated, the timm- encoders)."""

    def __init__(self, variant="b0", in_channels=3, output_stride=32, drop_path_rate=0.0,
                 head=False, dilation="timm", act=F.silu):
        super().__init__()
        self.act = act
        if variant not in EFFNET_PARAMS:
            raise ValueError(f"efficientnet variant '{variant}': give one of "
                             f"{', '.join(EFFNET_PARAMS)}")
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output stride {output_stride}: give 8, 16 or 32")
        stem, stages, num_features = effnet_plan(variant)
        self.conv_stem = nn.Conv2d(in_channels, stem, 3, 2, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem, eps=BN_EPS, momentum=BN_MOMENTUM)
        total = sum(len(s) for s in stages)
        idx, cur_stride, cur_dil, seqs = 0, 2, 1, []
        for si, stage in enumerate(stages):
            blocks = []
            for kind, i, o, k, s, e in stage:
                dil = 1
                if dilation == "timm":
                    next_dil = cur_dil
                    if s > 1:
                        if cur_stride * s > output_stride:
                            next_dil, s = cur_dil * s, 1
                        else:
                            cur_stride *= s
                    dil, cur_dil = cur_dil, next_dil
                dpr = drop_path_rate * idx / total
                if kind == "ds":
                    blocks.append(DepthwiseSeparableConv(i, o, k, s, dil, dpr, act))
                else:
                    blocks.append(InvertedResidual(i, o, k, s, dil, e, dpr, act))
                idx += 1
            seqs.append(nn.Sequential(*blocks))
        self.blocks = nn.Sequential(*seqs)
        if head:
            last = stages[-1][-1][2]
            self.conv_head = nn.Conv2d(last, num_features, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(num_features, eps=BN_EPS, momentum=BN_MOMENTUM)
        if dilation == "smp" and output_stride != 32:
            # smp's get_stages: {16: blocks[3:5], 32: blocks[5:]}
            for stage_stride, mods in ((16, self.blocks[3:5]), (32, self.blocks[5:])):
                if stage_stride > output_stride:
                    dilate_(mods, stage_stride // output_stride)
        self.stage_channels = [s[-1][2] for s in stages]
        self.stem_channels = stem


class TuEfficientNetEncoder(nn.Module):
    """smp's `tu-efficientnet_bN`: TimmUniversalEncoder over timm's
    efficientnet_bN(features_only=True); the trunk sits under `model.`."""

    def __init__(self, variant="b0", in_channels=3, output_stride=32, drop_path_rate=0.0):
        super().__init__()
        self.model = EfficientNet(variant, in_channels, output_stride, drop_path_rate,
                                  head=False, dilation="timm")
        ch = self.model.stage_channels
        self.out_channels = (in_channels, ch[0], ch[1], ch[2], ch[4], ch[6])
        self.output_stride = output_stride

    def forward(self, x):
        m = self.model
        feats = [x]
        x = m.act(m.bn1(m.conv_stem(x)))
        for i, stage in enumerate(m.blocks):
            x = stage(x)
            if i in (0, 1, 2, 4, 6):
                feats.append(x)
        return feats


class TimmEfficientNetEncoder(EfficientNet):
    """smp's `timm-efficientnet-bN` (EfficientNetEncoder): the timm trunk
    with conv_head/bn2 kept (unused) and drop_path_rate 0.2."""

    def __init__(self, variant="b0", in_channels=3, output_stride=32, drop_path_rate=0.2):
        super().__init__(variant, in_channels, output_stride, drop_path_rate, head=True,
                         dilation="smp", act=swish)
        ch = self.stage_channels
        self.out_channels = (in_channels, self.stem_channels, ch[1], ch[2], ch[4], ch[6])
        self.output_stride = output_stride

    def forward(self, x):
        feats = [x]
        x = self.act(self.bn1(self.conv_stem(x)))
        feats.append(x)
        x = self.blocks[1](self.blocks[0](x))
        feats.append(x)
        x = self.blocks[2](x)
        feats.append(x)
        x = self.blocks[4](self.blocks[3](x))
        feats.append(x)
        x = self.blocks[6](self.blocks[5](x))
        feats.append(x)
        return feats


# ------------------------------------------------------------------ names

def smp_encoder_name(name):
    """smp's encoder_name for tiletrain's: "efficientnet-b2" is
    "tu-efficientnet_b2" (the recommended EfficientNet); others as given."""
    if name.startswith("efficientnet-"):
        return "tu-efficientnet_" + name[len("efficientnet-"):]
    return name


def encoder_names():
    names = list(RESNETS)
    names += [f"tu-efficientnet_{v}" for v in EFFNET_PARAMS]
    names += [f"timm-efficientnet-{v}" for v in EFFNET_PARAMS]
    names += [f"efficientnet-{v}" for v in EFFNET_PARAMS]  # tiletrain's names of tu-
    return names


def get_encoder(name, in_channels=3, output_stride=32, drop_path_rate=None):
    """The encoder smp's get_encoder(name, in_channels, depth=5,
    output_stride=...) builds, with the same state_dict. drop_path_rate:
    None for smp's default (0 for tu-, 0.2 for timm-)."""
    name = smp_encoder_name(name)
    if name in RESNETS:
        return ResNetEncoder(name, in_channels, output_stride)
    if name.startswith("tu-efficientnet_") and name[len("tu-efficientnet_"):] in EFFNET_PARAMS:
        return TuEfficientNetEncoder(name[len("tu-efficientnet_"):], in_channels, output_stride,
                                     0.0 if drop_path_rate is None else drop_path_rate)
    if name.startswith("timm-efficientnet-") and name[len("timm-efficientnet-"):] in EFFNET_PARAMS:
        return TimmEfficientNetEncoder(name[len("timm-efficientnet-"):], in_channels,
                                       output_stride,
                                       0.2 if drop_path_rate is None else drop_path_rate)
    raise ValueError(f"encoder '{name}': give one of {', '.join(encoder_names())}")


if __name__ == "__main__":
    import json
    import sys
    name = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
    enc = get_encoder(name)
    for k, v in enc.state_dict().items():
        print(json.dumps({"name": k, "shape": list(v.shape)}))
