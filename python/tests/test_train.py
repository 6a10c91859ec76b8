"""devices(), plan(), train(): the library's answers, its errors as
tiletrain.Error, and a run from Python the same bytes as the command's."""
import json
import os
import signal
import struct

import pytest

import tiletrain
from conftest import TINY, cli_flags


def tensors(path):
    """{name: raw bytes} of a safetensors file, and its metadata."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + size])
    meta = header.pop("__metadata__", {})
    return {k: blob[8 + size + v["data_offsets"][0]:8 + size + v["data_offsets"][1]]
            for k, v in header.items()}, meta


@pytest.fixture(scope="session")
def python_run(data, workdir):
    events = []
    outcome = tiletrain.train(data=data, out=workdir / "python_run", progress=events.append, **TINY)
    return outcome, events


def test_devices_lists_at_least_one():
    devices = tiletrain.devices()
    assert devices, "no device: install an OpenCL driver (PoCL: pocl-opencl-icd)"
    assert all(d["name"] and "global_mem_bytes" in d for d in devices)


def test_plan_is_plan_json_as_a_dict(data):
    plan = tiletrain.plan(data=data)
    assert plan["fingerprint"]["images"] == 6
    assert "tile" in plan["choices"] and plan["choices"]["tile"]["reason"]
    assert "--tile" in plan["args"]


def test_train_from_python_equals_the_command_bit_for_bit(python_run, cli, data, workdir):
    outcome, _ = python_run
    assert outcome["steps"] == TINY["steps"]
    cli("train", "--data", data, "--out", workdir / "cli_run", *cli_flags(TINY))
    ours, theirs = workdir / "python_run/last.safetensors", workdir / "cli_run/last.safetensors"
    if ours.read_bytes() != theirs.read_bytes():
        (a, meta_a), (b, meta_b) = tensors(ours), tensors(theirs)
        differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        pytest.fail(f"the checkpoints differ: tensors {differ[:8]}, metadata "
                    f"{'equal' if meta_a == meta_b else 'different'}")


def test_progress_gets_every_step_as_a_dict(python_run):
    outcome, events = python_run
    steps = [e for e in events if "loss" in e]
    assert [e["step"] for e in steps] == list(range(1, TINY["steps"] + 1))
    assert any("validation" in e for e in events) and any("device" in e for e in events)
    assert outcome["best"] and outcome["last"].endswith("last.safetensors")


def test_an_unknown_option_says_what_was_meant(data, workdir):
    with pytest.raises(tiletrain.Error, match=r"unknown option '--micro-bach'; did you mean "
                                              r"'--micro-batch'\?") as error:
        tiletrain.train(data=data, out=workdir / "never", micro_bach=2)
    assert error.value.code == "TT_ERR_INVALID_ARGUMENT"


def test_a_bad_value_gets_the_librarys_message(data, workdir):
    with pytest.raises(tiletrain.Error, match="'many' for micro-batch is not a whole number"):
        tiletrain.train(data=data, out=workdir / "never", micro_batch="many")


def test_a_missing_data_set_names_the_folder(workdir):
    missing = workdir / "no-such-data"
    with pytest.raises(tiletrain.Error, match=f"{missing}.*does not exist"):
        tiletrain.train(data=missing, out=workdir / "never", plan="off")


def test_an_error_in_progress_stops_the_run_with_a_checkpoint(data, workdir):
    out = workdir / "stopped"

    def stop_at_two(event):
        if event.get("step") == 2 and "loss" in event:
            raise RuntimeError("enough")

    with pytest.raises(RuntimeError, match="enough"):
        tiletrain.train(data=data, out=out, progress=stop_at_two, **dict(TINY, steps=50))
    _, meta = tensors(out / "last.safetensors")
    lines = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    steps = [e["step"] for e in lines if "loss" in e]
    assert max(steps) == 2, f"the run went on after the callback's error: steps {steps}"
    assert meta, "the interrupted run's checkpoint has no metadata"


def test_ctrl_c_stops_the_run_with_a_checkpoint(data, workdir):
    out = workdir / "ctrl-c"

    def ctrl_c_at_two(event):
        if event.get("step") == 2 and "loss" in event:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        tiletrain.train(data=data, out=out, progress=ctrl_c_at_two, **dict(TINY, steps=50))
    assert (out / "last.safetensors").exists()
    lines = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert max(e["step"] for e in lines if "loss" in e) == 2


def test_flags_and_a_config_file_reach_the_recipe(data, workdir):
    config = workdir / "run.ini"
    config.write_text("steps = 2\n")
    events = []
    options = dict(TINY, steps=None, no_augment=True)
    outcome = tiletrain.train(data=data, out=workdir / "configured", progress=events.append,
                              config=config, **options)
    assert outcome["steps"] == 2
    recipe = {row["option"]: row for e in events if "recipe" in e for row in e["recipe"]}
    assert recipe["no-augment"]["from"] == "flag" and recipe["tile"]["value"] == "32x32"
