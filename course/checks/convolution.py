"""Hidden checks of assignment 06, "Convolutional networks" (API: shared API.md, section 06).

Every shape and value is drawn from the check's (secret) seed: N, C, F, H and W all
different (non-square images, non-square filters, stride 2, padding 0 to 2) plus a square
case where C = F and H = W, random upstream gradients, non-contiguous x and w. Max-pool
inputs are permutations, so no window has a tie.

The kernel records observations only: outputs, gradients, forward values at nudged inputs,
the outputs for an input and its shifted copy, the times of the fast pair and of loops run
side by side. The grader decides every invariant (equivariance, the per-channel sums of
spatial batch norm's dx, the centred differences, the speed ratio) from those raw numbers.
"""

import dataclasses
import time

import numpy as np

from course.checks.common import (
    BY_HAND_RULE,
    CARRIED_03,
    WRONG_VALUE_CAP,
    away_from_zero,
    clear_of_kinks,
    drawn_with,
    moments,
    nudged_observation,
    record_large,
    self_check_rule,
    stacked,
    training_curve_rule,
    with_large,
)
from course.data import digits
from course.grader.model import Assignment, Broken, Check, Rule, register
from course.grader.probe import lines_run, seeded_by_grader

ASSIGNMENT = Assignment(
    id="06_convolution",
    notebook="convolution",
    title="06 Convolutional networks",
    builds=(
        "convolution and max pooling with loops, then a vectorised convolution (im2col) at "
        "least 20x faster, spatial batch norm on your 05 batch norm, a small convnet on the "
        "digits"
    ),
    leak=(
        "the same arithmetic costs hundreds of times more as Python loops; im2col buys its "
        "speed with memory; the shapes decide the output size, the receptive field and "
        "He's fan-in"
    ),
    slow_cells=frozenset({"convnet_training"}),
)
NOTEBOOK = ASSIGNMENT.key

# 05's batch norm, carried forward (course.carry): spatial batch norm runs through it.
CARRIED_05 = {
    "batchnorm_forward": "batchnorm_forward",
    "batchnorm_backward": "batchnorm_backward",
}


def _distinct(rng, low: int, high: int, count: int) -> list[int]:
    """`count` different integers in [low, high)."""
    return [int(v) for v in rng.choice(np.arange(low, high), count, replace=False)]


def _size(rng, out_low: int, out_high: int, filter_size: int, stride: int, pad: int) -> int:
    """An input size that the filter tiles exactly: (size + 2 pad - filter) % stride == 0."""
    out = int(rng.integers(out_low, out_high))
    return (out - 1) * stride + filter_size - 2 * pad


def _conv_case(rng, HH, WW, stride, pad, square=False, small=False):
    """x, w, b, conv_param: N, C, F, H and W all different (C = F and H = W if square);
    small: few enough elements for centred differences of loops."""
    N, C, F = _distinct(rng, 1, 4 if small else 6, 3)
    top = 4 if small else 6
    H = _size(rng, 2, top, HH, stride, pad)
    W = H if square else _size(rng, 2, top, WW, stride, pad)
    if not square and W == H:
        W += stride  # still tiled (no loop: a probe helper may be replaced in the kernel)
    if square:
        F = C
    x = rng.standard_normal((N, C, H, W))
    w = rng.standard_normal((F, C, HH, WW))
    return x, w, rng.standard_normal(F), {"stride": stride, "pad": pad}


def _non_contiguous(rng):
    """x as every other channel of a wider array, w as a transposed view (3x3 filters, so
    the transpose keeps the shape), stride 2, pad 1."""
    N, C, F = _distinct(rng, 1, 6, 3)
    H, W = _size(rng, 3, 5, 3, 2, 1), _size(rng, 5, 7, 3, 2, 1)
    x = rng.standard_normal((N, 2 * C, H, W))[:, ::2]
    w = rng.standard_normal((F, C, 3, 3)).transpose(0, 1, 3, 2)
    return x, w, rng.standard_normal(F), {"stride": 2, "pad": 1}


def _cases(rng):
    """{label: (x, w, b, conv_param)}: stride 1 and 2, pad 0 to 2, a non-square filter, a
    square case and non-contiguous inputs."""
    return {
        "3x3 filters, stride 1, pad 1": _conv_case(rng, 3, 3, 1, 1),
        "3x2 filters, stride 2, pad 1": _conv_case(rng, 3, 2, 2, 1),
        "square: C = F, H = W, 3x3 filters, stride 1, pad 0": _conv_case(rng, 3, 3, 1, 0, True),
        "5x5 filters, stride 1, pad 2": _conv_case(rng, 5, 5, 1, 2),
        "non-contiguous x[:, ::2] and w transposed, stride 2, pad 1": _non_contiguous(rng),
    }


def _call_forward(forward, x, w, b, conv_param):
    # Non-contiguous inputs are passed as they are (views); the others as copies.
    x_in = x.copy() if x.flags.c_contiguous else x
    w_in = w.copy() if w.flags.c_contiguous else w
    return forward(x_in, w_in, b.copy(), dict(conv_param))


def _dout_for(rng, x, w, conv_param):
    """A random upstream gradient shaped like the convolution's output."""
    stride, pad = conv_param["stride"], conv_param["pad"]
    H_out = 1 + (x.shape[2] + 2 * pad - w.shape[2]) // stride
    W_out = 1 + (x.shape[3] + 2 * pad - w.shape[3]) // stride
    return rng.standard_normal((x.shape[0], w.shape[0], H_out, W_out))


# ------------------------------------------------------------------- conv forward

# The shift and the layer of the equivariance check are fixed (the grader reads the
# observation with them); the sizes and the values are drawn.
SHIFT = (1, 2)
EQUIVARIANCE = "a shift (1, 2) of x, 3x3 filters, stride 1, pad 1"


def _equivariance_gap(got, want) -> float:
    """measure: (out for x, out for x rolled by SHIFT) stacked: the largest
    |shifted out - out of the shifted x| on pixels that neither the wrap-around nor the
    padding reaches, relative to the output's largest entry."""
    got = np.asarray(got, dtype=np.float64)
    if got.ndim != 5 or len(got) != 2 or not np.all(np.isfinite(got)):
        return float("inf")
    out, out_moved = got
    (di, dj), half = SHIFT, 1  # 3x3 filters: the padding reaches 1 pixel in
    rows = slice(di + half + 1, out.shape[2] - half - 1)
    cols = slice(dj + half + 1, out.shape[3] - half - 1)
    gap = np.roll(out, SHIFT, axis=(2, 3))[:, :, rows, cols] - out_moved[:, :, rows, cols]
    largest = float(np.abs(out).max()) if out.size else 0.0
    if gap.size == 0 or largest == 0:
        return float("inf")
    return float(np.abs(gap).max() / largest)


def probe_conv_forward_naive(student, rng, out):
    """conv_forward_naive's outputs on _cases (strides, pads, non-square inputs and filters),
    the outputs of a shifted input beside the shifted outputs (equivariance), and a shape the
    filter cannot tile, which must raise."""
    forward = student.conv_forward_naive
    for label, (x, w, b, param) in _cases(rng).items():
        out.record(
            f"out:{label}", lambda x=x, w=w, b=b, p=param: _call_forward(forward, x, w, b, p)[0]
        )
    N, C, F = _distinct(rng, 1, 6, 3)
    H, W = _distinct(rng, 9, 13, 2)
    x, w, b = (
        rng.standard_normal((N, C, H, W)),
        rng.standard_normal((F, C, 3, 3)),
        rng.standard_normal(F),
    )

    def shifted():
        param = {"stride": 1, "pad": 1}
        first = np.asarray(forward(x.copy(), w.copy(), b.copy(), dict(param))[0], dtype=np.float64)
        moved = np.roll(x, SHIFT, axis=(2, 3))
        second = np.asarray(forward(moved, w.copy(), b.copy(), dict(param))[0], dtype=np.float64)
        return first, np.stack([first, second])

    out.record([f"out:{EQUIVARIANCE}", f"equivariance:{EQUIVARIANCE}"], shifted)
    # A 3x3 filter, stride 2, no padding, on an even height: (H - 3) % 2 != 0.
    untiled = rng.standard_normal(
        (N, C, 2 * int(rng.integers(3, 6)), 2 * int(rng.integers(2, 5)) + 1)
    )
    out.record(
        f"tiling:{UNTILED}",
        lambda: forward(untiled.copy(), w.copy(), b.copy(), {"stride": 2, "pad": 0})[0],
    )
    record_untiled_width(out, rng, forward, w, b)


UNTILED = "a 3x3 filter, stride 2, pad 0, on an even height (it does not tile)"
UNTILED_WIDTH = "a 3x3 filter, stride 2, pad 0, on an odd height, even width (it does not tile)"


def record_untiled_width(out, rng, forward, w, b):
    """Review 60: the height tiled, the width not (a test of the rows alone passes the
    height-only case): (H - 3) % 2 == 0, (W - 3) % 2 != 0. w is (F, C, 3, 3)."""
    N = int(rng.integers(1, 4))
    shape = (N, w.shape[1], 2 * int(rng.integers(2, 5)) + 1, 2 * int(rng.integers(3, 6)))
    untiled = rng.standard_normal(shape)
    out.record(
        f"tiling:{UNTILED_WIDTH}",
        lambda: forward(untiled.copy(), w.copy(), b.copy(), {"stride": 2, "pad": 0})[0],
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
            "out": Rule("output for", rtol=1e-10, hint=CONV_OUT_HINT, cap=WRONG_VALUE_CAP),
            # Raising on every call fails the rest (and caps the cell): weighed lightly.
            "tiling": Rule(
                "",
                raises="ValueError",
                weight=0.5,
                hint="if (H + 2 pad - HH) or (W + 2 pad - WW) is not a multiple of the "
                "stride, raise a ValueError (the exercise says so).",
            ),
            "equivariance": Rule(
                "largest gap between convolving a shifted input and shifting the output, on "
                "interior pixels, relative to the output's size, for",
                kind="below",
                rtol=1e-12,  # the same products in the same order: rounding only
                weight=2,
                hint="the same filter must be applied at every position: index the window "
                "by the output pixel (i * stride, j * stride) only.",
                requires="out",
                measure=_equivariance_gap,
            ),
        },
    )
)


# ------------------------------------------------------------------- conv backward


def _small_cases(rng):
    """Small enough for centred differences of a loop implementation."""
    return {
        "small, 3x3 filters, stride 2, pad 1": _conv_case(rng, 3, 3, 2, 1, small=True),
        "small, 3x2 filters, stride 1, pad 1": _conv_case(rng, 3, 2, 1, 1, small=True),
    }


def record_gradients(
    out, forward, backward, cases, rng, selfcheck: set, by_hand: bool = False
) -> None:
    """dx, dw, db for random upstream gradients; for the labels in `selfcheck`, also the
    student's forward output and their own forward values at nudged x, w and b
    (projected on dout: the grader forms the centred differences); by_hand: also the lines
    of their own code the forward and the backward ran (course.checks.common.by_hand)."""
    for label, (x, w, b, param) in cases.items():
        dout = _dout_for(rng, x, w, param)

        def compute(x=x, w=w, b=b, param=param, dout=dout, label=label):
            (result, cache), forward_lines = lines_run(
                lambda: _call_forward(forward, x, w, b, param)
            )
            (dx, dw, db), backward_lines = lines_run(lambda: backward(dout.copy(), cache))
            work = (np.array([forward_lines, backward_lines]),) if by_hand else ()
            if label not in selfcheck:
                return dx, dw, db, *work
            inputs = {"x": np.array(x), "w": np.array(w), "b": b}
            observed = []
            for key, grad in (("x", dx), ("w", dw), ("b", db)):

                def f(v, key=key):
                    args = {**{k: np.array(a, copy=True) for k, a in inputs.items()}, key: v}
                    return forward(args["x"], args["w"], args["b"], dict(param))[0]

                observed.append(nudged_observation(grad, f, inputs[key], dout))
            return dx, dw, db, result, stacked(*observed), *work

        keys = [f"dx:{label}", f"dw:{label}", f"db:{label}"]
        if label in selfcheck:
            keys += [f"forward:{label}", f"selfcheck:{label}"]
        if by_hand:
            keys.append(f"byhand:{label}")
        out.record(keys, compute)


def probe_conv_backward_naive(student, rng, out):
    """conv_backward_naive's gradients on every case (the small ones also with the forward at
    nudged inputs), the lines it ran, and a large case timed against a budget."""
    cases = _cases(rng)
    small = _small_cases(rng)
    record_gradients(
        out,
        student.conv_forward_naive,
        student.conv_backward_naive,
        {**cases, **small},
        rng,
        set(small),
        by_hand=True,
    )
    record_conv_large(out, rng, student.conv_forward_naive, student.conv_backward_naive, 1)


def record_conv_large(out, rng, forward, backward, N: int) -> None:
    """The large case of a convolution pair (common.record_large): few output pixels, each
    reading a window of C x 7 x 7 that overlaps nearly every other; a numerical gradient
    needs one forward pass per element of w (F at once) and about one per element of x:
    thousands, each as long as the whole forward pass (N images: a fast pair's forward is
    made longer, not the count)."""
    C = int(rng.integers(56, 72))

    def run(own):
        x, w = own.standard_normal((N, C, 10, 10)), own.standard_normal((4, C, 7, 7))
        b, param = own.standard_normal(4), {"stride": 1, "pad": 1}
        dout = own.standard_normal((N, 4, 6, 6))
        return (
            lambda: _call_forward(forward, x, w, b, param)[1],
            lambda cache: backward(dout, cache),
        )

    record_large(out, rng, f"x of {N} by {C} by 10 by 10, 4 filters of 7x7, pad 1", run)


GRADIENT_RULES = {
    "dx": Rule(
        "gradient dx for",
        rtol=1e-9,
        cap=WRONG_VALUE_CAP,
        hint="each output pixel adds dout[n, f, i, j] * w[f] to the window of x_pad it read; "
        "windows overlap, so accumulate (+=), then cut the padding off.",
    ),
    "dw": Rule(
        "gradient dw for",
        rtol=1e-9,
        cap=WRONG_VALUE_CAP,
        hint="dw[f] accumulates dout[n, f, i, j] times the window of x_pad, over n, i and j.",
    ),
    "db": Rule(
        "gradient db for",
        rtol=1e-9,
        cap=WRONG_VALUE_CAP,
        hint="db sums dout over n, i and j (axes 0, 2, 3).",
    ),
}

CONV_BACKWARD_NAIVE = register(
    Check(
        name="conv_backward_naive",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_conv_backward_naive,
        builds_on={"conv_forward_naive": {"out": "conv_forward_naive"}},  # its cache
        rules={
            # Round 9: a finite difference of the forward is exact here (the convolution
            # is linear), so only the work it does tells it from a backward pass.
            **{k: dataclasses.replace(r, requires="byhand") for k, r in GRADIENT_RULES.items()},
            "byhand": BY_HAND_RULE,
            "forward": Rule("forward output for", rtol=1e-10, weight=0.5, hint=CONV_OUT_HINT),
            "selfcheck": self_check_rule(
                "dx, dw, db",
                "conv_forward_naive",
                rtol=1e-6,  # a wrong gradient is off by 1e-2 or more; rounding gives 1e-9
                hint="the backward pass does not match the forward pass.",
                requires=("forward", "byhand"),
            ),
        },
    )
)
CONV_BACKWARD_NAIVE.rules = with_large(CONV_BACKWARD_NAIVE.rules, ("dx", "dw", "db", "selfcheck"))


# ------------------------------------------------------------------- max pooling


def _without_ties(rng, shape):
    """Distinct values, well apart: no window has two maxima."""
    size = int(np.prod(shape))
    return (rng.permutation(size).reshape(shape) - size / 2) / 7.0


def _pool_cases(rng):
    """(label, x shape, pool_height, pool_width, stride): sizes drawn, each tiled exactly."""
    cases = []
    for label, ph, pw, stride, square in (
        ("2x2 pool, stride 2", 2, 2, 2, False),
        ("3x2 pool, stride 1 (overlapping)", 3, 2, 1, False),
        ("3x3 pool, stride 2 (overlapping, square x)", 3, 3, 2, True),
    ):
        N, C = _distinct(rng, 1, 5, 2)
        H = _size(rng, 2, 5, ph, stride, 0)
        W = H if square else _size(rng, 2, 5, pw, stride, 0)
        if not square and W == H:
            W += stride
        cases.append((label, (N, C, H, W), ph, pw, stride))
    return cases


def probe_max_pool(student, rng, out):
    """Max pooling's outputs and dx on windows drawn without ties (no window has two maxima),
    and a large case of overlapping windows timed against a budget."""
    for label, shape, ph, pw, stride in _pool_cases(rng):
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

    # Large: 3x3 windows of 32x32, overlapping by half: every element of a window shares an
    # output with the 1023 others, so a numerical gradient needs about 1000 forward passes
    # even coloured, one per element (65,536) if not; routing dout costs about one.
    shape, param = (2, 8, 64, 64), {"pool_height": 32, "pool_width": 32, "stride": 16}

    def run(own):
        x = (own.permutation(int(np.prod(shape))).reshape(shape) - 2**15) / 7.0  # no ties
        dout = own.standard_normal((2, 8, 3, 3))
        return (
            lambda: student.max_pool_forward_naive(x, dict(param))[1],
            lambda cache: student.max_pool_backward_naive(dout, cache),
        )

    record_large(out, rng, "x of 2 by 8 by 64 by 64, 32x32 pools, stride 16", run)


MAX_POOL_NAIVE = register(
    Check(
        name="max_pool_naive",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_max_pool,
        rules={
            "out": Rule(
                "max_pool_forward_naive output for",
                rtol=1e-12,
                cap=WRONG_VALUE_CAP,
                hint="the maximum of x[n, c, i*stride : i*stride + pool_height, "
                "j*stride : j*stride + pool_width]; H' = 1 + (H - pool_height) // stride.",
            ),
            "dx": Rule(
                "max_pool_backward_naive dx for",
                rtol=1e-12,
                cap=WRONG_VALUE_CAP,
                hint="dout[n, c, i, j] goes to the position of its window's maximum only; "
                "overlapping windows accumulate (+=).",
            ),
        },
    )
)
MAX_POOL_NAIVE.rules = with_large(MAX_POOL_NAIVE.rules, ("dx",))


# ------------------------------------------------------------------- predictions


def probe_predictions(student, rng, out):
    """The learner's predicted numbers (an output shape, receptive fields, cost ratios) for
    settings drawn from the seed: a number written for the notebook's settings alone is right
    only there."""
    # Settings from the (secret) seed: an answer written for the notebook's settings
    # alone (a number, not the formula) is right only there.
    N, C, F = _distinct(rng, 2, 12, 3)
    HH, WW = _distinct(rng, 2, 6, 2)
    stride, pad = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    H_out, W_out = _distinct(rng, 5, 16, 2)  # sizes the filter tiles exactly
    H, W = (H_out - 1) * stride + HH - 2 * pad, (W_out - 1) * stride + WW - 2 * pad
    out.record(
        "shape:of the output",
        lambda: np.array(
            student.predicted_output_shape((N, C, H, W), (F, C, HH, WW), stride, pad), dtype=float
        ),
    )
    # Three settings each, judged together: one small formula's answers are few, and a value
    # replayed from another run must not match all three by chance.
    fields = [(int(rng.integers(2, 9)), int(rng.choice([3, 5, 7]))) for _ in range(3)]
    out.record(
        "field:of stacks of stride-1 layers",
        lambda: np.array([student.predicted_receptive_field(n, k) for n, k in fields], float),
    )
    ratios = [(*_distinct(rng, 1, 8, 2), int(rng.integers(1, 3))) for _ in range(3)]
    if all(stride == 1 for *_, stride in ratios):
        # A stride of 2 in one setting at least: with every stride 1, HH * WW / stride (the
        # stride counted along one axis) was right at all three, full marks on 1 seed in 8
        # (review 54). Set without a draw: the other seeds' inputs stay as they were.
        ratios[-1] = (*ratios[-1][:2], 2)
    out.record(
        "ratio:im2col to input",
        lambda: np.array([student.predicted_im2col_ratio(h, w, s) for h, w, s in ratios], float),
    )


IM2COL_HINT = (
    "each window is one column of HH * WW * C entries, and there is one window per output "
    "pixel: about (H / stride) * (W / stride) of them, the stride dividing the rows and the "
    "columns both."
)


def _im2col_factors(want):
    """Rule.factors of the im2col ratio: HH * WW / stride (the stride counted along one axis)
    is twice the reference where every drawn stride is 2, which the classic factor called "a
    contribution counted twice? h instead of 2h?" (review 54). Named without the factor: one
    number per setting, a factor would give the expected values away."""
    return {2.0: ("is off at every setting, beyond the tolerance (5e-02)", IM2COL_HINT)}


register(
    Check(
        name="conv_predictions",
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
                hint="one pixel sees itself; each stride-1 layer of k x k filters widens that "
                "by k - 1 pixels.",
            ),
            # The judge's tolerance is relative to |got| + |want|: 0.05 is about 10%.
            "ratio": Rule(
                "predicted im2col size",
                rtol=0.05,
                hint=IM2COL_HINT,
                factors=_im2col_factors,
            ),
        },
    )
)


# ------------------------------------------------------------------- fast convolution


def probe_conv_fast(student, rng, out):
    """The fast convolution's outputs and gradients on the same cases as the naive one's, the
    lines its backward ran, and a large case timed against a budget."""
    forward = student.conv_forward_fast
    cases = _cases(rng)
    for label, (x, w, b, param) in cases.items():
        out.record(
            f"out:{label}", lambda x=x, w=w, b=b, p=param: _call_forward(forward, x, w, b, p)[0]
        )
    record_gradients(out, forward, student.conv_backward_fast, cases, rng, set(), by_hand=True)
    record_conv_large(out, rng, forward, student.conv_backward_fast, 4)


CONV_FAST = register(
    Check(
        name="conv_fast",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_conv_fast,
        rules={
            "out": Rule(
                "conv_forward_fast output for",
                rtol=1e-10,
                cap=WRONG_VALUE_CAP,
                hint="the same result as the naive pair: im2col columns in the order of "
                "w.reshape(F, -1), the output back to (N, F, H', W').",
            ),
            **{k: dataclasses.replace(r, requires="byhand") for k, r in GRADIENT_RULES.items()},
            "byhand": BY_HAND_RULE,
        },
    )
)
CONV_FAST.rules = with_large(CONV_FAST.rules, tuple(GRADIENT_RULES))


# The fixed layer the speed is measured on (its values are drawn, fresh for every timed
# call), and the yardstick: loops that cost what the naive pair's loops cost, run in the
# same kernel, in turn with the fast pair.
SPEED_SHAPES = ((4, 3, 8, 8), (5, 3, 3, 3), {"stride": 1, "pad": 1})
SPEED_LABEL = "x (4, 3, 8, 8), w (5, 3, 3, 3), stride 1, pad 1"
REQUIRED_SPEEDUP = 20
SPEED_ROUNDS = 3  # each round: the loops once, then the fast pair FAST_RUNS times
# Many runs, so that a grade cell's own cost (its messages, the payload, a first call's
# warm-up), which the grader's clock counts too, is small beside them (CELL_ALLOWANCE).
FAST_RUNS = 500
# A pair whose runs have taken this long in all is far too slow: it stops there
# (its digests are then too few, and the speed fails) rather than run into the cell's
# timeout, which would cut the notebook off.
RUNS_BUDGET = 20.0  # seconds (a third of a cell timeout)


def loop_conv_pair(x, w, b, conv_param, dout):
    """The speed check's yardstick, only a timer: the naive pair's loops over n, f, i, j
    (a forward nest and a backward nest over the same windows, the same NumPy calls on
    arrays of the same shapes), with arithmetic that computes no convolution and no
    gradient. The course package is readable from a student's kernel: it gives away no
    graded answer."""
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
                    out[n, f, i, j] = np.sum(window - w[f]) - b[f]
    for n in range(N):
        for f in range(F):
            for i in range(H_out):
                for j in range(W_out):
                    rows = slice(i * stride, i * stride + HH)
                    cols = slice(j * stride, j * stride + WW)
                    dw[f] -= x_pad[n, :, rows, cols] - dout[n, f, i, j]
                    dx_pad[n, :, rows, cols] -= w[f] - dout[n, f, i, j]
    return out, dx_pad[:, :, pad : pad + H, pad : pad + W], dw, dout.max(axis=(0, 2, 3))


def _speed_ratio(got, want) -> float:
    """measure: the fastest run of the student's fast pair over the fastest run of the
    loops, from (loops' times, fast pair's times) measured in turn in one kernel. The best
    of several runs is what a loaded machine disturbs least, and taking them in turn puts
    the load on both alike."""
    loops, fast = (np.asarray(t, dtype=np.float64) for t in got)
    if loops.size < SPEED_ROUNDS or fast.size < SPEED_ROUNDS:
        return float("inf")
    if not (np.all(np.isfinite(loops)) and np.all(np.isfinite(fast))):
        return float("inf")
    if loops.min() <= 0 or fast.min() <= 0:
        return float("inf")
    return float(fast.min() / loops.min())


def _speed_probe(loops, clock):
    """The speed check's probe, with the yardstick and the clock it times bound now (when
    the module is imported), not looked up by name at timing time: a student cell that
    rebinds `loop_conv_pair` or `time.process_time` later changes nothing here.

    In a grading run (the grader set this check's seed) the kernel times nothing that
    counts: it runs the fast pair TIMED_RUNS times on fresh inputs, and records a digest of
    every run's results (judged, so that every run happened); the grader times the whole
    cell from outside and the yardstick in its own process (grader_timing). The loops run
    here only where no grader set the seed (judged in one process: the mutation tests)."""

    def probe_conv_fast_speed(student, rng, out):
        x_shape, w_shape, param = SPEED_SHAPES
        graded = seeded_by_grader("conv_fast_speed")

        def draw():
            # Fresh inputs of the same shapes for every call, drawn before any timing: a
            # pair that remembers its answers pays full price every time.
            x, w, b = (
                rng.standard_normal(x_shape),
                rng.standard_normal(w_shape),
                rng.standard_normal(w_shape[0]),
            )
            return x, w, b, _dout_for(rng, x, w, param)

        checked = draw()

        def fast_pair(x, w, b, dout):
            result, cache = student.conv_forward_fast(x, w, b, dict(param))
            return (result, *student.conv_backward_fast(dout, cache))

        def flat(results):
            return np.concatenate([np.ravel(np.asarray(g, dtype=np.float64)) for g in results])

        def measure():
            spent = []  # the fast pair's runs so far (RUNS_BUDGET)
            got = fast_pair(*(a.copy() for a in checked))
            # Drawn only once the checked call returned (a pair that raises costs no 1500
            # draws), in the order they always were: the same inputs for the same seed.
            for_loops = [draw() for _ in range(SPEED_ROUNDS)]
            for_fast = [[draw() for _ in range(FAST_RUNS)] for _ in range(SPEED_ROUNDS)]
            projections = rng.standard_normal((SPEED_ROUNDS, FAST_RUNS, size))
            loop_times, fast_times, digests = [], [], []
            for inputs, runs, weights in zip(for_loops, for_fast, projections, strict=True):
                x, w, b, dout = inputs
                start = clock()
                if not graded:
                    loops(x, w, b, param, dout)
                loop_times.append(clock() - start)
                best = []
                for (x, w, b, dout), weight in zip(runs, weights, strict=True):
                    if sum(spent) > RUNS_BUDGET:
                        break
                    start = clock()
                    results = fast_pair(x, w, b, dout)
                    best.append(clock() - start)
                    spent.append(best[-1])
                    digests.append(float(flat(results) @ weight))
                fast_times.append(min(best, default=float("inf")))
            times = np.array([loop_times, fast_times], dtype=np.float64)
            return flat(got), np.array(digests), times

        size = flat(fast_pair_shapes()).size
        out.record([f"pair:{SPEED_LABEL}", f"runs:{SPEED_LABEL}", f"time:{SPEED_LABEL}"], measure)

    return probe_conv_fast_speed


def fast_pair_shapes():
    """Arrays shaped like the fast pair's results on the speed layer: out, dx, dw, db."""
    (N, C, H, W), (F, _, HH, WW), param = SPEED_SHAPES
    H_out = 1 + (H + 2 * param["pad"] - HH) // param["stride"]
    W_out = 1 + (W + 2 * param["pad"] - WW) // param["stride"]
    return (
        np.zeros((N, F, H_out, W_out)),
        np.zeros((N, C, H, W)),
        np.zeros((F, C, HH, WW)),
        np.zeros(F),
    )


# Where no grader times the cell (judged in one process: the mutation tests, a learner's
# own run of the hidden check), the loops and the pair are timed in CPU seconds of this
# process: the machine's other work does not count against either (issue 55: a ci run
# beside other load gave a correct alternate 0.66 of the speed's 2 points by the wall
# clock).
probe_conv_fast_speed = _speed_probe(loop_conv_pair, time.process_time)

# Every fast pair a graded speed cell runs: the checked one and the timed ones.
TIMED_RUNS = 1 + SPEED_ROUNDS * FAST_RUNS
# What of a speed cell's wall time is not charged to the fast pair: its fixed cost in the
# kernel and the messages. Measured (`course bench --conv`): the solution's whole cell
# takes well under a second, of which the fixed part is tens of milliseconds idle, a few
# hundred under load. Over 1501 runs the allowance is 0.2 ms a run, about 1/60 of the
# yardstick (10-20 ms here): a pair 20 times faster than the loops passes with room to
# spare, one 10 times faster does not.
CELL_ALLOWANCE = 0.3  # seconds


# The yardstick is timed for about as long as the cell ran (within these bounds), in
# SPEED_ROUNDS groups, each group's mean run kept: on a busy machine the cell's seconds are
# an average over the load, so the yardstick's must be too (the fastest single run caught a
# quiet moment and failed a correct pair when three graders shared two cores).
YARDSTICK_SECONDS = (0.05, 3.0)


def grader_timing(seconds: float | None) -> dict:
    """The speed observation of a grading run, made in the grader's process: the yardstick
    timed here (no student code has run in this process, so nothing changed NumPy or the
    clock; the kernel is gone), beside the seconds the grader's executor saw the grade cell
    take, all of it (the fast pair's TIMED_RUNS runs and the cell's overhead, less
    CELL_ALLOWANCE) charged to the fast pair."""
    if seconds is None:
        return {f"time:{SPEED_LABEL}": Broken("the grader did not time this cell")}
    x_shape, w_shape, param = SPEED_SHAPES
    rng = np.random.default_rng()
    low, high = YARDSTICK_SECONDS
    group = min(max(float(seconds), low), high) / SPEED_ROUNDS
    loop_times = []
    for _ in range(SPEED_ROUNDS):
        runs, spent = 0, 0.0
        while runs == 0 or spent < group:
            x, w = rng.standard_normal(x_shape), rng.standard_normal(w_shape)
            b, dout = rng.standard_normal(w_shape[0]), _dout_for(rng, x, w, param)
            start = time.perf_counter()
            loop_conv_pair(x, w, b, param, dout)
            spent += time.perf_counter() - start
            runs += 1
        loop_times.append(spent / runs)
    fast = [max(float(seconds) - CELL_ALLOWANCE, 1e-9) / TIMED_RUNS] * SPEED_ROUNDS
    return {f"time:{SPEED_LABEL}": np.array([loop_times, fast], dtype=np.float64)}


register(
    Check(
        name="conv_fast_speed",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_conv_fast_speed,
        timed=grader_timing,
        rules={
            "pair": Rule(
                "out, dx, dw and db of your fast pair, for",
                rtol=1e-10,
                hint="out, dx, dw and db must equal the naive pair's.",
            ),
            "runs": Rule(
                "digests of your fast pair's results on every timed run, for",
                rtol=1e-8,
                weight=0,
                hint="every timed call must compute out, dx, dw and db of its own inputs.",
            ),
            "time": Rule(
                "time of your fast forward + backward, as a share of loops over n, f, i, j, for",
                kind="below",
                rtol=1 / REQUIRED_SPEEDUP,
                weight=2,
                hint=f"it must be at least {REQUIRED_SPEEDUP} times faster (the reference is "
                "over 100 times faster here): no Python loop over images, filters or "
                "pixels; a loop over the filter's HH x WW offsets is fine.",
                requires=("pair", "runs"),
                measure=_speed_ratio,
            ),
        },
    )
)


# ------------------------------------------------------------------- spatial batch norm


def _channel_sums(got, want) -> float:
    """measure: the largest per-channel sum of dx (N, C, H, W), relative to dx's largest
    element: normalising each channel makes them vanish."""
    dx = np.asarray(got, dtype=np.float64)
    if dx.ndim != 4 or not np.all(np.isfinite(dx)):
        return float("inf")
    largest = float(np.abs(dx).max()) if dx.size else 0.0
    if largest == 0:
        return float("inf")
    return float(np.abs(dx.sum(axis=(0, 2, 3))).max() / largest)


def _bn_cases(rng):
    """(label, x): channels of very different means and scales (a per-(n, c) or a pooled
    normalisation shows), N, C, H and W all different, and a non-contiguous x."""
    cases = []
    for label in ("N, C, H, W all different", "non-contiguous x[..., ::2]"):
        N, C, H, W = _distinct(rng, 2, 7, 4)
        shape = (N, C, H, 2 * W) if label.startswith("non") else (N, C, H, W)
        means = rng.uniform(-5, 5, C)[None, :, None, None]
        scales = rng.uniform(0.5, 4, C)[None, :, None, None]
        x = means + scales * rng.standard_normal(shape)
        cases.append((label, x[..., ::2] if label.startswith("non") else x))
    return cases


LAYOUT_HINT = (
    "the output is off too: a layout slip? move C last before reshaping, "
    "x.transpose(0, 2, 3, 1).reshape(-1, C), and back after (a plain reshape to (N*H*W, C) "
    "mixes channels and pixels)."
)
BACKWARD_LAYOUT_HINT = (
    "dx is off too: a layout slip? reshape dout as the forward reshaped x, "
    "dout.transpose(0, 2, 3, 1).reshape(-1, C), and move dx's C back after."
)


def probe_spatial_batchnorm(student, rng, out):
    """Spatial batch norm in train mode (outputs, running averages) and test mode, its gradients
    beside the forward at nudged inputs, and the per-channel sums of dx, on _bn_cases."""
    forward, backward = student.spatial_batchnorm_forward, student.spatial_batchnorm_backward
    for label, x in _bn_cases(rng):
        C = x.shape[1]
        gamma, beta = away_from_zero(rng, C, 0.5, 2.0), rng.standard_normal(C)
        dout = rng.standard_normal(x.shape)
        running = {"running_mean": rng.standard_normal(C), "running_var": rng.uniform(0.5, 2, C)}
        momentum = float(rng.uniform(0.5, 0.9))

        def train(x=x, gamma=gamma, beta=beta, running=running, momentum=momentum):
            bn_param = {
                "mode": "train",
                "momentum": momentum,
                **{k: v.copy() for k, v in running.items()},
            }
            result, _ = forward(x, gamma.copy(), beta.copy(), bn_param)
            return result, bn_param["running_mean"], bn_param["running_var"]

        out.record(
            [f"out:train mode, {label}", f"running:mean, {label}", f"running:var, {label}"], train
        )

        def test(x=x, gamma=gamma, beta=beta, running=running):
            bn_param = {"mode": "test", **{k: v.copy() for k, v in running.items()}}
            return forward(x, gamma.copy(), beta.copy(), bn_param)[0]

        out.record(f"out:test mode, {label}", test)

        def grads(x=x, gamma=gamma, beta=beta, dout=dout):
            result, cache = forward(x, gamma.copy(), beta.copy(), {"mode": "train"})
            dx, dgamma, dbeta = backward(dout.copy(), cache)
            inputs = [np.array(x), gamma, beta]
            observed = []
            for position, grad in enumerate((dx, dgamma, dbeta)):

                def f(v, position=position):
                    args = [np.array(a, copy=True) for a in inputs]
                    args[position] = v
                    return forward(*args, {"mode": "train"})[0]

                observed.append(nudged_observation(grad, f, inputs[position], dout))
            return result, dx, dgamma, dbeta, stacked(*observed), dx

        keys = ["forward", "dx", "dgamma", "dbeta", "selfcheck", "sum"]
        out.record([f"{k}:{label}" for k in keys], grads)

    # Large: as batch norm's (05), over N, H and W: about 20,000 elements of a channel, each
    # coupled to every other, so about 20,000 forward passes for a numerical gradient.
    N, C = int(rng.integers(20, 24)), int(rng.integers(12, 16))
    shape = (N, C, 32, 32)

    def run(own):
        x = float(own.uniform(-3, 3)) + own.uniform(0.5, 3) * own.standard_normal(shape)
        gamma, beta = away_from_zero(own, C, 0.5, 2.0), own.standard_normal(C)
        dout = own.standard_normal(shape)
        return (
            lambda: forward(x, gamma, beta, {"mode": "train"})[1],
            lambda cache: backward(dout, cache),
        )

    record_large(out, rng, f"x of {N} by {C} by 32 by 32", run)


SPATIAL_BATCHNORM = register(
    Check(
        name="spatial_batchnorm",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_spatial_batchnorm,
        builds_on=CARRIED_05,
        rules={
            "out": Rule(
                "output in",
                rtol=1e-9,
                cap=WRONG_VALUE_CAP,
                hint="normalise each channel over N, H and W together: move C last, reshape "
                "to (N*H*W, C), batchnorm_forward, and move C back.",
            ),
            # A wrong running average is a wrong test-mode network later (as 05's
            # batchnorm_forward): capped (review 60: one lost kept 2.36 of 3).
            "running": Rule(
                "running",
                rtol=1e-9,
                hint="running = momentum * running + (1 - momentum) * the batch's statistic, "
                "over N, H and W (biased variance), stored back into bn_param.",
                cap=WRONG_VALUE_CAP,
            ),
            "forward": Rule("forward output (train mode) for", rtol=1e-9, weight=0.5),
            "dx": Rule(
                "gradient dx for",
                rtol=1e-8,
                hint="reshape dout like x in the forward.",
                cap=WRONG_VALUE_CAP,
                hint_unless=(("forward", LAYOUT_HINT),),
            ),
            "dgamma": Rule(
                "gradient dgamma for",
                rtol=1e-8,
                hint="sum over N, H and W.",
                cap=WRONG_VALUE_CAP,
                hint_unless=(("forward", LAYOUT_HINT), ("dx", BACKWARD_LAYOUT_HINT)),
            ),
            "dbeta": Rule(
                "gradient dbeta for",
                rtol=1e-8,
                hint="sum over N, H and W.",
                cap=WRONG_VALUE_CAP,
                hint_unless=(("forward", LAYOUT_HINT), ("dx", BACKWARD_LAYOUT_HINT)),
            ),
            "selfcheck": self_check_rule(
                "dx, dgamma, dbeta",
                "forward",
                rtol=1e-6,
                hint="the backward pass does not match the forward pass.",
                requires="forward",
            ),
            "sum": Rule(
                "largest per-channel sum of dx, over the largest |dx|, for",
                kind="below",
                rtol=1e-10,  # rounding gives 1e-15; a pooled or per-image one gives 1e-2
                hint="the mean is subtracted per channel, so each channel's dx sums to 0.",
                requires="dx",
                measure=_channel_sums,
            ),
        },
    )
)
SPATIAL_BATCHNORM.rules = with_large(
    SPATIAL_BATCHNORM.rules, ("dx", "dgamma", "dbeta", "selfcheck", "sum")
)


# ------------------------------------------------------------------- the convnet

CONVNET_STEPS = 30
CONVNET_BATCH = 40
CONVNET_LEARNING_RATE = 0.1
CONVNET_REG = 1e-3
# Measured (`course bench --bands`, 3 seeds): correct code departs by up to 2.1e-16; every
# mutant this cell must catch is caught by another sub-check (or departs by far more).
CONVNET_BAND = 1e-6  # relative, at every step


def _convnet_params(rng, C, H, W, F, classes, scale=0.3):
    hidden = F * (H // 2) * (W // 2)
    return {
        "W1": scale * rng.standard_normal((F, C, 3, 3)),
        "b1": 0.1 * rng.standard_normal(F),
        "W2": scale * rng.standard_normal((hidden, classes)) / np.sqrt(hidden / 8),
        "b2": 0.1 * rng.standard_normal(classes),
    }


def convnet_distance(params: dict, X) -> float:
    """How close the convnet's inputs come to a kink (trusted NumPy, not student code): a
    convolution output near ReLU's 0, or a pooling window whose two largest values (the
    largest above 0) nearly tie, where a nudge would move the maximum."""
    W1, b1 = params["W1"], params["b1"]
    x_pad = np.pad(X, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(x_pad, (3, 3), axis=(2, 3))
    pre = np.einsum("nchwkl,fckl->nfhw", windows, W1) + b1[None, :, None, None]
    relu = np.maximum(pre, 0)
    N, F, H, W = relu.shape
    blocks = relu[:, :, : H // 2 * 2, : W // 2 * 2].reshape(N, F, H // 2, 2, W // 2, 2)
    blocks = np.sort(blocks.transpose(0, 1, 2, 4, 3, 5).reshape(N, F, H // 2, W // 2, 4), axis=-1)
    gaps = np.where(blocks[..., -1] > 0, blocks[..., -1] - blocks[..., -2], np.inf)
    return float(min(np.abs(pre).min(), gaps.min()))


def he_drawn(got, want):
    """measure: one weight's (mean, std, shape) against He's N(0, 2 / fan-in), the fan-in
    read from the reference run's shape: (F, C, HH, WW) has C * HH * WW, (D, classes) D."""
    shape = np.asarray(want, dtype=np.float64)[2:]
    fan_in = float(np.prod(shape[1:])) if len(shape) == 4 else float(shape[0])
    verdict = drawn_with(np.sqrt(2 / fan_in))(got, want)
    return (
        verdict
        if verdict is True or "shape" in verdict
        else (
            "not drawn from N(0, 2 / fan-in) (the sample's mean or standard deviation is far off)"
        )
    )


def seeded(got, want):
    """measure: (the largest difference between the W1 of two nets built with one seed,
    and between those of two seeds): nought, and not nought."""
    same, other = np.asarray(got, dtype=np.float64)
    if same != 0:
        return "two nets built with the same seed differ"
    if other == 0:
        return "nets built with two seeds are the same: the seed is not used"
    return True


def _convnet_with(student, shape, F, classes, params, reg):
    net = student.SmallConvNet(input_dim=shape, num_filters=F, num_classes=classes, reg=reg, seed=0)
    for name, value in params.items():
        net.params[name] = value.copy()
    return net


def probe_convnet(student, rng, out):
    """SmallConvNet's parameter shapes, its initialisation's statistics, its loss and gradients
    (beside its own loss at nudged parameters), and 30 steps of SGD on the digits from hidden
    weights: the loss curve."""
    # A non-square image, channels different from filters: a hard-coded 8x8 or C = 1 shows.
    C, F, classes, N = _distinct(rng, 2, 6, 4)
    H, W = (2 * v for v in _distinct(rng, 2, 4, 2))
    shape = (C, H, W)
    params, X = clear_of_kinks(
        lambda: (_convnet_params(rng, *shape, F, classes), rng.standard_normal((N, *shape))),
        lambda drawn: convnet_distance(*drawn),
    )
    y = rng.integers(0, classes, N)

    def construction():
        net = student.SmallConvNet(input_dim=shape, num_filters=F, num_classes=classes, seed=4)
        names = ["W1", "b1", "W2", "b2"]
        shapes = np.concatenate([np.shape(net.params[n]) for n in names]).astype(float)
        biases = np.concatenate([np.ravel(net.params[n]) for n in ("b1", "b2")])
        return shapes, biases.astype(np.float64)

    out.record(["shapes:at construction", "bias:at construction"], construction)

    # He's initialisation, judged by each weight's sample statistics (any generator, any
    # draw order): sizes from the (secret) seed, at least 648 entries per weight.
    C0, F0, H0, W0 = (
        int(rng.integers(3, 6)),
        int(rng.integers(24, 32)),
        *(2 * v for v in _distinct(rng, 4, 7, 2)),
    )
    init_seed = int(rng.integers(1 << 30))

    def initial():
        net = student.SmallConvNet(
            input_dim=(C0, H0, W0), num_filters=F0, num_classes=10, seed=init_seed
        )
        return moments(net.params["W1"]), moments(net.params["W2"])

    out.record(["init:W1 (fan-in C * 3 * 3)", "init:W2 (fan-in F * H/2 * W/2)"], initial)

    def seeding():
        def first_weights(seed):
            net = student.SmallConvNet(input_dim=(C0, H0, W0), num_filters=F0, seed=seed)
            return np.asarray(net.params["W1"], dtype=np.float64)

        again, other = first_weights(init_seed), first_weights(init_seed + 1)
        drawn = first_weights(init_seed)
        return np.array([np.max(np.abs(drawn - again)), np.max(np.abs(drawn - other))])

    # The detail of init's W1, so that it is credited only beside a W1 of the (secret) shape.
    out.record("seed:W1 (fan-in C * 3 * 3)", seeding)
    out.record(
        "scores:on hidden weights",
        lambda: _convnet_with(student, shape, F, classes, params, 0.0).loss(X.copy()),
    )
    for reg in (0.0, float(rng.uniform(0.1, 0.5))):
        label = f"{'with' if reg else 'without'} regularisation"

        def compute(reg=reg):
            net = _convnet_with(student, shape, F, classes, params, reg)
            loss, grads = net.loss(X.copy(), y.copy())
            results = [np.asarray(loss, dtype=np.float64)] + [grads[n] for n in params]
            if not reg:  # centred differences once, where the regulariser counts too
                return results
            observed = []
            for name in params:

                def f(v, name=name):
                    net = _convnet_with(student, shape, F, classes, {**params, name: v}, reg)
                    return net.loss(X.copy(), y.copy())[0]

                observed.append(nudged_observation(grads[name], f, params[name]))
            return [*results, stacked(*observed)]

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
        builds_on={
            **CARRIED_03,
            "conv_fast": "conv_forward_fast or conv_backward_fast",
            "max_pool_naive": "max_pool_forward_naive or max_pool_backward_naive",
        },
        trains_through=("conv_fast", "max_pool_naive", "spatial_batchnorm"),
        rules={
            "shapes": Rule(
                "parameter shapes (W1, b1, W2, b2)",
                rtol=0,
                hint="W1 (F, C, 3, 3), b1 (F,), W2 (F * (H // 2) * (W // 2), classes), b2.",
            ),
            # Issue 54: b1 = 0.01 (the notebook's text: biases 0) kept 3 of 3. Exact zeros
            # (rtol 0), credited only beside the right shapes (drawn from the secret seed), as
            # 03's TwoLayerNet's are.
            "bias": Rule(
                "biases (b1, b2)",
                rtol=0,
                hint="the biases start at 0: np.zeros(num_filters) and np.zeros(num_classes).",
                requires="shapes",
            ),
            # A wrong initial scale (another fan, a forgotten factor) kept 2.4-2.7 of 3:
            # capped, as any wrong value is.
            "init": Rule(
                "initial",
                kind="true",
                weight=2,
                cap=WRONG_VALUE_CAP,
                hint="He's rule per layer: W1 from N(0, 2 / (C * 3 * 3)) (the fan-in of a "
                "convolution is C * HH * WW, not C), W2 from N(0, 2 / (F * H/2 * W/2)).",
                measure=he_drawn,
            ),
            # The review of issue 37: a net drawing from default_rng() kept 3 of 3.
            "seed": Rule(
                "the seed of",
                kind="true",
                hint="draw every weight from np.random.default_rng(seed), so that one seed "
                "gives one net.",
                requires="init",
                measure=seeded,
            ),
            "scores": Rule(
                "scores",
                rtol=1e-9,
                cap=WRONG_VALUE_CAP,
                hint="conv (stride 1, pad 1) - relu - 2x2 max pool (stride 2) - affine.",
            ),
            "loss": Rule(
                "loss",
                rtol=1e-9,
                cap=WRONG_VALUE_CAP,
                hint="softmax loss plus 0.5 * reg * (sum(W1**2) + sum(W2**2)), not the biases.",
            ),
            "grad": Rule(
                "gradient of",
                rtol=1e-8,
                cap=WRONG_VALUE_CAP,
                hint="backpropagate through affine, pool, relu and conv in reverse; the "
                "regulariser adds reg * W.",
            ),
            "selfcheck": self_check_rule("gradients", "loss", rtol=1e-5, requires="loss", then=""),
            "curve": training_curve_rule(
                CONVNET_BAND,
                "a gradient of SmallConvNet, or its loss, that is wrong, even slightly.",
                what="",
                weight=3,
            ),
        },
    )
)
