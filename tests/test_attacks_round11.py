"""Round 11 of the attacks: gradients that are not written by hand, yet earn the backward
passes' points in 05-08.

Each test holds a student's code verbatim and asserts that it earns nothing: no more than
the same submission whose backward pass returns zeros. They failed (strict xfails) until
issue 31 item 2 gave every by-hand backward a large case under a CPU and memory budget
(course.checks.common.record_large): the batched complex steps run out of memory, the
finite differences with the counter out of the way run out of time.
"""

from __future__ import annotations

import nbformat
import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.paths import course_root


def _source(assignment: str, notebook: str):
    return nbformat.read(course_root() / "source" / assignment / f"{notebook}.ipynb", as_version=4)


def _judge(assignment: str, notebook: str, answers: dict[str, str], only: list[str]):
    nb = _source(assignment, notebook)
    return judge_in_process(nb, {**solution_sources(nb), **answers}, only=only)


# ------------------------------------------------------------------ a batched complex step
#
# Every element of an input is nudged by i * 1e-30 at once, along a new leading axis of the
# arrays (np.eye), and the forward pass, written to broadcast over leading axes, runs once
# on the whole stack: the imaginary part of its output is the exact derivative (a complex
# step has no cancellation, so the gradient is right to rounding). The learner's code runs
# about one forward pass's lines per input, whatever the number of elements, so the count
# of lines run (course.checks.common.by_hand) sees a backward pass.

CSTEP = '''
def _cstep(f, args, i, dout, h=1e-30):
    """gradient of sum(f(*args) * dout) with respect to args[i]."""
    a = np.asarray(args[i], dtype=float)
    K = a.size
    pert = list(args)
    pert[i] = a + 1j * h * np.eye(K).reshape((K,) + a.shape)
    out = f(*pert)
    return (out.imag * dout).reshape(K, -1).sum(axis=1).reshape(a.shape) / h
'''

# 05: batch norm; the rows of x are nudged one at a time, every column at once (the
# columns are independent: Curtis-Powell-Reid colouring), gamma and beta in one call each.
BN_FORWARD = """#| export
def _bn_core(x, gamma, beta, eps):
    mu = x.mean(axis=-2, keepdims=True)
    centred = x - mu
    var = (centred * centred).mean(axis=-2, keepdims=True)
    return gamma * (centred / np.sqrt(var + eps)) + beta, mu, var


def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    D = x.shape[1]
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        out, mu, var = _bn_core(x, gamma, beta, eps)
        mu, var = mu[0], var[0]
        cache = (x, gamma, beta, eps)
        running_mean = momentum * running_mean + (1 - momentum) * mu
        running_var = momentum * running_var + (1 - momentum) * var
    elif mode == "test":
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    else:
        raise ValueError("mode")
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache
"""
BN_BACKWARD = """#| export
def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    N, D = x.shape
    h = 1e-30
    rows = np.eye(N)[:, :, None] * np.ones(D)  # perturb row k of every column at once
    dx = (_bn_core(x + 1j * h * rows, gamma, beta, eps)[0].imag * dout).sum(axis=1) / h
    dgamma = (_bn_core(x, gamma + 1j * h, beta, eps)[0].imag * dout).sum(axis=0) / h
    dbeta = (_bn_core(x, gamma, beta + 1j * h, eps)[0].imag * dout).sum(axis=0) / h
    return dx, dgamma, dbeta
"""
BN_BACKWARD_ALT = """#| export
def batchnorm_backward_alt(dout, cache):
    return batchnorm_backward(dout, cache)
"""
BN_ZERO = """#| export
def batchnorm_backward(dout, cache):
    x, gamma, beta, eps = cache
    return np.zeros_like(x), np.zeros_like(gamma), np.zeros_like(beta)
"""

# 06: conv_forward_naive's loops, indexing from the end so that a leading axis rides along.
CONV = (
    """#| export
"""
    + CSTEP
    + """

def _conv_core(x, w, b, s, pad, HH, WW, H_out, W_out):
    N, F = x.shape[-4], w.shape[-4]
    lead = np.broadcast_shapes(x.shape[:-4], w.shape[:-4], b.shape[:-1])
    widths = [(0, 0)] * (x.ndim - 2) + [(pad, pad), (pad, pad)]
    x_pad = np.pad(x, widths)
    out = np.zeros(lead + (N, F, H_out, W_out), dtype=np.result_type(x, w, b))
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    win = x_pad[..., n, :, i * s : i * s + HH, j * s : j * s + WW]
                    out[..., n, f, i, j] = (win * w[..., f, :, :, :]).sum((-3, -2, -1)) + b[..., f]
    return out


def conv_forward_naive(x, w, b, conv_param):
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:
        raise ValueError("does not tile")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    sizes = (stride, pad, HH, WW, H_out, W_out)
    return _conv_core(x, w, b, *sizes), (x, w, b, sizes)


def conv_backward_naive(dout, cache):
    x, w, b, sizes = cache

    def f(x_, w_, b_):
        return _conv_core(x_, w_, b_, *sizes)

    return tuple(_cstep(f, (x, w, b), i, dout) for i in range(3))
"""
)
CONV_ZERO = CONV.replace(
    "    return tuple(_cstep(f, (x, w, b), i, dout) for i in range(3))",
    "    return np.zeros_like(x), np.zeros_like(w), np.zeros_like(b)",
)

# 07: the tanh RNN, step and sequence.
RNN_STEP = (
    """#| export
"""
    + CSTEP
    + """

def _step(x, prev_h, Wx, Wh, b):
    return np.tanh(x @ Wx + prev_h @ Wh + np.expand_dims(b, -2))


def rnn_step_forward(x, prev_h, Wx, Wh, b):
    return _step(x, prev_h, Wx, Wh, b), (x, prev_h, Wx, Wh, b)


def rnn_step_backward(dnext_h, cache):
    return tuple(_cstep(_step, cache, i, dnext_h) for i in range(5))
"""
)
RNN_SEQUENCE = """#| export
def _seq(x, h0, Wx, Wh, b):
    T = x.shape[-2]
    h, hs = h0, []
    for t in range(T):
        h = _step(x[..., t, :], h, Wx, Wh, b)
        hs.append(h)
    return np.stack(hs, axis=-2)


def rnn_forward(x, h0, Wx, Wh, b):
    return _seq(x, h0, Wx, Wh, b), (x, h0, Wx, Wh, b)


def rnn_backward(dh, cache):
    return tuple(_cstep(_seq, cache, i, dh) for i in range(5))
"""
RNN_STEP_ZERO = RNN_STEP.replace(
    "    return tuple(_cstep(_step, cache, i, dnext_h) for i in range(5))",
    "    return tuple(np.zeros_like(a) for a in cache)",
)
RNN_SEQUENCE_ZERO = RNN_SEQUENCE.replace(
    "    return tuple(_cstep(_seq, cache, i, dh) for i in range(5))",
    "    return tuple(np.zeros_like(a) for a in cache)",
)

# 08: scaled dot-product attention, its softmax shifted by the real part's maximum.
ATTENTION = (
    """#| export
"""
    + CSTEP
    + """

def _att(q, k, v, mask):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.real.max(axis=-1, keepdims=True)
    e = np.exp(scores)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def attention_forward(q, k, v, mask=None):
    return _att(q, k, v, mask).real, (q, k, v, mask)


def attention_backward(dout, cache):
    q, k, v, mask = cache
    return tuple(_cstep(lambda *a: _att(*a, mask), (q, k, v), i, dout) for i in range(3))
"""
)
ATTENTION_ZERO = ATTENTION.replace(
    "    return tuple(_cstep(lambda *a: _att(*a, mask), (q, k, v), i, dout) for i in range(3))",
    "    return np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)",
)

# ------------------------------------------------- the line counter switched off or replaced
#
# A plain loop of centred differences over every element, with the counter of lines run
# out of the way: replaced in the check's module (the kernel imports the same modules the
# student's cells can), or the tracer switched off while the backward runs.

BN_FORWARD_KEEPS_INPUTS = (
    solution_sources(_source("05_normalisation", "normalisation"))["batchnorm_forward_solution"]
).replace(
    "cache = (x_hat, centred, std, gamma)",
    'cache = (x, gamma, beta, dict(bn_param, mode="train"))',
)
FINITE_DIFFERENCES = """
def _fd(dout, cache):
    x, gamma, beta, bn_param = cache
    def f(x_, g_, b_):
        return batchnorm_forward(x_, g_, b_, dict(bn_param))[0]
    grads = []
    for i, a in enumerate((x, gamma, beta)):
        g = np.zeros_like(a)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            idx = it.multi_index
            args = [x.copy(), gamma.copy(), beta.copy()]
            args[i][idx] += 1e-5
            p = f(*args)
            args[i][idx] -= 2e-5
            m = f(*args)
            g[idx] = np.sum((p - m) * dout) / 2e-5
        grads.append(g)
    return tuple(grads)
"""
MONKEYPATCHED_COUNTER = (
    """#| export
import course.checks.normalisation as _cn
import course.grader.probe as _gp
def _quiet(fn):
    return fn(), 0
_cn.lines_run = _quiet
_gp.lines_run = _quiet
"""
    + FINITE_DIFFERENCES
    + """
def batchnorm_backward(dout, cache):
    return _fd(dout, cache)
"""
)
TRACER_OFF = (
    """#| export
import sys
"""
    + FINITE_DIFFERENCES
    + """
def batchnorm_backward(dout, cache):
    tracer = sys.gettrace()
    sys.settrace(None)
    try:
        return _fd(dout, cache)
    finally:
        sys.settrace(tracer)
"""
)
FD_ZERO = """#| export
def batchnorm_backward(dout, cache):
    x, gamma, beta, bn_param = cache
    return np.zeros_like(x), np.zeros_like(gamma), np.zeros_like(beta)
"""


def _earns_nothing(assignment, notebook, attack: dict, zero: dict, checks: list[str]):
    """The attack's points on `checks` are no more than a zero backward pass's."""
    got = _judge(assignment, notebook, attack, checks)
    floor = _judge(assignment, notebook, zero, checks)
    for name in checks:
        assert got[name] <= floor[name] + 1e-9, (name, got[name], floor[name])


def test_complex_step_batchnorm_backward_earns_nothing():
    _earns_nothing(
        "05_normalisation",
        "normalisation",
        {
            "batchnorm_forward_solution": BN_FORWARD,
            "batchnorm_backward_solution": BN_BACKWARD,
            "batchnorm_backward_alt_solution": BN_BACKWARD_ALT,
        },
        {
            "batchnorm_forward_solution": BN_FORWARD,
            "batchnorm_backward_solution": BN_ZERO,
            "batchnorm_backward_alt_solution": BN_BACKWARD_ALT,
        },
        ["batchnorm_backward", "batchnorm_backward_alt"],
    )


def test_complex_step_conv_backward_naive_earns_nothing():
    _earns_nothing(
        "06_convolution",
        "convolution",
        {"conv_naive_solution": CONV},
        {"conv_naive_solution": CONV_ZERO},
        ["conv_backward_naive"],
    )


def test_complex_step_rnn_backward_earns_nothing():
    _earns_nothing(
        "07_recurrent",
        "recurrent",
        {"rnn_step_solution": RNN_STEP, "rnn_sequence_solution": RNN_SEQUENCE},
        {"rnn_step_solution": RNN_STEP_ZERO, "rnn_sequence_solution": RNN_SEQUENCE_ZERO},
        ["rnn_step", "rnn_sequence"],
    )


def test_complex_step_attention_backward_earns_nothing():
    _earns_nothing(
        "08_attention",
        "attention",
        {"attention_solution": ATTENTION},
        {"attention_solution": ATTENTION_ZERO},
        ["attention_backward"],
    )


def test_monkeypatched_line_counter_earns_nothing(monkeypatch):
    import course.checks.normalisation
    import course.grader.probe

    # In-process, the student's cell patches this very process: put the counter back after.
    for module in (course.checks.normalisation, course.grader.probe):
        monkeypatch.setattr(module, "lines_run", module.lines_run)
    _earns_nothing(
        "05_normalisation",
        "normalisation",
        {
            "batchnorm_forward_solution": BN_FORWARD_KEEPS_INPUTS,
            "batchnorm_backward_solution": MONKEYPATCHED_COUNTER,
        },
        {
            "batchnorm_forward_solution": BN_FORWARD_KEEPS_INPUTS,
            "batchnorm_backward_solution": FD_ZERO,
        },
        ["batchnorm_backward"],
    )


def test_tracer_switched_off_earns_nothing():
    _earns_nothing(
        "05_normalisation",
        "normalisation",
        {
            "batchnorm_forward_solution": BN_FORWARD_KEEPS_INPUTS,
            "batchnorm_backward_solution": TRACER_OFF,
        },
        {
            "batchnorm_forward_solution": BN_FORWARD_KEEPS_INPUTS,
            "batchnorm_backward_solution": FD_ZERO,
        },
        ["batchnorm_backward"],
    )


@pytest.mark.slow
def test_complex_step_and_patched_counter_graded_for_real(tmp_path):
    from tests.harness import Batch

    batch = Batch(tmp_path / "course", "05_normalisation", "normalisation")
    batch.submit(
        "cstep",
        batch.answered(
            {
                "batchnorm_forward_solution": BN_FORWARD,
                "batchnorm_backward_solution": BN_BACKWARD,
                "batchnorm_backward_alt_solution": BN_BACKWARD_ALT,
            },
            trim=True,
        ),
    )
    batch.submit(
        "patched",
        batch.answered(
            {
                "batchnorm_forward_solution": BN_FORWARD_KEEPS_INPUTS,
                "batchnorm_backward_solution": MONKEYPATCHED_COUNTER,
            },
            trim=True,
        ),
    )
    done = batch.course_grade()
    assert done.returncode == 0, done.stdout + done.stderr
    scores = batch.scores()
    # Neither backward pass is written by hand: no points for it.
    assert scores["cstep"]["batchnorm_backward"] <= 0.5, scores["cstep"]
    assert scores["cstep"]["batchnorm_backward_alt"] <= 0.5, scores["cstep"]
    assert scores["patched"]["batchnorm_backward"] <= 0.5, scores["patched"]
