"""Round 10 (an attacker briefed without the defences; 05 to 08 and the pipeline).

Findings, both fixed (course.grader.probe.lines_run):

1. A finite-difference backward whose code objects carry no line numbers
   (`code.replace(co_linetable=...)` with "no location" entries): `sys.settrace` sees no
   "line" event in it, so `lines_run` counts 1 line for a complex-step gradient of every
   element. The tracer is never turned off, no library frame is borrowed. Now a frame
   whose code has instructions without a line is traced by opcode, and each of those
   instructions it runs counts as a line.
2. A finite-difference backward done by a worker process forked *before* the backward
   (at the cell's definition): the traced thread only writes the cache to a pipe and
   waits; the worker is not forked during the backward and is never reaped there, so
   neither the fork hook nor `os.times()`'s children see its CPU time. Now the CPU time
   the kernel's other processes (its descendants; in the sandbox, every process there)
   spend during the backward counts as work outside the traced thread.

Both had earned batchnorm_backward's 3 of 3 under real, sandboxed `course grade`
(now test_real_grading_gives_them_nothing); the first had also earned
07's rnn_step and rnn_sequence in full, and 08's attention_backward 1.5 of 3 (plain
finite differences: 0.27).
"""

# ruff: noqa: E501 (the students' code is kept verbatim, as the attacker wrote it)
from __future__ import annotations

import nbformat
import pytest

from course.authoring.classroom import judge_in_process
from course.paths import course_root

# The honest forward, keeping x, beta and eps in its cache (round 9's FWD_CACHE_X).
FWD_CACHE_X = '\ndef batchnorm_forward(x, gamma, beta, bn_param):\n    mode = bn_param["mode"]\n    eps = bn_param.get("eps", 1e-5)\n    momentum = bn_param.get("momentum", 0.9)\n    D = x.shape[1]\n    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))\n    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))\n    if mode == "train":\n        mu = x.mean(axis=0)\n        centred = x - mu\n        var = np.mean(centred**2, axis=0)\n        std = np.sqrt(var + eps)\n        x_hat = centred / std\n        out = gamma * x_hat + beta\n        cache = (x_hat, centred, std, gamma, np.array(x, copy=True), np.array(beta, copy=True), eps)\n        running_mean = momentum * running_mean + (1 - momentum) * mu\n        running_var = momentum * running_var + (1 - momentum) * var\n    elif mode == "test":\n        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta\n        cache = None\n    else:\n        raise ValueError("mode")\n    bn_param["running_mean"] = running_mean\n    bn_param["running_var"] = running_var\n    return out, cache\n'

# A complex step, one element at a time: no chain rule anywhere.
FD = """
def _bn_f(X, gamma, beta, eps):
    mu = X.mean(axis=0)
    c = X - mu
    var = (c * c).mean(axis=0)
    return gamma * c / np.sqrt(var + eps) + beta

def _fd(f, a, dout, h=1e-30):
    g = np.zeros(a.shape)
    for ix in np.ndindex(a.shape):
        p = a.astype(complex); p[ix] += 1j * h
        g[ix] = np.sum(np.imag(f(p)) / h * dout)
    return g

def _all_fd(dout, cache):
    x_hat, centred, std, gamma, x, beta, eps = cache
    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)
    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)
    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)
    return dx, dgamma, dbeta
"""

# Student code that hides from a line tracer: every instruction of a function (and of the
# functions inside it) at "no location".
STRIP_LINES = """
import types

def _strip(code):
    consts = tuple(_strip(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    units = len(code.co_code) // 2
    table = bytearray()
    while units > 0:
        k = min(units, 8)
        table.append(0x80 | (15 << 3) | (k - 1))
        units -= k
    return code.replace(co_consts=consts, co_linetable=bytes(table))

def _quiet(f):
    return types.FunctionType(_strip(f.__code__), f.__globals__, f.__name__, f.__defaults__, f.__closure__)
"""

BWD_NO_LINES = (
    FD
    + """
"""
    + STRIP_LINES
    + """

def batchnorm_backward(dout, cache):
    return _all_fd(dout, cache)

_bn_f, _fd, _all_fd = _quiet(_bn_f), _quiet(_fd), _quiet(_all_fd)
batchnorm_backward = _quiet(batchnorm_backward)
"""
)

BWD_PREFORKED = (
    FD
    + """
import os, pickle, struct

def _send(fd, data):
    data = struct.pack("Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]

def _recv(fd):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf
    return exactly(struct.unpack("Q", exactly(8))[0])

_ask_r, _ask_w = os.pipe()
_got_r, _got_w = os.pipe()
if os.fork() == 0:  # the worker: forked now, long before any backward pass runs
    try:
        os.close(_ask_w); os.close(_got_r)
        while True:
            _send(_got_w, pickle.dumps(_all_fd(*pickle.loads(_recv(_ask_r)))))
    finally:
        os._exit(0)
os.close(_ask_r); os.close(_got_w)

def batchnorm_backward(dout, cache):
    _send(_ask_w, pickle.dumps((dout, cache)))
    return pickle.loads(_recv(_got_r))
"""
)


def _source(name):
    return nbformat.read(course_root() / "source" / f"{name}.ipynb", as_version=4)


def test_finite_difference_without_line_numbers_earns_nothing():
    nb = _source("05_normalisation/normalisation")
    scores = judge_in_process(
        nb,
        {"batchnorm_forward_solution": FWD_CACHE_X, "batchnorm_backward_solution": BWD_NO_LINES},
    )
    assert scores["batchnorm_forward"] == 3.0  # the forward is honest
    assert scores["batchnorm_backward"] < 1.0, scores


def test_finite_difference_in_a_preforked_worker_earns_nothing():
    nb = _source("05_normalisation/normalisation")
    scores = judge_in_process(
        nb,
        {"batchnorm_forward_solution": FWD_CACHE_X, "batchnorm_backward_solution": BWD_PREFORKED},
    )
    assert scores["batchnorm_forward"] == 3.0
    assert scores["batchnorm_backward"] < 1.0, scores


# The same trick as a generic wrapper: any forward f(*arrays..., cache-free args) gets a
# backward by central differences, every code object stripped of its line numbers.
GENERIC_NO_LINES = (
    """
import inspect, types

def _numgrad(f, a, h=1e-3):
    g = np.zeros(a.shape)
    for ix in np.ndindex(a.shape):
        def at(s):
            p = np.array(a, dtype=float, copy=True); p[ix] += s; return f(p)
        hh = h * max(1.0, abs(float(a[ix])))
        g[ix] = (8 * (at(hh) - at(-hh)) - (at(2 * hh) - at(-2 * hh))) / (12 * hh)
    return g

def _fd_pair(fwd):
    sig = inspect.signature(fwd)
    def forward(*args, **kwargs):
        bound = sig.bind(*args, **kwargs); bound.apply_defaults()
        args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in bound.arguments.values()]
        res = fwd(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])
        return (*res[:-1], (res[-1], args))
    def backward(*douts_cache):
        *douts, (c, args) = douts_cache
        def scalar(i, v):
            a2 = list(args); a2[i] = v
            outs = fwd(*a2)[:-1]
            return sum(float(np.sum(o * d)) for o, d in zip(outs, douts))
        idx = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        return tuple(_numgrad(lambda v, i=i: scalar(i, v), args[i]) for i in idx)
    return forward, backward

"""
    + STRIP_LINES
    + """

_numgrad, _fd_pair = _quiet(_numgrad), _quiet(_fd_pair)
"""
)


def _wrapped(nb, cells, helpers, strip_forward=True):
    from course.authoring.classroom import solution_sources

    sol = solution_sources(nb)
    answers = {}
    for index, (cell, pairs) in enumerate(cells):
        code = sol[cell] + "\n" + (helpers if index == 0 else "")
        for p in pairs:
            # The forward the differences call is the honest one, its lines stripped too.
            if strip_forward:
                code += f"\n{p}_forward = _quiet({p}_forward)"
            code += f"\n{p}_forward, {p}_backward = _fd_pair({p}_forward)\n"
        answers[cell] = code
    return judge_in_process(nb, answers)


def test_attention_backward_without_line_numbers_earns_nothing():
    nb = _source("08_attention/attention")
    # attention_forward calls the learner's softmax: its lines are stripped too.
    helpers = GENERIC_NO_LINES + "\nsoftmax = _quiet(softmax)\n"
    scores = _wrapped(nb, [("attention_solution", ["attention"])], helpers)
    assert scores["attention_forward"] == 3.0
    assert scores["attention_backward"] < 1.0, scores


def test_rnn_backward_without_line_numbers_earns_nothing():
    nb = _source("07_recurrent/recurrent")
    cells = [("rnn_step_solution", ["rnn_step"]), ("rnn_sequence_solution", ["rnn"])]
    scores = _wrapped(nb, cells, GENERIC_NO_LINES)
    assert scores["rnn_step"] < 1.0 and scores["rnn_sequence"] < 1.0, scores


@pytest.mark.slow
def test_real_grading_gives_them_nothing(tmp_path):
    from tests.harness import Batch

    batch = Batch(tmp_path, "05_normalisation", "normalisation")
    for student, backward in (("nolines", BWD_NO_LINES), ("preforked", BWD_PREFORKED)):
        batch.submit(
            student,
            batch.answered(
                {"batchnorm_forward_solution": FWD_CACHE_X, "batchnorm_backward_solution": backward}
            ),
        )
    finished = batch.course_grade()
    assert finished.returncode in (0, 1), finished.stderr[-2000:]
    scores = batch.scores()
    assert scores["nolines"]["batchnorm_backward"] < 1.0, scores["nolines"]
    assert scores["preforked"]["batchnorm_backward"] < 1.0, scores["preforked"]


# lines_run itself, on small student code (compiled under a file name of the student's).
LOOPS = """
def plain(n):
    t = 0
    for i in range(n):
        t += i
    return t

def raising(n):
    t = 0
    for i in range(n):
        try:
            raise ValueError
        except ValueError:  # cleanup the compiler leaves without a line
            t += i
    return t
"""


def _student(code: str) -> dict:
    namespace: dict = {}
    exec(compile(code, "/home/student/cell.py", "exec"), namespace)
    return namespace


def test_code_without_line_numbers_counts_each_instruction():
    from course.grader.probe import lines_run

    ns = _student(LOOPS + STRIP_LINES)
    _, located = lines_run(lambda: ns["plain"](100))
    _, stripped = lines_run(lambda: ns["_quiet"](ns["plain"])(100))
    assert 200 <= located <= 210
    assert stripped >= located


def test_honest_exception_cleanup_adds_a_few_instructions_only():
    from course.grader.probe import lines_run

    ns = _student(LOOPS)
    _, count = lines_run(lambda: ns["raising"](100))
    assert count <= 10 * 100, count  # about 5 lines and 2 unlocated instructions a turn


def test_other_processes_of_the_kernel_count_only_when_they_work():
    import subprocess
    import sys
    import time

    from course.grader.probe import OFF_THREAD_COUNT, lines_run

    # An idle child (started before, as round 10's worker was) costs an honest call nothing;
    # one that works while the call waits makes it too much. Not forked: no hook sees it.
    idle = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE,
    )
    busy = None
    try:
        assert idle.stdout.readline() == b"ready\n"  # past its start-up
        assert lines_run(lambda: time.sleep(0.2))[1] < 10
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        assert lines_run(lambda: time.sleep(0.2))[1] == OFF_THREAD_COUNT
    finally:
        for child in (idle, busy):
            if child is not None:
                child.kill()
                child.wait()
