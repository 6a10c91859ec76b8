#!/usr/bin/python3
"""tt_python and its fork server (tests/tt_python.c, tests/pyserve.py) give
what /usr/bin/python3 gives: arguments, sys.path[0], stdin, stdout,
stderr (a traceback included), the working folder, the environment, exit
statuses, a signal, torch's thread count; two requests run at once; a
killed client takes its script along; without a usable socket, tt_python
runs python3 itself; an idle server exits and removes its socket.

    pyserve_check.py TT_PYTHON        (exit 77 where python3 has no torch)
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
CLIENT = sys.argv[1]
IDLE = 4
failures = 0


def check(ok, what, detail=""):
    global failures
    print(("ok    " if ok else "FAIL  ") + what + ("" if ok else ": " + detail), flush=True)
    failures += not ok


def run(program, args, env, **kw):
    return subprocess.run([program] + args, env=env, capture_output=True, timeout=120, **kw)


def same(what, args, env, stdin=b"", served=True, cwd=None):
    """tt_python ARGS and python3 ARGS give the same status, stdout and stderr."""
    want = run(PYTHON, args, env, input=stdin, cwd=cwd)
    got = run(CLIENT, args, env, input=stdin, cwd=cwd)
    check((got.returncode, got.stdout, got.stderr) == (want.returncode, want.stdout, want.stderr),
          what, f"python3 gave {want.returncode} {want.stdout!r} {want.stderr!r}, "
          f"tt_python {got.returncode} {got.stdout!r} {got.stderr!r}")
    # served runs find torch imported (by the server); python3's do not
    probe = run(CLIENT, ["-c", "import sys; print('torch' in sys.modules)"], env)
    check(probe.stdout == (b"True\n" if served else b"False\n"),
          what + (": served" if served else ": python3 itself"), repr(probe.stdout))


def main():
    if subprocess.run([PYTHON, "-c", "import torch, torchvision"]).returncode != 0:
        print("skipped: /usr/bin/python3 has no torch and torchvision")
        return 77
    work = tempfile.mkdtemp(prefix="tt-pyserve-")
    sock = os.path.join(work, "pyserve.sock")
    env = dict(os.environ, TT_PYSERVE=sock, TT_PYSERVE_IDLE=str(IDLE), TT_CHECK="a b\nc")
    env.pop("TT_UNSET", None)
    env.pop("TT_PYSERVE_OFF", None)
    script = os.path.join(work, "sub", "show.py")
    os.makedirs(os.path.dirname(script))
    with open(script, "w") as f:
        f.write("import os, sys\n"
                "print(sys.argv, sys.path[0], __name__, __file__ == sys.argv[0])\n"
                "print(os.getcwd(), repr(os.environ.get('TT_CHECK')), 'TT_UNSET' in os.environ)\n"
                "print('to stderr', file=sys.stderr)\n"
                "data = sys.stdin.read()\n"
                "print(len(data), data[:20])\n"
                "code = int(sys.argv[1]) if len(sys.argv) > 1 else 0\n"
                "if code < 0:\n"
                "    {}['missing']\n"
                "sys.exit(code)\n")

    same("a script's argv, path, cwd, env, stdin, stdout, stderr", [script, "0", "x y"], env,
         stdin=b"some input\n" * 1000, cwd=work)
    same("exit status 3", [script, "3"], env)
    same("an uncaught exception: status 1, its traceback", [script, "-1"], env)
    same("sys.exit with a message", ["-c", "import sys; sys.exit('bye')"], env)
    same("-c with arguments", ["-c", "import sys; print(sys.argv, repr(sys.path[0]))", "1", "2"],
         env)
    same("- reads the program from stdin", ["-", "arg"], env,
         stdin=b"import sys\nprint(sys.argv, __name__)\nraise SystemExit(5)\n")
    same("a syntax error", ["-c", "1 +"], env)
    same("a missing script", [os.path.join(work, "none.py")], env)
    same("a subprocess writes to the same stdout",
         ["-c", "import subprocess, sys; print('a', flush=True); "
          "subprocess.run(['echo', 'b']); print('c')"], env)
    same("torch's threads", ["-c", "import torch; print(torch.get_num_threads())"], env)
    same("torch's threads with OMP_NUM_THREADS=2",
         ["-c", "import torch; print(torch.get_num_threads())"], dict(env, OMP_NUM_THREADS="2"))
    same("torch's and numpy's random numbers",
         ["-c", "import numpy, torch; torch.manual_seed(1); "
          "x = torch.randn(64, 64); print((x @ x).sum().item(), torch.rand(3).tolist()); "
          "numpy.random.seed(2); print(numpy.random.rand(2))"], env)
    unseeded = ["-c", "import numpy, random, torch; "
                "print(torch.rand(2).tolist()); print(numpy.random.rand(2)); print(random.random())"]
    runs = [run(CLIENT, unseeded, env).stdout.splitlines() for _ in range(2)]
    check(len(runs[0]) == 3 and all(a != b for a, b in zip(*runs)),
          "torch's, numpy's and Python's unseeded numbers differ from run to run", repr(runs))

    # two at once: each waits for the other's file
    meet = ("import os, sys, time\n"
            "open(sys.argv[1], 'w').close()\n"
            "end = time.time() + 20\n"
            "while not os.path.exists(sys.argv[2]) and time.time() < end: time.sleep(0.02)\n"
            "sys.exit(0 if os.path.exists(sys.argv[2]) else 9)\n")
    a, b = os.path.join(work, "a"), os.path.join(work, "b")
    procs = [subprocess.Popen([CLIENT, "-c", meet, x, y], env=env) for x, y in ((a, b), (b, a))]
    check([p.wait(timeout=60) for p in procs] == [0, 0], "two requests run at once")

    # SIGTERM is passed on: the script dies of it, and tt_python with it
    ready = os.path.join(work, "ready")
    wait = ("import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\n"
            "time.sleep(60)\n")
    p = subprocess.Popen([CLIENT, "-c", wait, ready], env=env)
    while not os.path.exists(ready) or not open(ready).read():
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    check(p.wait(timeout=30) == -signal.SIGTERM, "SIGTERM reaches the script", str(p.returncode))
    # a client killed outright: the server kills its script
    os.unlink(ready)
    p = subprocess.Popen([CLIENT, "-c", wait, ready], env=env)
    while not os.path.exists(ready) or not open(ready).read():
        time.sleep(0.02)
    child = int(open(ready).read())
    p.kill()
    p.wait()
    end = time.time() + 10
    while time.time() < end and os.path.exists(f"/proc/{child}") and \
            open(f"/proc/{child}/stat").read().split()[2] != "Z":
        time.sleep(0.05)
    check(not os.path.exists(f"/proc/{child}") or
          open(f"/proc/{child}/stat").read().split()[2] == "Z",
          "a killed client's script is killed")

    # no server where the socket cannot be made, nor without TT_PYSERVE
    blocked = os.path.join(work, "a-file")
    open(blocked, "w").close()
    same("a socket in no folder: python3 itself", [script, "3"],
         dict(env, TT_PYSERVE=os.path.join(blocked, "pyserve.sock")), served=False)
    plain = dict(env)
    del plain["TT_PYSERVE"]
    same("no TT_PYSERVE: python3 itself", [script, "0"], plain, served=False)
    same("TT_PYSERVE_OFF=1: python3 itself", [script, "0"], dict(env, TT_PYSERVE_OFF="1"),
         served=False)
    same("an option python3 takes, -I: python3 itself", ["-I", "-c", "print(1)"], env)
    same("another PYTHONHASHSEED: python3 itself", ["-c", "print(hash('tiletrain'))"],
         dict(env, PYTHONHASHSEED="7"), served=False)

    end = time.time() + IDLE + 15
    while os.path.exists(sock) and time.time() < end:
        time.sleep(0.1)
    check(not os.path.exists(sock), f"the server exits after {IDLE} s idle, removing its socket")
    subprocess.run(["rm", "-rf", work])
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
