#!/usr/bin/env python3
"""OpenCL C that every driver builds (docs/backend.md, the GPU audit's
items 5 and 6): helpers declared TT_INLINE (common.cl: `static inline`
where the compiler is not clang, since C99 gives a plain `inline` no
external definition; clang's plain `inline`, since `static inline` ran
PoCL's kernels 28% slower), never `inline` or `static inline` by hand; and
no `opencl_unroll_hint`
attribute outside common.cl's TT_UNROLL (an OpenCL C 2.0 attribute in 1.2
programs: clang takes it, other front ends fail the whole program's
build).

  tests/check_opencl.py --root DIR      (CTest: check_opencl)
"""
import argparse
import pathlib
import re
import sys

PLAIN_INLINE = re.compile(r"^\s*(?:__attribute__\(\([^)]*\)\)\s*)*(?:static\s+)?inline\b", re.M)
UNROLL = re.compile(r"opencl_unroll_hint")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def problems_of(path, text):
    code = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found = []
    for m in PLAIN_INLINE.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        found.append(f"{path}:{line}: an `inline` helper: declare it TT_INLINE (common.cl)")
    for m in UNROLL.finditer(code):
        line = code.count("\n", 0, m.start()) + 1
        start = code.rfind("\n", 0, m.start()) + 1
        if path.name == "common.cl" and code[start:].startswith("#define TT_UNROLL"):
            continue
        found.append(f"{path}:{line}: opencl_unroll_hint outside TT_UNROLL: write TT_UNROLL")
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", required=True, help="the repository")
    root = pathlib.Path(ap.parse_args().root)
    found, count = [], 0
    for cl in sorted((root / "opencl").glob("*.cl")):
        count += 1
        found += problems_of(cl, cl.read_text())
    for f in found:
        print(f)
    print(f"check_opencl: {count} programs, {len(found)} problems")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
