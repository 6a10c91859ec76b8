#!/usr/bin/env python3
"""Every OpenCL kernel has its Vulkan shader: opencl/<program>.cl's kernel K
is shaders/<program>/<K>.comp, except the programs that are OpenCL's alone
(docs/backend.md): conv_winograd4 (an
algorithm of its own, winograd4x4, that the dispatch offers only where the
program is), conv_direct_w16 (the 3x3 and 7x7 kernels of 16 columns a
work-item for OpenCL CPUs, direct_w16, also a row of its own) and
convt_tiles_w16 (a 16-lane float16 variant of convt_tiles' forward,
chosen only where an OpenCL device prefers 16-lane float vectors; Vulkan
states no such preference and runs convt_tiles' shaders, which compute the
same sums); and the kernels of a width that only OpenCL builds: conv_direct.cl
at TT_DIRECT_VW 8 (the program conv_direct_w8 of the direct_w8 row: Vulkan's
CPU device ran float8 work-items 3 times slower than the scalar shaders, and
GPUs take the scalar or tiled ones, so no Vulkan device would choose them),
whose weight gradient is a kernel of its own; and convt_tiles.cl's 8-wide
kernels (the program convt_tiles_w8 of direct_w8's tiling shapes: lavapipe
picked im2col_gemm over them and the scalar tiles at every UNet
up-convolution, so no Vulkan device would choose them); and
conv_depthwise_w8 (the depthwise_w8 row: rows of 8-column vectors for
OpenCL CPUs, where conv_depthwise's one output a work-item runs as gathers;
GPUs and lavapipe take conv_depthwise's shaders).
A program counts as
present on a backend when any of its kernels is there, so a missing one
would only show when an op launches it.

  tests/check_shaders.py --root DIR      (CTest: check_shaders)
"""
import argparse
import pathlib
import re
import sys

OPENCL_ONLY = {"conv_winograd4", "conv_direct_w16", "convt_tiles_w16", "conv_depthwise_w8"}
OPENCL_ONLY_KERNELS = {"conv_direct/conv_direct_backward_weight_w8",
                       "convt_tiles/convt_tiles_forward_w8",
                       "convt_tiles/convt_tiles_backward_data_w8",
                       "convt_tiles/convt_tiles_backward_weight_w8"}
KERNEL = re.compile(r"__kernel\b(?:[^;{]*?)\bvoid\s+(\w+)\s*\(", re.S)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="the repository")
    root = pathlib.Path(ap.parse_args().root)
    missing, count = [], 0
    for cl in sorted((root / "opencl").glob("*.cl")):
        program = cl.stem
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", cl.read_text(), flags=re.S)
        if program in OPENCL_ONLY:
            continue
        for kernel in KERNEL.findall(text):
            if f"{program}/{kernel}" in OPENCL_ONLY_KERNELS:
                continue
            count += 1
            if not (root / "shaders" / program / f"{kernel}.comp").is_file():
                missing.append(f"{program}/{kernel}")
    for m in missing:
        print(f"check_shaders: opencl/{m.split('/')[0]}.cl has kernel '{m.split('/')[1]}' but "
              f"shaders/{m}.comp does not exist: port it (docs/backend.md, Vulkan)")
    if count == 0:
        print("check_shaders: no kernels found under opencl/: wrong --root?")
        return 1
    print(f"check_shaders: {count - len(missing)} of {count} kernels have their shader")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
