"""The PyTorch UNet the tests compare tiletrain with: the repository's
python/tiletrain_torch.py, or the file named by $TT_TORCH_UNET (another
definition with the same UNet(in_channels, classes, base_channels, depth,
norm, groups) constructor, e.g. an outside peer)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "python", "tiletrain_torch.py")


def model_path():
    return os.environ.get("TT_TORCH_UNET") or DEFAULT


def unet_class():
    path = model_path()
    spec = importlib.util.spec_from_file_location("tt_torch_unet", path)
    if spec is None:
        raise ImportError(f"{path}: not a Python file (TT_TORCH_UNET?)")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.UNet
