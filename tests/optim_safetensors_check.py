#!/usr/bin/python3
"""Cross-checks tiletrain's safetensors files from Python.

  optim_safetensors_check.py read FILE OUT.json
      Loads FILE with the `safetensors` package when it is installed, else
      parses it by hand (struct + json + numpy) with the format's rules, and
      writes {"loader": ..., "metadata": {...}, "tensors": {name: {"dtype",
      "shape", "values": [...]}}} to OUT.json.
  optim_safetensors_check.py write FILE
      Writes a file by hand as the reference writer lays it out (tensors
      sorted by name, header padded with spaces): "b.weight" F32 [2, 3] =
      0, 0.5, ..., 2.5; "a.step" I64 [] = 1234567890123; "z.bias" F32 [1] =
      -1.25; metadata {"format": "pt", "note": "from python"}.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1", "F16": "<f2"}


def load_by_hand(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, "header length %d is not a multiple of 8" % n
    assert 8 + n <= len(data), "header runs past the file"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    body = data[8 + n:]
    spans = sorted((v["data_offsets"], k) for k, v in header.items())
    at = 0
    for (begin, end), name in spans:
        assert begin == at, "tensor %s is not contiguous" % name
        at = end
    assert at == len(body), "data size %d, tensors cover %d" % (len(body), at)
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(DTYPES[info["dtype"]])
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"])
        assert array.nbytes == end - begin
        tensors[name] = (info["dtype"], array)
    return "by hand (struct + json)", metadata, tensors


def load_with_package(path):
    from safetensors import safe_open
    tensors = {}
    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata() or {}
        for name in f.keys():
            array = f.get_tensor(name)
            kind = {np.dtype("float32"): "F32", np.dtype("int64"): "I64"}.get(array.dtype, "?")
            tensors[name] = (kind, array)
    return "safetensors package", metadata, tensors


def read(path, out):
    try:
        import safetensors  # noqa: F401
        loader, metadata, tensors = load_with_package(path)
    except ImportError:
        loader, metadata, tensors = load_by_hand(path)
    result = {"loader": loader, "metadata": metadata, "tensors": {}}
    for name, (kind, array) in tensors.items():
        result["tensors"][name] = {"dtype": kind, "shape": list(array.shape),
                                   "values": [v.item() for v in array.reshape(-1)]}
    with open(out, "w") as f:
        json.dump(result, f)
    print("read %s with %s: %d tensors" % (path, loader, len(tensors)))


def write(path):
    tensors = {
        "b.weight": ("F32", [2, 3], np.arange(6, dtype="<f4") * 0.5),
        "a.step": ("I64", [], np.array([1234567890123], dtype="<i8")),
        "z.bias": ("F32", [1], np.array([-1.25], dtype="<f4")),
    }
    header = {"__metadata__": {"format": "pt", "note": "from python"}}
    body = b""
    for name in sorted(tensors):
        kind, shape, array = tensors[name]
        raw = array.tobytes()
        header[name] = {"dtype": kind, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


if __name__ == "__main__":
    if sys.argv[1] == "read":
        read(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        raise SystemExit("usage: read FILE OUT.json | write FILE")
