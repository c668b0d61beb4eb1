"""Round 9 (an attacker briefed without the defences, after round 8's by-hand rule):
backward passes that are not written by hand, judged in-process. Each earned the backward's
points before the fix (confirmed with real `course grade` for 05, 07 and 08):

1. a vectorised complex step: every perturbation in one batched evaluation of the forward
   formula (05 batchnorm_backward, 08 attention_backward): no tampering at all;
2. a finite difference in a thread (sys.settrace is per thread): now threads started with
   `threading` are traced, and CPU time spent outside the traced thread counts as too much;
3. a finite difference after sys.settrace(None);
4. a finite difference compiled with co_filename "<frozen ...>" or under the stdlib path:
   code counts as the library's only when it runs in that module's own globals;
5. a finite difference in a forked child process (os.fork, result through a pipe): a fork
   during the backward counts as too much;
6. 06's conv_backward_naive as a finite difference of the (linear, so exact) forward: 06's
   naive backward now has the by-hand rule too.

1 and 3 stayed on the README's "Not protected" list (strict xfails here) until issue 31
item 2: every by-hand backward now also runs a large case under a CPU and memory budget
(course.checks.common.record_large), which neither finishes in time.
"""

# ruff: noqa: E501 (the students' code is kept verbatim, as the attacker wrote it)
from __future__ import annotations

import nbformat
import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.paths import course_root

FWD_CACHE_X = '\ndef batchnorm_forward(x, gamma, beta, bn_param):\n    mode = bn_param["mode"]\n    eps = bn_param.get("eps", 1e-5)\n    momentum = bn_param.get("momentum", 0.9)\n    D = x.shape[1]\n    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))\n    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))\n    if mode == "train":\n        mu = x.mean(axis=0)\n        centred = x - mu\n        var = np.mean(centred**2, axis=0)\n        std = np.sqrt(var + eps)\n        x_hat = centred / std\n        out = gamma * x_hat + beta\n        cache = (x_hat, centred, std, gamma, np.array(x, copy=True), np.array(beta, copy=True), eps)\n        running_mean = momentum * running_mean + (1 - momentum) * mu\n        running_var = momentum * running_var + (1 - momentum) * var\n    elif mode == "test":\n        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta\n        cache = None\n    else:\n        raise ValueError("mode")\n    bn_param["running_mean"] = running_mean\n    bn_param["running_var"] = running_var\n    return out, cache\n'

BWD_CSTEP = "\ndef _bn_formula(X, gamma, beta, eps):\n    # X: (..., N, D), normalise over the N axis\n    mu = X.mean(axis=-2, keepdims=True)\n    c = X - mu\n    var = (c * c).mean(axis=-2, keepdims=True)\n    return gamma * c / np.sqrt(var + eps) + beta\n\ndef _cstep(f, a, dout):\n    K = a.size\n    h = 1e-30\n    A = np.broadcast_to(a.astype(complex), (K,) + a.shape).copy()\n    A.reshape(K, K)[np.arange(K), np.arange(K)] += 1j * h\n    return (np.imag(f(A)) / h * dout).reshape(K, -1).sum(axis=1).reshape(a.shape)\n\ndef batchnorm_backward(dout, cache):\n    x_hat, centred, std, gamma, x, beta, eps = cache\n    dx = _cstep(lambda X: _bn_formula(X, gamma, beta, eps), x, dout)\n    dgamma = _cstep(lambda G: _bn_formula(x, G[..., None, :], beta, eps), gamma, dout)\n    dbeta = _cstep(lambda B: _bn_formula(x, gamma, B[..., None, :], eps), beta, dout)\n    return dx, dgamma, dbeta\n"

BWD_THREAD = '\ndef _bn_f(X, gamma, beta, eps):\n    mu = X.mean(axis=0)\n    c = X - mu\n    var = (c * c).mean(axis=0)\n    return gamma * c / np.sqrt(var + eps) + beta\n\ndef _fd(f, a, dout, h=1e-30):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        p = a.astype(complex); p[ix] += 1j * h\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\n    return g\n\ndef _all_fd(dout, cache):\n    x_hat, centred, std, gamma, x, beta, eps = cache\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\n    return dx, dgamma, dbeta\n\nimport threading\ndef batchnorm_backward(dout, cache):\n    box = {}\n    t = threading.Thread(target=lambda: box.setdefault("r", _all_fd(dout, cache)))\n    t.start(); t.join()\n    return box["r"]\n'

BWD_SETTRACE = "\ndef _bn_f(X, gamma, beta, eps):\n    mu = X.mean(axis=0)\n    c = X - mu\n    var = (c * c).mean(axis=0)\n    return gamma * c / np.sqrt(var + eps) + beta\n\ndef _fd(f, a, dout, h=1e-30):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        p = a.astype(complex); p[ix] += 1j * h\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\n    return g\n\ndef _all_fd(dout, cache):\n    x_hat, centred, std, gamma, x, beta, eps = cache\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\n    return dx, dgamma, dbeta\n\nimport sys\ndef batchnorm_backward(dout, cache):\n    sys.settrace(None)\n    return _all_fd(dout, cache)\n"

BWD_FROZEN = "exec(compile('\\ndef _bn_f(X, gamma, beta, eps):\\n    mu = X.mean(axis=0)\\n    c = X - mu\\n    var = (c * c).mean(axis=0)\\n    return gamma * c / np.sqrt(var + eps) + beta\\n\\ndef _fd(f, a, dout, h=1e-30):\\n    g = np.zeros(a.shape)\\n    for ix in np.ndindex(a.shape):\\n        p = a.astype(complex); p[ix] += 1j * h\\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\\n    return g\\n\\ndef _all_fd(dout, cache):\\n    x_hat, centred, std, gamma, x, beta, eps = cache\\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\\n    return dx, dgamma, dbeta\\n', '<frozen fdmod>', 'exec'), globals())\n\ndef batchnorm_backward(dout, cache):\n    return _all_fd(dout, cache)\n"

BWD_STDLIBPATH = "import sysconfig, os\nexec(compile('\\ndef _bn_f(X, gamma, beta, eps):\\n    mu = X.mean(axis=0)\\n    c = X - mu\\n    var = (c * c).mean(axis=0)\\n    return gamma * c / np.sqrt(var + eps) + beta\\n\\ndef _fd(f, a, dout, h=1e-30):\\n    g = np.zeros(a.shape)\\n    for ix in np.ndindex(a.shape):\\n        p = a.astype(complex); p[ix] += 1j * h\\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\\n    return g\\n\\ndef _all_fd(dout, cache):\\n    x_hat, centred, std, gamma, x, beta, eps = cache\\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\\n    return dx, dgamma, dbeta\\n', os.path.join(sysconfig.get_paths()['stdlib'], 'fdmod.py'), 'exec'), globals())\n\ndef batchnorm_backward(dout, cache):\n    return _all_fd(dout, cache)\n"

BWD_FORK = '\ndef _bn_f(X, gamma, beta, eps):\n    mu = X.mean(axis=0)\n    c = X - mu\n    var = (c * c).mean(axis=0)\n    return gamma * c / np.sqrt(var + eps) + beta\n\ndef _fd(f, a, dout, h=1e-30):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        p = a.astype(complex); p[ix] += 1j * h\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\n    return g\n\ndef _all_fd(dout, cache):\n    x_hat, centred, std, gamma, x, beta, eps = cache\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\n    return dx, dgamma, dbeta\n\nimport os, pickle\ndef batchnorm_backward(dout, cache):\n    r, w = os.pipe()\n    pid = os.fork()\n    if pid == 0:\n        os.close(r)\n        data = pickle.dumps(_all_fd(dout, cache))\n        with os.fdopen(w, "wb") as f:\n            f.write(data)\n        os._exit(0)\n    os.close(w)\n    with os.fdopen(r, "rb") as f:\n        data = f.read()\n    os.waitpid(pid, 0)\n    return pickle.loads(data)\n'

BWD_PLAIN_FD = "\ndef _bn_f(X, gamma, beta, eps):\n    mu = X.mean(axis=0)\n    c = X - mu\n    var = (c * c).mean(axis=0)\n    return gamma * c / np.sqrt(var + eps) + beta\n\ndef _fd(f, a, dout, h=1e-30):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        p = a.astype(complex); p[ix] += 1j * h\n        g[ix] = np.sum(np.imag(f(p)) / h * dout)\n    return g\n\ndef _all_fd(dout, cache):\n    x_hat, centred, std, gamma, x, beta, eps = cache\n    dx = _fd(lambda v: _bn_f(v, gamma, beta, eps), x, dout)\n    dgamma = _fd(lambda v: _bn_f(x, v, beta, eps), gamma, dout)\n    dbeta = _fd(lambda v: _bn_f(x, gamma, v, eps), beta, dout)\n    return dx, dgamma, dbeta\n\ndef batchnorm_backward(dout, cache):\n    return _all_fd(dout, cache)\n"

GENERIC_SETTRACE = '\nimport sys, inspect\ndef _numgrad(f, a, h=1e-3):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        def at(s):\n            p = np.array(a, dtype=float, copy=True); p[ix] += s; return f(p)\n        g[ix] = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)\n    return g\n\ndef _fd_pair(fwd):\n    sig = inspect.signature(fwd)\n    def forward(*args, **kwargs):\n        bound = sig.bind(*args, **kwargs); bound.apply_defaults()\n        args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in bound.arguments.values()]\n        res = fwd(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])\n        return (*res[:-1], (res[-1], args))\n    def backward(*douts_cache):\n        sys.settrace(None)   # <- the whole trick\n        *douts, (c, args) = douts_cache\n        def scalar(i, v):\n            a2 = list(args); a2[i] = v\n            outs = fwd(*a2)[:-1]\n            return sum(float(np.sum(o * d)) for o, d in zip(outs, douts))\n        idx = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]\n        return tuple(_numgrad(lambda v, i=i: scalar(i, v), args[i]) for i in idx)\n    return forward, backward\n'

GENERIC_THREAD = '\nimport sys, inspect\ndef _numgrad(f, a, h=1e-3):\n    g = np.zeros(a.shape)\n    for ix in np.ndindex(a.shape):\n        def at(s):\n            p = np.array(a, dtype=float, copy=True); p[ix] += s; return f(p)\n        g[ix] = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)\n    return g\n\ndef _fd_pair(fwd):\n    sig = inspect.signature(fwd)\n    def forward(*args, **kwargs):\n        bound = sig.bind(*args, **kwargs); bound.apply_defaults()\n        args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in bound.arguments.values()]\n        res = fwd(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])\n        return (*res[:-1], (res[-1], args))\n    def backward(*douts_cache):\n        pass\n        *douts, (c, args) = douts_cache\n        def scalar(i, v):\n            a2 = list(args); a2[i] = v\n            outs = fwd(*a2)[:-1]\n            return sum(float(np.sum(o * d)) for o, d in zip(outs, douts))\n        idx = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]\n        return tuple(_numgrad(lambda v, i=i: scalar(i, v), args[i]) for i in idx)\n    import threading\n    def threaded(*a):\n        box = {}\n        t = threading.Thread(target=lambda: box.setdefault("r", backward(*a)))\n        t.start(); t.join()\n        return box["r"]\n    return forward, threaded\n'

GENERIC_CSTEP = '\nimport inspect\ndef _fd_pair(fwd):\n    sig = inspect.signature(fwd)\n    def forward(*args, **kwargs):\n        bound = sig.bind(*args, **kwargs); bound.apply_defaults()\n        args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in bound.arguments.values()]\n        res = fwd(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])\n        return (*res[:-1], (res[-1], args))\n    def backward(*douts_cache):\n        *douts, (c, args) = douts_cache\n        grads = []\n        for i, a in enumerate(args):\n            if not (isinstance(a, np.ndarray) and a.dtype.kind == "f"):\n                continue\n            K, h = a.size, 1e-30\n            A = np.broadcast_to(a.astype(complex), (K,) + a.shape).copy()\n            A.reshape(K, K)[np.arange(K), np.arange(K)] += 1j * h\n            if a.ndim == 1:\n                A = A[:, None, :]\n            a2 = list(args); a2[i] = A\n            outs = fwd(*a2)[:-1]\n            total = sum((np.imag(o) / h * d).reshape(K, -1).sum(axis=1) for o, d in zip(outs, douts))\n            grads.append(total.reshape(a.shape))\n        return tuple(grads)\n    return forward, backward\n'


def _source(name):
    return nbformat.read(course_root() / "source" / f"{name}.ipynb", as_version=4)


@pytest.mark.parametrize(
    "backward",
    [
        "BWD_CSTEP",
        "BWD_THREAD",
        "BWD_SETTRACE",
        "BWD_FROZEN",
        "BWD_STDLIBPATH",
        "BWD_FORK",
    ],
)
def test_batchnorm_backward_not_by_hand_earns_nothing(backward):
    nb = _source("05_normalisation/normalisation")
    scores = judge_in_process(
        nb,
        {
            "batchnorm_forward_solution": FWD_CACHE_X,
            "batchnorm_backward_solution": globals()[backward],
        },
    )
    assert scores["batchnorm_forward"] == 3.0  # the forward is honest
    assert scores["batchnorm_backward"] < 1.0, scores  # plain finite differences: 0.23


def test_plain_finite_difference_control():
    nb = _source("05_normalisation/normalisation")
    scores = judge_in_process(
        nb, {"batchnorm_forward_solution": FWD_CACHE_X, "batchnorm_backward_solution": BWD_PLAIN_FD}
    )
    assert scores["batchnorm_backward"] < 1.0


def _wrapped(nb, cells, helpers):
    sol = solution_sources(nb)
    answers = {}
    for index, (cell, pairs) in enumerate(cells):
        code = sol[cell] + "\n" + (helpers if index == 0 or "complex" in helpers else "")
        for p in pairs:
            code += f"\n{p}_forward, {p}_backward = _fd_pair({p}_forward)\n"
        answers[cell] = code
    return judge_in_process(nb, answers)


@pytest.mark.parametrize("helpers", ["GENERIC_SETTRACE", "GENERIC_THREAD"])
def test_recurrent_numerical_backward_earns_nothing(helpers):
    nb = _source("07_recurrent/recurrent")
    cells = [("rnn_step_solution", ["rnn_step"]), ("rnn_sequence_solution", ["rnn"])]
    scores = _wrapped(nb, cells, globals()[helpers])
    assert scores["rnn_step"] < 1.0 and scores["rnn_sequence"] < 1.0, scores  # plain: 0.23


@pytest.mark.parametrize("helpers", ["GENERIC_CSTEP", "GENERIC_SETTRACE"])
def test_attention_numerical_backward_earns_nothing(helpers):
    nb = _source("08_attention/attention")
    scores = _wrapped(nb, [("attention_solution", ["attention"])], globals()[helpers])
    assert scores["attention_backward"] < 1.0, scores  # plain finite differences: 0.27


CONV_BACKWARD_FD = '''
def conv_backward_naive(dout, cache):
    """Numerical: conv is linear in x and in w, so one-sided differences with h=1 are exact."""
    x, w, b, conv_param = cache
    base = conv_forward_naive(x, w, b, conv_param)[0]
    grads = []
    for i, a in enumerate((x, w, b)):
        g = np.zeros(a.shape)
        for ix in np.ndindex(a.shape):
            args = [np.array(t, dtype=float, copy=True) for t in (x, w, b)]
            args[i][ix] += 1.0
            g[ix] = np.sum((conv_forward_naive(*args, conv_param)[0] - base) * dout)
        grads.append(g)
    return tuple(grads)
'''


def test_conv_backward_naive_by_finite_differences_earns_nothing():
    """06 has no by-hand rule: a plain finite difference (no tampering) earns 4 of 4."""
    nb = _source("06_convolution/convolution")
    forward = solution_sources(nb)["conv_naive_solution"].split("def conv_backward_naive")[0]
    scores = judge_in_process(nb, {"conv_naive_solution": forward + CONV_BACKWARD_FD})
    assert scores["conv_backward_naive"] < 1.0, scores
