"""tests/twin_dgemm.c checked (CTest: test_twin_dgemm).

usage: twin_dgemm_check.py LIBRARY [TT_PYTHON]

A float64 and a float32 convolution (forward and both gradients, shapes
with odd sizes and a batch of 3) run in fresh processes, one plain and
one with LIBRARY loaded before torch; and, given tests/tt_python.c's
client, run by it with TT_TWIN_DGEMM=LIBRARY, through its fork server and
with TT_PYSERVE_OFF=1 (python3 run directly).  Against the plain run:
  - float32: the same bits (its yardstick role needs the reference BLAS);
  - float64: within 1e-12 of the plain run, relative to the largest value;
  - with libopenblas64.so.0 installed, the float64 run went through it.
Exit 0 when all hold, 1 otherwise (77 when python3 has no torch)."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile


def run(library, out):
    if library:
        ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
    import numpy as np
    import torch

    torch.manual_seed(5)
    x = torch.randn(3, 17, 23, 29, dtype=torch.float64)
    w = torch.randn(31, 17, 3, 3, dtype=torch.float64)
    for dtype, name in ((torch.float64, "f64"), (torch.float32, "f32")):
        xi = x.detach().to(dtype).clone().requires_grad_()
        wi = w.detach().to(dtype).clone().requires_grad_()
        y = torch.nn.functional.conv2d(xi, wi, padding=1, stride=1)
        (y * torch.linspace(-1, 1, y.numel(), dtype=dtype).reshape(y.shape)).sum().backward()
        for part, t in (("y", y), ("dx", xi.grad), ("dw", wi.grad)):
            np.save(os.path.join(out, f"{name}.{part}.npy"), t.detach().numpy())
    with open("/proc/self/maps") as maps:
        openblas = "libopenblas64" in maps.read()
    with open(os.path.join(out, "info.json"), "w") as f:
        json.dump({"openblas": openblas}, f)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--run":
        run(sys.argv[2], sys.argv[3])
        return 0
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    library = os.path.abspath(sys.argv[1])
    client = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else None
    try:
        import numpy as np
        import torch  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    plain_env = {k: v for k, v in os.environ.items() if k not in ("TT_TWIN_DGEMM", "LD_PRELOAD")}
    runs = [("loaded in the script", [sys.executable, __file__, "--run", library], plain_env)]
    if client:
        env = dict(plain_env, TT_TWIN_DGEMM=library)
        runs.append(("tt_python, its server", [client, __file__, "--run", ""], env))
        runs.append(("tt_python, python3 directly", [client, __file__, "--run", ""],
                     dict(env, TT_PYSERVE_OFF="1")))
    installed = any(os.path.exists(os.path.join(d, "libopenblas64.so.0"))
                    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"))
    print(f"libopenblas64.so.0 installed: {installed}")
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        plain = os.path.join(work, "plain")
        os.mkdir(plain)
        subprocess.run([sys.executable, __file__, "--run", "", plain], check=True, env=plain_env)
        for i, (name, command, env) in enumerate(runs):
            out = os.path.join(work, str(i))
            os.mkdir(out)
            subprocess.run(command + [out], check=True, env=env)
            for part in ("y", "dx", "dw"):
                a32 = np.load(os.path.join(plain, f"f32.{part}.npy"))
                b32 = np.load(os.path.join(out, f"f32.{part}.npy"))
                if a32.tobytes() != b32.tobytes():
                    print(f"FAIL: {name}: float32 {part} changed")
                    failures += 1
                a64 = np.load(os.path.join(plain, f"f64.{part}.npy"))
                b64 = np.load(os.path.join(out, f"f64.{part}.npy"))
                err = float(np.abs(a64 - b64).max() / np.abs(a64).max())
                if not err <= 1e-12:
                    print(f"FAIL: {name}: float64 {part} off by {err:.2e}")
                    failures += 1
            with open(os.path.join(out, "info.json")) as f:
                openblas = json.load(f)["openblas"]
            print(f"{name}: float32 the same bits, float64 within 1e-12; OpenBLAS loaded: {openblas}")
            if installed and not openblas:
                print(f"FAIL: {name}: libopenblas64.so.0 is installed but the float64 GEMM did not reach it")
                failures += 1
    print("ok" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
