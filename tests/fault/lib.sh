# What tests/fault/check.sh and mpi.sh share; sourced, with BUILD_DIR as $1.
set -uo pipefail
tt=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)/tiletrain
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# spread TOTAL POINTS: the calls a walk takes: every one of TOTAL when
# POINTS is 0 or at least TOTAL, the middle one when POINTS is 1, else
# POINTS spread over them, the first and the last included
spread() {
  $py -c "import sys; t, k = int(sys.argv[1]), int(sys.argv[2])
print(*[(t + 1) // 2] if k == 1 < t else
      sorted({1 + i * (t - 1) // max(k - 1, 1) for i in range(k)}) if 0 < k < t else range(1, t + 1))" "$1" "$2"
}

# checkpoint_step FILE: the step a checkpoint holds (its metadata's)
checkpoint_step() {
  $py -c 'import json, struct, sys
d = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", d[:8])[0]
print(json.loads(d[8:8 + n])["__metadata__"]["step"])' "$1"
}

# whole DIR...: no temporary file, and whole_files
whole() { no_temporaries "$@" && whole_files "$@"; }
no_temporaries() { # the atomic writer's NAME.tmp.*, the raster writer's PATH.part and PATH.partN
  [ -z "$(find "$@" \( -name '*.tmp.*' -o -name '*.part' -o -name '*.part[0-9]*' \) 2>/dev/null)" ] ||
    { echo "temporary files left:"; find "$@" \( -name '*.tmp.*' -o -name '*.part' -o -name '*.part[0-9]*' \); return 1; }
}
# whole_files DIR...: every .safetensors, .json, .jsonl, .png, .csv and .tif whole
whole_files() {
  $py - "$@" <<'PY'
import csv, glob, json, os, struct, sys
from PIL import Image
for d in sys.argv[1:]:
    for p in glob.glob(os.path.join(d, "**", "*"), recursive=True):
        if p.endswith(".safetensors"):
            with open(p, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
                end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
            assert os.path.getsize(p) == 8 + n + end, p
        elif p.endswith(".json"):
            json.load(open(p))
        elif p.endswith(".jsonl"):
            [json.loads(l) for l in open(p)]
        elif p.endswith(".png"):
            Image.open(p).load()
        elif p.endswith(".tif"):  # every directory's tiles within the file (BigTIFF too)
            data = open(p, "rb").read()
            e = {b"II": "<", b"MM": ">"}[data[:2]]
            big = struct.unpack(e + "H", data[2:4])[0] == 43
            word, count, entry, at = ("Q", "Q", 20, 8) if big else ("I", "H", 12, 4)
            ifd = struct.unpack(e + word, data[at:at + struct.calcsize(word)])[0]
            sizes = {3: 2, 4: 4, 16: 8}
            directories = 0
            while ifd:
                n = struct.unpack(e + count, data[ifd:ifd + struct.calcsize(count)])[0]
                base = ifd + struct.calcsize(count)
                tags = {}
                for k in range(n):
                    tag, kind = struct.unpack(e + "HH", data[base + k * entry:base + k * entry + 4])
                    num = struct.unpack(e + word, data[base + k * entry + 4:base + k * entry + 4 + struct.calcsize(word)])[0]
                    field = base + k * entry + 4 + struct.calcsize(word)
                    if kind in sizes and tag in (324, 325):  # TileOffsets, TileByteCounts
                        size = sizes[kind]
                        where = field if num * size <= struct.calcsize(word) else struct.unpack(e + word, data[field:field + struct.calcsize(word)])[0]
                        fmt = {2: "H", 4: "I", 8: "Q"}[size]
                        tags[tag] = struct.unpack(e + fmt * num, data[where:where + num * size])
                offsets, counts = tags[324], tags[325]
                assert all(o + c <= len(data) and c > 0 for o, c in zip(offsets, counts)), p
                directories += 1
                ifd = struct.unpack(e + word, data[base + n * entry:base + n * entry + struct.calcsize(word)])[0]
            assert directories >= 1, p
        elif p.endswith(".csv"):
            rows = list(csv.reader(open(p)))
            assert rows[0] == ["Image_Label", "EncodedPixels"] and all(len(r) == 2 for r in rows), p
PY
}

