#!/usr/bin/python3
"""A fork server for the tests' PyTorch twins: imports torch, torchvision
and numpy once, then runs each request of tests/tt_python.c in a fork, as
`/usr/bin/python3 ARGS` would run it (an import of torch costs about 1.3 s
of CPU; the suites run about a hundred twins).

    pyserve.py SOCKET [READY_FD]

Listens on the UNIX socket SOCKET (taking SOCKET.lock while it serves) and
writes "ok" to READY_FD once clients can connect.  A request is the
client's fds 0, 1 and 2 (SCM_RIGHTS) and "TTPY" + a length + NUL-separated
strings: the argument count, the arguments (`script args...`, `-c CODE
args...` or `- args...`), the working folder, then the environment.  The
server answers "R" (refused: the client runs python3 itself) when the
request's PYTHON* variables (which Python reads only at start) or its
TT_TWIN_DGEMM (loaded before torch) differ from its own; else "S" once the
child runs, and "X" + its wait status (4 bytes,
big-endian) when it ends.  A byte from the client is a signal for the
child; the client gone, the child's process group is killed.  The server
exits after TT_PYSERVE_IDLE seconds (60) without a request.
"""
import errno
import fcntl
import os
import selectors
import signal
import socket
import struct
import sys
import time

# The twins' float64 GEMM on OpenBLAS (tests/twin_dgemm.c): its dgemm_
# loaded before torch binds the reference BLAS's, for every child.
if os.environ.get("TT_TWIN_DGEMM"):
    import ctypes

    ctypes.CDLL(os.environ["TT_TWIN_DGEMM"], mode=ctypes.RTLD_GLOBAL)

import numpy
import torch
import torchvision  # noqa: F401 (imported once for the children)

IDLE = float(os.environ.get("TT_PYSERVE_IDLE", "60"))
# torch reads these when libgomp loads: the child applies them itself
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# python3 -u or PYTHONUNBUFFERED (the same for the server and its children)
UNBUFFERED = sys.stdout.write_through


def log(*words):
    print(time.strftime("%H:%M:%S"), os.getpid(), *words, file=sys.stderr, flush=True)


def python_vars(env):
    """What a child cannot take from its request: PYTHON* (read at start)
    and TT_TWIN_DGEMM (loaded before torch)."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") or k == "TT_TWIN_DGEMM"}


def read_request(conn):
    """(fds, argv, cwd, env) or None where the client sent no whole request."""
    conn.settimeout(10)
    try:
        head, fds, _, _ = socket.recv_fds(conn, 8, 3)
        while 0 < len(head) < 8:
            more = conn.recv(8 - len(head))
            if not more:
                break
            head += more
        if len(head) < 8 or head[:4] != b"TTPY" or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            return None
        size = struct.unpack("!I", head[4:])[0]
        body = bytearray()
        while len(body) < size:
            more = conn.recv(min(size - len(body), 1 << 16))
            if not more:
                break
            body += more
    except OSError:
        return None
    finally:
        conn.settimeout(None)
    if len(body) < size:
        for fd in fds:
            os.close(fd)
        return None
    words = [os.fsdecode(w) for w in bytes(body).split(b"\0")[:-1]]
    argc = int(words[0])
    argv, cwd = words[1:1 + argc], words[1 + argc]
    env = dict(w.split("=", 1) for w in words[2 + argc:] if "=" in w)
    return fds, argv, cwd, env


def open_stdio(encoding):
    """New sys.stdin/stdout/stderr on fds 0-2, as python3 makes them."""
    import io
    unbuffered = UNBUFFERED
    streams = []
    for fd, mode in ((0, "rb"), (1, "wb"), (2, "wb")):
        raw = io.open(fd, mode, buffering=0 if unbuffered and fd else -1, closefd=False)
        tty = os.isatty(fd)
        streams.append(io.TextIOWrapper(
            raw, encoding=encoding, errors="backslashreplace" if fd == 2 else sys.stdin.errors,
            line_buffering=fd == 2 or (tty and fd == 1), write_through=unbuffered and fd > 0))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams


def exit_code(code):
    """python3's exit status for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_child(fds, argv, cwd, env, threads):
    """In the fork: becomes `python3 argv` and never returns."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setpgid(0, 0)
        encoding = sys.stdout.encoding
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        open_stdio(encoding)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        for name in THREAD_VARS:
            if env.get(name, "").isdigit() and int(env[name]) > 0:
                threads = int(env[name])
                break
        torch.set_num_threads(threads)
        # python3 seeds torch's and numpy's global generators afresh (Python's
        # random reseeds itself in a fork)
        torch.seed()
        numpy.random.seed()
        import types
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        if argv[0] == "-c":
            source, name, sys.argv, sys.path[0] = argv[1], "<string>", ["-c"] + argv[2:], ""
        elif argv[0] == "-":
            source, name, sys.argv, sys.path[0] = sys.stdin.read(), "<stdin>", argv, ""
        else:
            path = argv[0]
            try:
                with open(path, "rb") as f:
                    source = f.read()
            except OSError as e:
                print(f"{sys.executable}: can't open file {os.path.abspath(path)!r}: "
                      f"[Errno {e.errno}] {e.strerror}", file=sys.stderr)
                sys.stderr.flush()
                os._exit(2)
            name, sys.argv = path, argv
            sys.path[0] = os.path.dirname(os.path.realpath(path))
            main.__file__ = path
            main.__cached__ = None
        sys.modules["__main__"] = main
        try:
            exec(compile(source, name, "exec"), main.__dict__)
            status = 0
        except SystemExit as e:
            status = exit_code(e.code)
        except BaseException as e:  # noqa: B036 (python3 prints any)
            e = e.with_traceback(e.__traceback__.tb_next)  # without this frame
            sys.excepthook(type(e), e, e.__traceback__)
            status = -signal.SIGINT if isinstance(e, KeyboardInterrupt) else 1
        import atexit
        import threading
        threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as e:
        status = exit_code(e.code)
    except BaseException:  # noqa: B036 (the child must end here)
        import traceback
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            if status == 0:
                status = 120  # as python3 when its stdout cannot be flushed
    if status < 0:
        signal.signal(-status, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    os._exit(status)


class Server:
    def __init__(self, path):
        self.path = path
        self.python_vars = python_vars(os.environ)
        self.threads = torch.get_num_threads()
        self.children = {}  # pid -> conn
        self.sel = selectors.DefaultSelector()
        self.last = time.monotonic()

    def listen(self):
        """True when this server listens; False when another one holds the lock."""
        self.lock = os.open(self.path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            return False
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(64)
        self.sock.setblocking(False)
        self.sel.register(self.sock, selectors.EVENT_READ, "accept")
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.wake = wake_r
        self.sel.register(wake_r, selectors.EVENT_READ, "wake")
        return True

    def accept(self):
        try:
            conn, _ = self.sock.accept()
        except BlockingIOError:
            return False
        self.last = time.monotonic()
        request = read_request(conn)
        if request is None:
            conn.close()
            return True
        fds, argv, cwd, env = request
        if python_vars(env) != self.python_vars:
            try:
                conn.sendall(b"R")
            except OSError:
                pass
            conn.close()
        else:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self.sel.close()
                for fd in (self.lock, self.wake):
                    if fd >= 0:
                        os.close(fd)
                for s in [self.sock, conn, *self.children.values()]:
                    s.close()
                run_child(fds, argv, cwd, env, self.threads)
            self.children[pid] = conn
            conn.setblocking(False)
            try:
                conn.sendall(b"S")
            except OSError:
                pass
            self.sel.register(conn, selectors.EVENT_READ, pid)
        for fd in fds:
            os.close(fd)
        return True

    def from_client(self, conn, pid):
        try:
            data = conn.recv(64)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.sel.unregister(conn)
            self.kill(pid, signal.SIGKILL)
            return
        for sig in data:
            self.kill(pid, sig)

    def kill(self, pid, sig):
        try:
            os.killpg(pid, sig)
        except OSError:
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def reap(self):
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            self.last = time.monotonic()
            try:
                self.sel.unregister(conn)
            except KeyError:
                pass
            try:
                conn.setblocking(True)
                conn.sendall(b"X" + struct.pack("!i", status))
            except OSError:
                pass
            conn.close()

    def serve(self):
        log("serving", self.path, "torch", torch.__version__, "threads", self.threads)
        closing = False
        while True:
            idle = IDLE - (time.monotonic() - self.last)
            for key, _ in self.sel.select(timeout=max(idle, 0) if not self.children else None):
                if key.data == "accept":
                    while self.accept():
                        pass
                elif key.data == "wake":
                    try:
                        os.read(self.wake, 512)
                    except BlockingIOError:
                        pass
                else:
                    self.from_client(key.fileobj, key.data)
            self.reap()
            if not closing and not self.children and time.monotonic() - self.last >= IDLE:
                # new clients start a new server from here on; the queued ones are served
                closing = True
                try:
                    os.unlink(self.path)
                except FileNotFoundError:
                    pass  # the build folder went
                os.close(self.lock)
                self.lock = -1
                while self.accept():
                    pass
            if closing and not self.children:
                t = os.times()
                log(f"idle: exiting; CPU {t.user + t.system:.1f} s, "
                    f"its children's {t.children_user + t.children_system:.1f} s")
                return


def main():
    path = sys.argv[1]
    ready = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    server = Server(path)
    if not server.listen():
        # another server holds the lock: ready once it listens
        for _ in range(400):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                break
            except OSError:
                time.sleep(0.05)
            finally:
                probe.close()
        else:
            log("another server holds", path + ".lock", "and does not listen")
            return 1
    if ready >= 0:
        os.write(ready, b"ok")
        os.close(ready)
    if getattr(server, "sock", None):
        server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
