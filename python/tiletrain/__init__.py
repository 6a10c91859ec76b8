"""tiletrain from Python: the library of the `tiletrain` command through
ctypes (libtiletrain_py.so, built by `pip install ./python`).

    import tiletrain
    tiletrain.devices()                      # what the library sees
    tiletrain.plan(data="clouds")            # the recipe it would choose, with reasons
    tiletrain.train(data="clouds", out="run", steps=200, micro_batch=4,
                    progress=lambda event: print(event.get("loss")))
    model = tiletrain.Model.load("run/best.safetensors")
    probs = model.predict(image)             # (classes, H, W) for an H x W x 3 image

train() takes `tiletrain train`'s options (tiletrain.options() lists them);
errors raise tiletrain.Error with the library's message.
"""
from ._lib import Error, lib
from ._train import devices, options, plan, train
from .model import Model

__version__ = lib.tt_version().decode()
__all__ = ["Error", "Model", "devices", "options", "plan", "train", "__version__"]
