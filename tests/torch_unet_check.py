#!/usr/bin/env python3
"""PyTorch side of the UNet test: loads weights, input and an upstream
gradient from a safetensors file, runs the PyTorch UNet (torch_model.py:
python/tiletrain_torch.py or $TT_TORCH_UNET) forward and backward in
float64, and writes the logits, the input-independent parameter gradients
and (batch norm) the updated running statistics.

  torch_unet_check.py IN.safetensors OUT.safetensors CONFIG_JSON
CONFIG_JSON: {"classes":..,"base_channels":..,"depth":..,"norm":..,"groups":..,"train":0|1}
"""
import json, os, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io
import torch_model


def main():
    inp, out, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    UNet = torch_model.unet_class()
    torch.set_num_threads(1)
    model = UNet(3, cfg["classes"], cfg["base_channels"], cfg["depth"], cfg["norm"], cfg["groups"])
    data = st_io.load(inp)
    own = model.state_dict()
    model.load_state_dict({k: data[k] if k in data else own[k] for k in own})
    model = model.double()
    model.train(bool(cfg["train"]))
    x = data["input"].double()
    logits = model(x)
    (logits * data["dlogits"].double()).sum().backward()
    result = {"logits": logits.float()}
    for name, p in model.named_parameters():
        result["grad." + name] = p.grad.float()
    for name, b in model.named_buffers():
        if b.dtype == torch.float64:
            result[name] = b.float()
    st_io.save(out, result)


if __name__ == "__main__":
    main()
