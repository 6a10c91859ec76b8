"""Model: a checkpoint opened for prediction on a device, predicting NumPy
images of any size with the sliding window of `tiletrain predict`."""
import ctypes
import importlib.util
import os
import sys
import weakref

import numpy as np

from ._lib import Error, call_json, check, lib

HERE = os.path.dirname(os.path.abspath(__file__))
# the PyTorch twin of the models: in the wheel beside the package (CMake
# installs python/tiletrain_torch.py there), in a checkout one folder up
TORCH_MODULE = [os.path.join(HERE, "_torch", "tiletrain_torch.py"),
                os.path.join(os.path.dirname(HERE), "tiletrain_torch.py")]


def _rgb(image):
    """image as the contiguous H x W x 3 uint8 array the library reads:
    grey (H x W or H x W x 1) repeated, RGBA's alpha dropped, floats taken
    as pixel / 255 (0 to 1)."""
    a = np.asarray(image)
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4) or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"predict: an image of shape {a.shape}; give H x W (grey) or H x W x C "
                         f"with C 1, 3 or 4 (grey, RGB, RGBA)")
    if np.issubdtype(a.dtype, np.floating):
        a = np.clip(np.rint(a * 255.0), 0, 255).astype(np.uint8)
    elif a.dtype != np.uint8:
        if a.size and (a.min() < 0 or a.max() > 255):
            raise ValueError(f"predict: {a.dtype} pixels from {a.min()} to {a.max()}; give uint8 "
                             f"values 0 to 255 or floats 0 to 1")
        a = a.astype(np.uint8)
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    return np.ascontiguousarray(a[:, :, :3])


class Model:
    """A trained checkpoint on a device.  Model.load(path) opens it;
    predict(image) gives per-class probabilities of an image of any size."""

    def __init__(self, handle, path, info):
        self._handle = handle
        # frees the device's memory when the Model goes, or at exit
        self._close = weakref.finalize(self, lib.tt_predictor_close, handle)
        self.path = path
        self.classes = info["classes"]
        self.class_names = info["names"]
        self.kind = info["kind"]          # "multi-label" (sigmoid) or "class-index" (softmax)
        self.device = info["device"]
        self.tile = tuple(info["tile"])

    @classmethod
    def load(cls, path, device=None, tile=(512, 512), batch=4):
        """Opens a tiletrain checkpoint (best.safetensors, last.safetensors)
        as `tiletrain predict` does: device None takes $TT_DEVICE, else the
        first GPU, else the first device (an index or part of a name picks
        one: see devices()); tiles of tile = (height, width), multiples of
        2**depth; batch tiles per forward pass."""
        handle = ctypes.c_void_p()
        h, w = (tile, tile) if isinstance(tile, int) else tile
        check(lib.tt_predictor_open(os.fspath(path).encode(), (device or "").encode(), int(h),
                                    int(w), int(batch), ctypes.byref(handle)))
        try:
            info = call_json(lib.tt_predictor_info, handle)
        except Error:
            lib.tt_predictor_close(handle)
            raise
        return cls(handle, os.fspath(path), info)

    def predict(self, image, overlap=0.5, output="probs"):
        """The image (H x W x 3 uint8 RGB; grey, RGBA and floats 0 to 1 are
        taken too) at full size through overlapping tiles whose logits are
        blended.  output "probs": a (classes, H, W) float32 array of
        probabilities (sigmoid per class for a multi-label model, softmax
        across classes otherwise); "mask": what `tiletrain predict` writes,
        (classes, H, W) 0/1 uint8 planes for a multi-label model (the
        checkpoint's thresholds and minimum sizes, else 0.5), an (H, W)
        uint8 class index otherwise."""
        if output not in ("probs", "mask"):
            raise ValueError(f"predict: output={output!r}; give 'probs' or 'mask'")
        if self._handle is None:
            raise Error(f"{self.path}: the model is closed; load it again with Model.load")
        rgb = _rgb(image)
        height, width = rgb.shape[:2]
        probs = np.empty((self.classes, height, width), np.float32)
        masks = None
        if output == "mask":
            shape = (self.classes, height, width) if self.kind == "multi-label" else (height, width)
            masks = np.empty(shape, np.uint8)
        check(lib.tt_predictor_run(self._handle, rgb.ctypes.data, height, width, float(overlap),
                                   probs.ctypes.data, None if masks is None else masks.ctypes.data))
        return probs if masks is None else masks

    def to_torch(self):
        """The checkpoint as a PyTorch module in eval mode (the same weights
        under the same state_dict names; python/tiletrain_torch.py).  Needs
        PyTorch."""
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ImportError("Model.to_torch needs PyTorch: pip install torch "
                              "(Debian: apt-get install python3-torch)") from None
        module = sys.modules.get("tiletrain_torch")
        if module is None:
            path = next((p for p in TORCH_MODULE if os.path.exists(p)), None)
            if path is None:
                raise Error(f"tiletrain_torch.py is in none of {TORCH_MODULE}; reinstall the "
                            f"package with `pip install ./python`")
            spec = importlib.util.spec_from_file_location("tiletrain_torch", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules["tiletrain_torch"] = module
            spec.loader.exec_module(module)
        model, _meta = module.load_checkpoint(self.path)
        return model

    def close(self):
        """Frees the device's memory now (also done when the Model goes)."""
        self._close()
        self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def __repr__(self):
        return (f"Model({self.path!r}, {self.kind}, {self.classes} classes, tile "
                f"{self.tile[0]}x{self.tile[1]}, on {self.device})")
