"""Hidden checks of assignment 06, "Convolutional networks" (API: shared API.md, section 06).

Inputs are float64, seeded, with N, C, F, H and W all different (non-square images,
non-square filters, stride 2, padding 0 to 2) plus a square case where C = F and H = W,
random upstream gradients, and non-contiguous x and w. Max-pool inputs are permutations,
so no window has a tie. The kernel records outputs and measured numbers (an equivariance
error, a time ratio, an error against centred differences); the grader judges them.
"""

import time

import numpy as np

from course.data import digits
from course.gradcheck import numerical_gradient, rel_error
from course.grader.model import Broken, Check, Rule, register

NOTEBOOK = "06_convolution/convolution"

# (label, x shape, w shape, stride, pad)
CONV_CASES = (
    ("x (2, 3, 7, 5), w (4, 3, 3, 3), stride 1, pad 1", (2, 3, 7, 5), (4, 3, 3, 3), 1, 1),
    ("x (3, 2, 9, 6), w (5, 2, 3, 2), stride 2, pad 1", (3, 2, 9, 6), (5, 2, 3, 2), 2, 1),
    ("x (2, 4, 5, 5), w (4, 4, 3, 3), stride 1, pad 0 (square)", (2, 4, 5, 5), (4, 4, 3, 3), 1, 0),
    ("x (1, 3, 6, 8), w (2, 3, 5, 5), stride 1, pad 2", (1, 3, 6, 8), (2, 3, 5, 5), 1, 2),
)
NON_CONTIGUOUS = "non-contiguous x[:, ::2] and w transposed, stride 2, pad 1"
# Small enough for centred differences of a loop implementation.
SELFCHECK_CASES = (
    ("x (2, 2, 7, 5), w (3, 2, 3, 3), stride 2, pad 1", (2, 2, 7, 5), (3, 2, 3, 3), 2, 1),
    ("x (1, 3, 4, 3), w (2, 3, 2, 2), stride 1, pad 1", (1, 3, 4, 3), (2, 3, 2, 2), 1, 1),
)


def _conv_inputs(rng, x_shape, w_shape):
    return (
        rng.standard_normal(x_shape),
        rng.standard_normal(w_shape),
        rng.standard_normal(w_shape[0]),
    )


def _non_contiguous(rng):
    """x (2, 3, 5, 7) as every other channel of a wider array, w (4, 3, 3, 3) as a
    transposed view."""
    x = rng.standard_normal((2, 6, 5, 7))[:, ::2]
    w = rng.standard_normal((4, 3, 3, 3)).transpose(0, 1, 3, 2)
    return x, w, rng.standard_normal(4), {"stride": 2, "pad": 1}


def _cases(rng):
    """{label: (x, w, b, conv_param)}: every conv case, the non-contiguous one included."""
    cases = {}
    for label, x_shape, w_shape, stride, pad in CONV_CASES:
        x, w, b = _conv_inputs(rng, x_shape, w_shape)
        cases[label] = (x, w, b, {"stride": stride, "pad": pad})
    cases[NON_CONTIGUOUS] = _non_contiguous(rng)
    return cases


def _call_forward(forward, x, w, b, conv_param):
    return forward(x.copy() if x.flags.c_contiguous else x, w, b.copy(), dict(conv_param))


# ------------------------------------------------------------------- conv forward

EQUIVARIANCE = "shift (1, 2) of x (2, 3, 9, 10), w (4, 3, 3, 3), stride 1, pad 1"


def equivariance_error(forward, x, w, b, shift=(1, 2)) -> tuple[np.ndarray, float]:
    """(out for x, the largest |conv(shifted x) - shifted conv(x)| on pixels the border
    does not reach, relative to the output's largest entry)."""
    param = {"stride": 1, "pad": 1}
    out = np.asarray(forward(x.copy(), w.copy(), b.copy(), dict(param))[0], dtype=np.float64)
    moved = np.roll(x, shift, axis=(2, 3))
    out_moved = np.asarray(forward(moved, w.copy(), b.copy(), dict(param))[0], dtype=np.float64)
    if out.shape != out_moved.shape or out.ndim != 4:
        raise ValueError(f"outputs of shapes {out.shape} and {out_moved.shape}")
    (di, dj), (hh, ww) = shift, w.shape[2:]
    # Wrapped-around rows and columns, and those whose window reads the padding.
    rows = slice(di + hh // 2 + 1, out.shape[2] - hh // 2 - 1)
    cols = slice(dj + ww // 2 + 1, out.shape[3] - ww // 2 - 1)
    gap = np.roll(out, shift, axis=(2, 3))[:, :, rows, cols] - out_moved[:, :, rows, cols]
    return out, float(np.abs(gap).max() / max(1e-300, np.abs(out).max()))


def probe_conv_forward_naive(student, rng, out):
    for label, (x, w, b, param) in _cases(rng).items():
        out.record(
            f"out:{label}",
            lambda x=x, w=w, b=b, p=param: _call_forward(student.conv_forward_naive, x, w, b, p)[0],
        )
    x, w, b = _conv_inputs(rng, (2, 3, 9, 10), (4, 3, 3, 3))
    out.record(
        [f"out:{EQUIVARIANCE}", f"equivariance:{EQUIVARIANCE}"],
        lambda: equivariance_error(student.conv_forward_naive, x, w, b),
    )


CONV_OUT_HINT = (
    "out[n, f, i, j] = b[f] + sum(w[f] * x_pad[n, :, i*stride : i*stride + HH, "
    "j*stride : j*stride + WW]), x padded with `pad` zeros on all four sides; "
    "H' = 1 + (H + 2 pad - HH) // stride. The filter is not flipped: deep learning's "
    "convolution is a cross-correlation (PyTorch's conv2d convention)."
)

register(
    Check(
        name="conv_forward_naive",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_conv_forward_naive,
        rules={
            "out": Rule("output for", rtol=1e-10, hint=CONV_OUT_HINT),
            "equivariance": Rule(
                "largest gap between convolving a shifted input and shifting the output, on "
                "interior pixels, for",
                kind="below",
                rtol=1e-12,  # exact arithmetic in the same order: rounding only
                weight=2,
                hint="the same filter must be applied at every position: index the window "
                "by the output pixel (i * stride, j * stride) only.",
                requires="out",
            ),
        },
    )
)


# ------------------------------------------------------------------- conv backward


def _gradients(student_forward, student_backward, x, w, b, param, dout, selfcheck: bool):
    _, cache = _call_forward(student_forward, x, w, b, param)
    dx, dw, db = student_backward(dout.copy(), cache)
    results = [dx, dw, db]
    if selfcheck:
        inputs = {"x": x.copy(), "w": w.copy(), "b": b.copy()}
        errors = []
        for key, grad in (("x", dx), ("w", dw), ("b", db)):

            def f(v, key=key):
                args = {**{k: a.copy() for k, a in inputs.items()}, key: v}
                return student_forward(args["x"], args["w"], args["b"], dict(param))[0]

            numeric = numerical_gradient(f, inputs[key].copy(), dout)
            grad = np.asarray(grad, dtype=np.float64)
            errors.append(rel_error(grad, numeric) if grad.shape == numeric.shape else 1.0)
        results.append(max(errors))
    return results


def _out_shape(x_shape, w_shape, stride, pad):
    H_out = 1 + (x_shape[2] + 2 * pad - w_shape[2]) // stride
    W_out = 1 + (x_shape[3] + 2 * pad - w_shape[3]) // stride
    return (x_shape[0], w_shape[0], H_out, W_out)


def backward_probe(forward: str, backward: str, with_selfcheck: bool):
    def probe(student, rng, out):
        cases = _cases(rng)
        if with_selfcheck:
            for label, x_shape, w_shape, stride, pad in SELFCHECK_CASES:
                x, w, b = _conv_inputs(rng, x_shape, w_shape)
                cases[label] = (x, w, b, {"stride": stride, "pad": pad})
        small = {c[0] for c in SELFCHECK_CASES} if with_selfcheck else set()
        for label, (x, w, b, param) in cases.items():
            dout = rng.standard_normal(_out_shape(x.shape, w.shape, param["stride"], param["pad"]))
            keys = [f"dx:{label}", f"dw:{label}", f"db:{label}"]
            if label in small:
                keys.append(f"selfcheck:{label}")
            out.record(
                keys,
                lambda x=x, w=w, b=b, p=param, d=dout, s=label in small: _gradients(
                    getattr(student, forward), getattr(student, backward), x, w, b, p, d, s
                ),
            )

    return probe


GRADIENT_RULES = {
    "dx": Rule(
        "gradient dx for",
        rtol=1e-9,
        hint="each output pixel adds dout[n, f, i, j] * w[f] to the window of x_pad it read; "
        "windows overlap, so accumulate (+=), then cut the padding off.",
    ),
    "dw": Rule(
        "gradient dw for",
        rtol=1e-9,
        hint="dw[f] accumulates dout[n, f, i, j] times the window of x_pad, over n, i and j.",
    ),
    "db": Rule("gradient db for", rtol=1e-9, hint="db sums dout over n, i and j (axes 0, 2, 3)."),
}

register(
    Check(
        name="conv_backward_naive",
        notebook=NOTEBOOK,
        points=4,
        probe=backward_probe("conv_forward_naive", "conv_backward_naive", with_selfcheck=True),
        rules={
            **GRADIENT_RULES,
            "selfcheck": Rule(
                "dx, dw, db against centred differences of your own conv_forward_naive, for",
                kind="below",
                rtol=1e-6,  # a wrong gradient is off by 1e-2 or more; rounding gives 1e-9
                hint="the backward pass does not match the forward pass.",
                requires="dx",
            ),
        },
    )
)


# ------------------------------------------------------------------- max pooling

# (label, x shape, pool_height, pool_width, stride)
POOL_CASES = (
    ("x (2, 3, 6, 8), 2x2 pool, stride 2", (2, 3, 6, 8), 2, 2, 2),
    ("x (3, 2, 7, 5), 3x2 pool, stride 1 (overlapping)", (3, 2, 7, 5), 3, 2, 1),
    ("x (2, 4, 9, 9), 3x3 pool, stride 2 (overlapping, square)", (2, 4, 9, 9), 3, 3, 2),
)


def _without_ties(rng, shape):
    """Distinct values, well apart: no window has two maxima."""
    return (rng.permutation(int(np.prod(shape))).reshape(shape) - 40.0) / 7.0


def probe_max_pool(student, rng, out):
    for label, shape, ph, pw, stride in POOL_CASES:
        x = _without_ties(rng, shape)
        param = {"pool_height": ph, "pool_width": pw, "stride": stride}
        H_out, W_out = 1 + (shape[2] - ph) // stride, 1 + (shape[3] - pw) // stride
        dout = rng.standard_normal((shape[0], shape[1], H_out, W_out))
        out.record(
            f"out:{label}",
            lambda x=x, p=param: student.max_pool_forward_naive(x.copy(), dict(p))[0],
        )

        def backward(x=x, p=param, dout=dout):
            _, cache = student.max_pool_forward_naive(x.copy(), dict(p))
            return student.max_pool_backward_naive(dout.copy(), cache)

        out.record(f"dx:{label}", backward)


register(
    Check(
        name="max_pool_naive",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_max_pool,
        rules={
            "out": Rule(
                "max_pool_forward_naive output for",
                rtol=1e-12,
                hint="the maximum of x[n, c, i*stride : i*stride + pool_height, "
                "j*stride : j*stride + pool_width]; H' = 1 + (H - pool_height) // stride.",
            ),
            "dx": Rule(
                "max_pool_backward_naive dx for",
                rtol=1e-12,
                hint="dout[n, c, i, j] goes to the position of its window's maximum only; "
                "overlapping windows accumulate (+=).",
            ),
        },
    )
)


# ------------------------------------------------------------------- predictions


def probe_predictions(student, rng, out):
    out.record("shape:of the output", lambda: np.array(student.predicted_output_shape, dtype=float))
    out.record("field:of three 3x3 layers", lambda: float(student.predicted_receptive_field))
    out.record("ratio:im2col to input", lambda: float(student.predicted_im2col_ratio))


register(
    Check(
        name="predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_predictions,
        rules={
            "shape": Rule(
                "predicted shape",
                rtol=0,
                hint="(N, F, 1 + (H + 2 pad - HH) // stride, 1 + (W + 2 pad - WW) // stride).",
            ),
            "field": Rule(
                "predicted receptive field",
                rtol=0,
                hint="each 3x3 layer widens it by 2 pixels, starting from 1.",
            ),
            # Within 10% of the exact value: |got - want| <= rtol * (|got| + |want|).
            "ratio": Rule(
                "predicted im2col size",
                rtol=0.05,
                hint="each input pixel is copied once for every filter offset that reads it.",
            ),
        },
    )
)


# ------------------------------------------------------------------- fast convolution


def probe_conv_fast(student, rng, out):
    for label, (x, w, b, param) in _cases(rng).items():
        out.record(
            f"out:{label}",
            lambda x=x, w=w, b=b, p=param: _call_forward(student.conv_forward_fast, x, w, b, p)[0],
        )
    backward_probe("conv_forward_fast", "conv_backward_fast", with_selfcheck=False)(
        student, rng, out
    )


register(
    Check(
        name="conv_fast",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_conv_fast,
        rules={
            "out": Rule(
                "conv_forward_fast output for",
                rtol=1e-10,
                hint="the same result as the naive pair: im2col columns in the order of "
                "w.reshape(F, -1), the output back to (N, F, H', W').",
            ),
            **GRADIENT_RULES,
        },
    )
)


# The fixed layer the speed is measured on, and the yardstick: loops like the naive pair's.
SPEED_SHAPES = ((4, 3, 8, 8), (5, 3, 3, 3), {"stride": 1, "pad": 1})
REQUIRED_SPEEDUP = 20


def loop_conv_pair(x, w, b, conv_param, dout):
    """The reference naive forward and backward (loops over n, f, i, j): only a timer."""
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    H_out, W_out = 1 + (H + 2 * pad - HH) // stride, 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((N, F, H_out, W_out))
    dx_pad, dw = np.zeros_like(x_pad), np.zeros_like(w)
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                    out[n, f, i, j] = np.sum(window * w[f]) + b[f]
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    rows = slice(i * stride, i * stride + HH)
                    cols = slice(j * stride, j * stride + WW)
                    dw[f] += x_pad[n, :, rows, cols] * dout[n, f, i, j]
                    dx_pad[n, :, rows, cols] += w[f] * dout[n, f, i, j]
    return out, dx_pad[:, :, pad : pad + H, pad : pad + W], dw, dout.sum(axis=(0, 2, 3))


def speed_ratio(student, x, w, b, param, dout, rounds: int = 3) -> tuple[float, float]:
    """(the fast pair's error against the loops, its time / the loops' time).

    Both are timed in turn, `rounds` times, and each keeps its fastest run: a loaded
    machine slows single runs, rarely the best of several, and never one side alone.
    """

    def fast_pair():
        out, cache = student.conv_forward_fast(x.copy(), w.copy(), b.copy(), dict(param))
        return (out, *student.conv_backward_fast(dout.copy(), cache))

    loops, fast = [], []
    expected = got = None
    for _ in range(rounds):
        start = time.perf_counter()
        expected = loop_conv_pair(x, w, b, param, dout)
        loops.append(time.perf_counter() - start)
        for _ in range(5):
            start = time.perf_counter()
            got = fast_pair()
            fast.append(time.perf_counter() - start)
    error = max(
        rel_error(np.asarray(g, dtype=np.float64), e) for g, e in zip(got, expected, strict=True)
    )
    return error, min(fast) / min(loops)


def probe_conv_fast_speed(student, rng, out):
    x_shape, w_shape, param = SPEED_SHAPES
    x, w, b = _conv_inputs(rng, x_shape, w_shape)
    dout = rng.standard_normal(_out_shape(x_shape, w_shape, param["stride"], param["pad"]))
    label = f"x {x_shape}, w {w_shape}, stride 1, pad 1"

    def measure():
        got = student.conv_forward_fast(x.copy(), w.copy(), b.copy(), dict(param))[0]
        if np.shape(got) != dout.shape:
            return Broken(f"conv_forward_fast's output has shape {np.shape(got)}"), Broken("")
        return speed_ratio(student, x, w, b, param, dout)

    out.record([f"match:{label}", f"time:{label}"], measure)


register(
    Check(
        name="conv_fast_speed",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_conv_fast_speed,
        rules={
            "match": Rule(
                "fast pair's error against loops, for",
                kind="below",
                rtol=1e-10,
                hint="out, dx, dw and db must equal the naive pair's.",
            ),
            "time": Rule(
                "time of your fast forward + backward, as a share of loops over n, f, i, j, for",
                kind="below",
                rtol=1 / REQUIRED_SPEEDUP,
                weight=2,
                hint=f"it must be at least {REQUIRED_SPEEDUP} times faster (a correct im2col "
                "is over 100 times faster here): no Python loop over images, filters or "
                "pixels; a loop over the filter's HH x WW offsets is fine.",
                requires="match",
            ),
        },
    )
)


# ------------------------------------------------------------------- spatial batch norm

BN_CASES = (
    ("x (4, 3, 5, 6)", (4, 3, 5, 6)),
    ("x (3, 5, 4, 4)", (3, 5, 4, 4)),
)


def probe_spatial_batchnorm(student, rng, out):
    forward, backward = student.spatial_batchnorm_forward, student.spatial_batchnorm_backward
    for label, shape in BN_CASES:
        C = shape[1]
        # Channels of very different means and scales: a per-(n, c) or a pooled
        # normalisation shows.
        x = rng.uniform(-5, 5, C)[None, :, None, None] + rng.uniform(0.5, 4, C)[
            None, :, None, None
        ] * rng.standard_normal(shape)
        gamma, beta = rng.uniform(0.5, 2, C), rng.standard_normal(C)
        dout = rng.standard_normal(shape)
        running = {"running_mean": rng.standard_normal(C), "running_var": rng.uniform(0.5, 2, C)}

        def train(x=x, gamma=gamma, beta=beta, running=running):
            bn_param = {
                "mode": "train",
                "momentum": 0.8,
                **{k: v.copy() for k, v in running.items()},
            }
            result, _ = forward(x.copy(), gamma.copy(), beta.copy(), bn_param)
            return result, bn_param["running_mean"], bn_param["running_var"]

        out.record(
            [f"out:train mode, {label}", f"running:mean, {label}", f"running:var, {label}"], train
        )

        def test(x=x, gamma=gamma, beta=beta, running=running):
            bn_param = {"mode": "test", **{k: v.copy() for k, v in running.items()}}
            return forward(x.copy(), gamma.copy(), beta.copy(), bn_param)[0]

        out.record(f"out:test mode, {label}", test)

        def grads(x=x, gamma=gamma, beta=beta, dout=dout):
            _, cache = forward(x.copy(), gamma.copy(), beta.copy(), {"mode": "train"})
            dx, dgamma, dbeta = backward(dout.copy(), cache)
            dx = np.asarray(dx, dtype=np.float64)
            inputs = [x, gamma, beta]
            errors = []
            for position, grad in enumerate((dx, dgamma, dbeta)):

                def f(v, position=position):
                    args = [a.copy() for a in inputs]
                    args[position] = v
                    return forward(*args, {"mode": "train"})[0]

                numeric = numerical_gradient(f, inputs[position].copy(), dout)
                grad = np.asarray(grad, dtype=np.float64)
                errors.append(rel_error(grad, numeric) if grad.shape == numeric.shape else 1.0)
            # What normalising each channel forces: its dx sums to 0 (the raw sums, over
            # the size of dx, so the grader can judge them against rounding).
            sums = np.abs(dx.sum(axis=(0, 2, 3))).max() / max(1e-300, np.abs(dx).max())
            return dx, dgamma, dbeta, max(errors), sums

        keys = [f"{k}:{label}" for k in ("dx", "dgamma", "dbeta", "selfcheck", "sum")]
        out.record(keys, grads)


register(
    Check(
        name="spatial_batchnorm",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_spatial_batchnorm,
        rules={
            "out": Rule(
                "output in",
                rtol=1e-9,
                hint="normalise each channel over N, H and W together: move C last, reshape "
                "to (N*H*W, C), batchnorm_forward, and move C back.",
            ),
            "running": Rule(
                "running",
                rtol=1e-9,
                hint="running = momentum * running + (1 - momentum) * the batch's statistic, "
                "over N, H and W (biased variance).",
            ),
            "dx": Rule("gradient dx for", rtol=1e-8, hint="reshape dout like x in the forward."),
            "dgamma": Rule("gradient dgamma for", rtol=1e-8, hint="sum over N, H and W."),
            "dbeta": Rule("gradient dbeta for", rtol=1e-8, hint="sum over N, H and W."),
            "selfcheck": Rule(
                "dx, dgamma, dbeta against centred differences of your own forward, for",
                kind="below",
                rtol=1e-5,
                hint="the backward pass does not match the forward pass.",
                requires="dx",
            ),
            "sum": Rule(
                "largest per-channel sum of dx, over the largest |dx|, for",
                kind="below",
                rtol=1e-10,  # rounding gives 1e-15; a pooled or per-image one gives 1e-2
                hint="the mean is subtracted per channel, so each channel's dx sums to 0.",
                requires="dx",
            ),
        },
    )
)


# ------------------------------------------------------------------- the convnet

CONVNET_STEPS = 30
CONVNET_BATCH = 40
CONVNET_LEARNING_RATE = 0.1
CONVNET_REG = 1e-3
CONVNET_BAND = 1e-6  # relative, at every step: correct code differs by rounding only


def _convnet_params(rng, C, H, W, F, classes, scale=0.3):
    hidden = F * (H // 2) * (W // 2)
    return {
        "W1": scale * rng.standard_normal((F, C, 3, 3)),
        "b1": 0.1 * rng.standard_normal(F),
        "W2": scale * rng.standard_normal((hidden, classes)) / np.sqrt(hidden / 8),
        "b2": 0.1 * rng.standard_normal(classes),
    }


def _convnet_with(student, shape, F, classes, params, reg):
    net = student.SmallConvNet(input_dim=shape, num_filters=F, num_classes=classes, reg=reg, seed=0)
    for name, value in params.items():
        net.params[name] = value.copy()
    return net


def probe_convnet(student, rng, out):
    # A non-square image, channels different from filters: a hard-coded 8x8 or C = 1 shows.
    shape, F, classes, N = (2, 6, 4), 3, 5, 7
    params = _convnet_params(rng, *shape, F, classes)
    X = rng.standard_normal((N, *shape))
    y = rng.integers(0, classes, N)

    def construction():
        net = student.SmallConvNet(input_dim=shape, num_filters=F, num_classes=classes, seed=4)
        names = ["W1", "b1", "W2", "b2"]
        return np.concatenate([np.shape(net.params[n]) for n in names]).astype(float)

    out.record("shapes:of W1, b1, W2, b2", construction)
    out.record(
        "scores:on hidden weights",
        lambda: _convnet_with(student, shape, F, classes, params, 0.0).loss(X.copy()),
    )
    for reg in (0.0, 0.3):
        label = f"{'with' if reg else 'without'} regularisation"

        def compute(reg=reg):
            net = _convnet_with(student, shape, F, classes, params, reg)
            loss, grads = net.loss(X.copy(), y.copy())
            results = [np.asarray(loss, dtype=np.float64)] + [grads[n] for n in params]
            if not reg:  # centred differences once, where the regulariser counts too
                return results
            errors = []
            for name in params:

                def f(v, name=name):
                    return _convnet_with(student, shape, F, classes, {**params, name: v}, reg).loss(
                        X.copy(), y.copy()
                    )[0]

                numeric = numerical_gradient(f, params[name].copy())
                grad = np.asarray(grads[name], dtype=np.float64)
                errors.append(rel_error(grad, numeric) if grad.shape == numeric.shape else 1.0)
            return [*results, max(errors)]

        keys = [f"loss:{label}"] + [f"grad:{n}, {label}" for n in params]
        keys += [f"selfcheck:{label}"] if reg else []
        out.record(keys, compute)

    data = digits()
    picked = rng.choice(len(data.y_train), CONVNET_BATCH * 3, replace=False)
    X_digits = (data.X_train[picked] - data.X_train.mean(axis=0)).reshape(-1, 1, 8, 8)
    y_digits = data.y_train[picked]
    start = _convnet_params(rng, 1, 8, 8, 4, 10, scale=0.2)

    def curve():
        net = _convnet_with(student, (1, 8, 8), 4, 10, start, CONVNET_REG)
        losses = []
        for step in range(CONVNET_STEPS):
            rows = slice((step % 3) * CONVNET_BATCH, (step % 3 + 1) * CONVNET_BATCH)
            loss, grads = net.loss(X_digits[rows].copy(), y_digits[rows].copy())
            losses.append(float(loss))
            for name in net.params:
                net.params[name] = net.params[name] - CONVNET_LEARNING_RATE * grads[name]
        return np.array(losses)

    out.record("curve:training loss on the digits, 30 steps of SGD from hidden weights", curve)


register(
    Check(
        name="convnet_training",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_convnet,
        rules={
            "shapes": Rule(
                "parameter shapes",
                rtol=0,
                hint="W1 (F, C, 3, 3), b1 (F,), W2 (F * (H // 2) * (W // 2), classes), b2.",
            ),
            "scores": Rule(
                "scores",
                rtol=1e-9,
                hint="conv (stride 1, pad 1) - relu - 2x2 max pool (stride 2) - affine.",
            ),
            "loss": Rule(
                "loss",
                rtol=1e-9,
                hint="softmax loss plus 0.5 * reg * (sum(W1**2) + sum(W2**2)), not the biases.",
            ),
            "grad": Rule(
                "gradient of",
                rtol=1e-8,
                hint="backpropagate through affine, pool, relu and conv in reverse; the "
                "regulariser adds reg * W.",
            ),
            "selfcheck": Rule(
                "gradients against centred differences of your own loss,",
                kind="below",
                rtol=1e-5,
                hint="a gradient does not match the loss it comes from.",
                requires="loss",
            ),
            "curve": Rule(
                "",
                rtol=CONVNET_BAND,
                weight=3,
                hint="a gradient of SmallConvNet, or its loss, that is wrong, even slightly.",
                picture="curve",
            ),
        },
    )
)
