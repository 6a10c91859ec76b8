"""devices(), options(), plan() and train(): keyword arguments become
`tiletrain train`'s flags (micro_batch=4 -> --micro-batch 4), parsed by the
library with the command line's own option table, so the two take the same
options with the same checks and messages."""
import ctypes
import json
import os
import signal
import threading

from ._lib import LOG_LINE, argv, call_json, lib

_table = None


def devices():
    """Every device the library sees (OpenCL, CPUs included), as dicts:
    index, name, type, vendor, platform, global_mem_bytes, ..."""
    return call_json(lib.tt_devices_json)


def options():
    """train's options as the command line has them: dicts of name
    ("micro-batch"; micro_batch= in Python), flag (True: takes True/False),
    metavar, help and default."""
    global _table
    if _table is None:
        _table = call_json(lib.tt_train_options_json)
    return [dict(row) for row in _table]


def _text(name, value):
    """A keyword's value as the flag's text."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        metavar = next((o["metavar"] for o in options() if o["name"] == name), "")
        return ("x" if metavar == "HxW" else ",").join(str(v) for v in value)
    return str(value)


def flags(**options):
    """["--micro-batch", "4", "--no-augment", ...]: the command line of the
    keyword arguments given (None: left out, the option keeps its default;
    True: the flag alone; False: --flag=false)."""
    args = []
    for key, value in options.items():
        if value is None:
            continue
        name = key.replace("_", "-")
        if value is True:
            args.append(f"--{name}")
        elif value is False:
            args.append(f"--{name}=false")
        else:
            args += [f"--{name}", _text(name, value)]
    return args


def plan(data, **options):
    """The recipe `tiletrain plan` chooses for the data set and the device,
    as plan.json's dict: {"fingerprint", "choices": {option: {"value",
    "reason"}}, "args"}.  options: train's that the plan reads (format,
    csv, images, device, backend, model, mem_limit, ...)."""
    args = flags(data=data, **options)
    return call_json(lib.tt_plan_args, len(args), argv(args))


def train(data, out, progress=None, **options):
    """Trains as `tiletrain train --data DATA --out OUT ...` does, with the
    same options (see options(); micro_batch=4 for --micro-batch 4, True or
    False for a flag) and the same files in OUT: train.jsonl,
    last.safetensors, best.safetensors with validation, plan.json with
    plan="auto" (the default), report.html.

    progress: called with each line of train.jsonl as a dict as it is
    written ({"step": 3, "loss": ...} after each optimizer step, {"step": 3,
    "validation": {...}}, the start's {"device": ...}, {"recipe": [...]}).
    An exception in it stops training, as Ctrl-C does: the current window
    is dropped, OUT/last.safetensors holds the steps before it, and the
    exception is raised here.

    Returns {"steps", "skipped_steps", "stopped_early", "best_step",
    "best_dice", "out", "last", "best"} ("best": None without validation).
    Errors raise tiletrain.Error with the library's message."""
    args = flags(data=data, out=out, **options)
    stop = ctypes.c_int(0)
    caught = []

    def on_line(_ctx, line):
        try:
            if progress is not None:
                progress(json.loads(line))
        except BaseException as e:  # noqa: B036 (whatever it raises stops the run)
            caught.append(e)
            stop.value = 1

    def on_sigint(_signum, _frame):  # Ctrl-C: the window ends, the checkpoint is written
        caught.append(KeyboardInterrupt())
        stop.value = 1

    callback = LOG_LINE(on_line)
    own_sigint = (threading.current_thread() is threading.main_thread()
                  and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if own_sigint:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        outcome = call_json(lib.tt_train_args, len(args), argv(args), callback, None,
                            ctypes.byref(stop))
    except BaseException as error:
        if caught:
            raise caught[0] from error
        raise
    finally:
        if own_sigint:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if caught:
        raise caught[0]
    run = os.fspath(out)
    best = os.path.join(run, "best.safetensors")
    outcome["last"] = os.path.join(run, "last.safetensors")
    outcome["best"] = best if os.path.exists(best) else None
    return outcome
