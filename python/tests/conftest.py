"""What the package's tests share: the `tiletrain` command they compare
against ($TILETRAIN_CLI, else the checkout's build/tiletrain), a tiny
synthetic data set, and a cache folder of their own (TT_CACHE_DIR)."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# the tiny model and run every training test uses (a few seconds on PoCL)
TINY = dict(tile=(32, 32), base_channels=4, depth=2, groups=2, plan="off", seed=7, steps=3,
            micro_batch=2, val_fraction=0.34)


def cli_flags(options):
    """The command line's spelling of TINY-style keyword options."""
    args = []
    for key, value in options.items():
        text = "x".join(map(str, value)) if isinstance(value, tuple) else str(value)
        args += ["--" + key.replace("_", "-"), text]
    return args


@pytest.fixture(scope="session")
def workdir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiletrain")
    os.environ["TT_CACHE_DIR"] = str(path / "cache")  # the library reads it at each run
    return path


@pytest.fixture(scope="session")
def cli(workdir):
    path = os.environ.get("TILETRAIN_CLI") or os.path.join(ROOT, "build", "tiletrain")
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: build the command first (tools/build.sh) or set "
                    f"TILETRAIN_CLI to a tiletrain binary")

    def run(*args):
        done = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 0, f"tiletrain {' '.join(map(str, args))}:\n{done.stderr}"
        return done.stdout

    return run


@pytest.fixture(scope="session")
def data(cli, workdir):
    path = workdir / "data"
    cli("data", "synth", "--out", path, "--format", "kaggle-rle", "--count", 6, "--size", "64x96",
        "--classes", 2)
    return path
