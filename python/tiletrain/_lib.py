"""The C library (libtiletrain_py.so, built by `pip install ./python`)
through ctypes: the functions of include/tiletrain.h's "front ends" part,
their errors raised as tiletrain.Error with the library's message."""
import ctypes
import json
import os

LIBRARY_NAME = "libtiletrain_py.so"


class Error(Exception):
    """An error of the tiletrain library: str() is its one-line message
    (what went wrong and what to do); .code its kind ("TT_ERR_IO", ...);
    .detail the long detail (a kernel's build log), "" when none."""

    def __init__(self, message, code="", detail=""):
        super().__init__(message)
        self.code = code
        self.detail = detail


def _find():
    path = os.environ.get("TILETRAIN_LIBRARY") or os.path.join(os.path.dirname(__file__), LIBRARY_NAME)
    if not os.path.exists(path):
        raise ImportError(
            f"tiletrain: {path} is missing; install the package with `pip install ./python` "
            f"(it builds the library), or set TILETRAIN_LIBRARY to a build's {LIBRARY_NAME}")
    return path


lib = ctypes.CDLL(_find())

LOG_LINE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)
_status = ctypes.c_void_p
_out_text = ctypes.POINTER(ctypes.c_void_p)
_argv = ctypes.POINTER(ctypes.c_char_p)


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_declare("tt_version", ctypes.c_char_p)
_declare("tt_string_free", None, ctypes.c_void_p)
_declare("tt_status_code", ctypes.c_int, _status)
_declare("tt_code_name", ctypes.c_char_p, ctypes.c_int)
_declare("tt_status_message", ctypes.c_char_p, _status)
_declare("tt_status_detail", ctypes.c_char_p, _status)
_declare("tt_status_free", None, _status)
_declare("tt_devices_json", _status, _out_text)
_declare("tt_train_options_json", _status, _out_text)
_declare("tt_plan_args", _status, ctypes.c_int, _argv, _out_text)
_declare("tt_train_args", _status, ctypes.c_int, _argv, LOG_LINE, ctypes.c_void_p,
         ctypes.POINTER(ctypes.c_int), _out_text)
_declare("tt_predictor_open", _status, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
         ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))
_declare("tt_predictor_info", _status, ctypes.c_void_p, _out_text)
_declare("tt_predictor_run", _status, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
         ctypes.c_int, ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p)
_declare("tt_predictor_close", None, ctypes.c_void_p)


def check(status):
    """Raises the library's error for a non-NULL status (and frees it)."""
    if not status:
        return
    message = lib.tt_status_message(status).decode(errors="replace")
    detail = lib.tt_status_detail(status).decode(errors="replace")
    code = lib.tt_code_name(lib.tt_status_code(status)).decode()
    lib.tt_status_free(status)
    raise Error(message, code, detail)


def call_json(fn, *args):
    """fn(*args, &text) checked, and the JSON text it returns parsed."""
    text = ctypes.c_void_p()
    check(fn(*args, ctypes.byref(text)))
    try:
        return json.loads(ctypes.string_at(text.value).decode()) if text.value else None
    finally:
        lib.tt_string_free(text)


def argv(args):
    """A char ** of the strings (kept alive by the returned array)."""
    return (ctypes.c_char_p * (len(args) + 1))(*[a.encode() for a in args], None)
