"""Hidden checks of assignment 08, "Attention and transformers" (API: shared API.md,
section 08).

The kernel records observations only: outputs, gradients, forward values at nudged inputs,
the outputs of a call before and after the inputs after position t were changed, the
outputs for permuted positions beside the permuted outputs, a training loss curve. The
grader decides: outputs against the reference values, gradients against centred
differences of the student's own forward pass, causality and permutation equivariance by
grader-side measures of those raw observations. Every shape and value is drawn from the
check's (secret) seed: Tq != Tk, d != dv, and a square case.
"""

import numpy as np

from course.checks.common import (
    BY_HAND_RULE,
    WRONG_VALUE_CAP,
    away_from_zero,
    change_relative_to_largest,
    copies,
    nudged_observation,
    record_large,
    self_check_rule,
    stacked,
    training_curve_rule,
    with_large,
)
from course.grader.model import Assignment, Check, Rule, register
from course.grader.probe import lines_run

ASSIGNMENT = Assignment(
    id="08_attention",
    notebook="attention",
    title="08 Attention and transformers",
    builds=(
        "`softmax`, `attention_forward`/`_backward` with masks, `causal_mask`, "
        "`multihead_attention_forward`/`_backward`, `positional_encoding`, a pre-LN "
        "transformer block on your 05 layer norm, a tiny decoder-only transformer trained "
        "to copy, set against a post-LN block and your 07 LSTM"
    ),
    leak=(
        "without 1/sqrt(d) the softmax saturates as d grows; attention is blind to order "
        "without positions; a causal mask off by one makes the training loss lie; a fully "
        "masked row is NaN, or silently uniform with -1e9, and NaN again in float16; a wrong "
        "head split keeps every shape; a deep post-LN stack stalls without warm-up where "
        "pre-LN trains; weight decay on the layer norms' gains shrinks them and costs loss; "
        "float16 and (emulated) bfloat16 lose updates below eps/2 of a weight; on the same "
        "budget the transformer copies far better than your 07 LSTM; the 1/sqrt(d) changes no "
        "function, only the optimiser's steps (d times SGD's, sqrt(d) Adam's, relative to "
        "W_q), and wide heads without it train slower; 6 blocks without residual "
        "connections stay near chance"
    ),
    slow_cells=frozenset({"transformer_training"}),
)
NOTEBOOK = ASSIGNMENT.key

# The functions carried from 05 that the block runs through (course.carry).
CARRIED_05 = {
    "layernorm_forward": "layernorm_forward",
    "layernorm_backward": "layernorm_backward",
}
# What the later checks of this notebook run of its earlier functions (Check.builds_on), the
# most basic first: attention runs the softmax, its backward pass its forward, multi-head
# attention runs attention per head (issue 54: a softmax summed over the wrong axis is named
# in every cell it breaks, instead of their hints blaming the mask, the head split or dWo).
ATTENTION = {"softmax": "softmax", "attention_forward": "attention_forward"}
ATTENTION_BACKWARD = {**ATTENTION, "attention_backward": "attention_backward"}
MULTIHEAD = {
    **ATTENTION_BACKWARD,
    "multihead_forward": "multihead_attention_forward",
    "multihead_backward": "multihead_attention_backward",
}


def _sizes(rng, count: int, low: int = 2, high: int = 9) -> list[int]:
    """`count` different sizes in [low, high)."""
    return [int(s) for s in rng.choice(np.arange(low, high), size=count, replace=False)]


# ------------------------------------------------------------------- softmax


def probe_softmax(student, rng, out):
    """The learner's softmax along several axes and ranks, at scores near +-1e3 and on a
    non-contiguous array: what a shift by the maximum of the wrong axis, or none, gets wrong."""
    softmax = student.softmax
    a, b, c = _sizes(rng, 3, 3, 8)
    wide = rng.standard_normal((a, 2 * b))
    cases = [
        ("2-D, last axis", rng.standard_normal((a, b)) * 3, -1),
        ("2-D, axis 0", rng.standard_normal((b, a)) * 3, 0),
        ("3-D, last axis", rng.standard_normal((a, b, c)) * 3, -1),
        ("3-D, axis 1", rng.standard_normal((c, a, b)) * 3, 1),
        ("scores near 1e3", 1e3 + 5 * rng.standard_normal((b, c)), -1),
        ("scores near -1e3", -1e3 + 5 * rng.standard_normal((b, c)), -1),
        ("non-contiguous x[:, ::2]", wide[:, ::2], -1),
    ]
    # Rows near +1e3 and rows near -1e3 in one array: a shift by the largest entry of the
    # whole array (np.max(x), not along `axis`) leaves every row near -1e3 at exp(-2e3) = 0,
    # hence 0 / 0. Drawn last, so that the other cases keep their inputs.
    signs = np.where(np.arange(b) % 2 == 0, 1.0, -1.0)[:, None]
    cases.append(
        ("rows near 1e3 and rows near -1e3", 1e3 * signs + 5 * rng.standard_normal((b, c)), -1)
    )
    for label, x, axis in cases:
        out.record(f"out:{label}", lambda x=x, axis=axis: softmax(x.copy(), axis=axis))


register(
    Check(
        name="softmax",
        notebook=NOTEBOOK,
        points=1,
        probe=probe_softmax,
        rules={
            "out": Rule(
                "softmax for",
                rtol=1e-10,
                cap=WRONG_VALUE_CAP,
                hint="exp(x - max) / sum(exp(x - max)) along `axis` (keepdims=True): without "
                "the shift, scores near 1e3 overflow; the max and the sum along the same axis.",
            )
        },
    )
)


# ------------------------------------------------------------------- attention


def _attention_cases(rng):
    """(label, q, k, v, mask): Tq != Tk, d != dv, masks of several shapes, a square case,
    scores near 1e3, a non-contiguous q. Every query may attend to at least two keys."""
    N, Tq, Tk, d, dv = _sizes(rng, 5, 2, 9)

    def qkv(Tq=Tq, Tk=Tk, d=d, dv=dv, N=N):
        return (
            rng.standard_normal((N, Tq, d)),
            rng.standard_normal((N, Tk, d)),
            rng.standard_normal((N, Tk, dv)),
        )

    def mask_of(shape):
        mask = rng.random(shape) < 0.6
        # Two keys every query attends to: with one alone (a (Tk,) mask of Tk = 2 allowed
        # it), its softmax is that key's 1 whatever the scores, dq and dk are exactly 0, and
        # zeros earned those sub-checks on 10 of 50 secret seeds
        # (tests/test_trivial_answers.py).
        mask[..., rng.choice(shape[-1], size=2, replace=False)] = True
        return mask

    cases = [("no mask", *qkv(), None)]
    for label, shape in (
        ("a (Tq, Tk) mask", (Tq, Tk)),
        ("a (N, Tq, Tk) mask", (N, Tq, Tk)),
        ("a (N, 1, Tk) mask", (N, 1, Tk)),
        ("a (Tk,) mask", (Tk,)),
    ):
        cases.append((label, *qkv(), mask_of(shape)))
    T = N  # square: N = Tq = Tk = d = dv
    cases.append(
        ("N = Tq = Tk = d = dv, a causal mask", *qkv(T, T, T, T, T), np.tril(np.ones((T, T), bool)))
    )
    q, k, v = qkv()
    cases.append(("scores near 1e3", 12 * q, 12 * k, v, None))
    q_wide = rng.standard_normal((N, Tq, 2 * d))
    cases.append(("non-contiguous q[..., ::2]", q_wide[..., ::2], *qkv()[1:], None))
    # Two leading batch dimensions, as multi-head attention calls it (the notebook: "any
    # number of leading batch dimensions"): k.transpose(0, 2, 1) passed every 3-D case
    # (review 60). Drawn last, so that the other cases keep their inputs.
    heads = int(rng.integers(2, 4))
    q4, k4, v4 = (rng.standard_normal((N, heads, T, e)) for T, e in ((Tq, d), (Tk, d), (Tk, dv)))
    cases.append((FOUR_D, q4, k4, v4, mask_of((Tq, Tk))))
    return cases


FOUR_D = "4-D q, k, v (N, heads, T, d), a (Tq, Tk) mask"


def probe_attention_forward(student, rng, out):
    """attention_forward's outputs on _attention_cases (Tq != Tk, d != dv, masks of every
    shape the API allows, a square case, large scores, 4-D inputs), on copies of the inputs."""
    forward = student.attention_forward
    for label, q, k, v, mask in _attention_cases(rng):
        out.record(
            f"out:{label}",
            lambda q=q, k=k, v=v, mask=mask: forward(
                q, *copies(k, v), None if mask is None else mask.copy()
            )[0],
        )


register(
    Check(
        name="attention_forward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_attention_forward,
        builds_on={"softmax": "softmax"},
        rules={
            "out": Rule(
                "attention output with",
                rtol=1e-8,
                cap=WRONG_VALUE_CAP,
                hint="softmax(q k^T / sqrt(d)) v with d = q.shape[-1] (not dv, not Tk); "
                "k^T swaps the last two axes only; where the mask is False the score is "
                "-inf (True means: may attend), and the softmax runs over the keys (axis -1).",
            )
        },
    )
)


def scale_factors(want) -> dict[float, tuple[str, str]]:
    """Rule.factors of dq and dk: off by sqrt(d) (d, the last axis of q and k: of the
    gradient itself), the 1 / sqrt(d) of the scores missing from ds, or applied twice."""
    root = float(np.sqrt(np.shape(want)[-1]))
    return {
        root: (
            "is sqrt(d) times the expected value",
            "the scores are q k^T / sqrt(d), so ds (and both dq and dk) carries that "
            "1 / sqrt(d): ds = p * (dp - sum(dp * p, axis=-1)) / sqrt(d).",
        ),
        1 / root: (
            "is 1 / sqrt(d) times the expected value",
            "the 1 / sqrt(d) of the scores is applied twice (to ds and again to dq and dk, "
            "or divided by d): once, in ds.",
        ),
    }


def probe_attention_backward(student, rng, out):
    """attention_backward's dq, dk, dv on _attention_cases, beside the forward values at nudged
    inputs (the grader's centred differences), the lines each pass ran (by hand, not numerical)
    and a large case that only a backward pass by hand finishes within its budget."""
    forward, backward = student.attention_forward, student.attention_backward
    for label, q, k, v, mask in _attention_cases(rng):
        dout = rng.standard_normal(q.shape[:-1] + v.shape[-1:])

        def compute(q=q, k=k, v=v, mask=mask, dout=dout):
            (result, cache), forward_lines = lines_run(lambda: forward(*copies(q, k, v), mask))
            grads, backward_lines = lines_run(lambda: backward(dout.copy(), cache))
            inputs = {"q": q, "k": k, "v": v}
            observed = []
            for (key, value), grad in zip(inputs.items(), grads, strict=True):

                def f(changed, key=key):
                    args = {**{n: np.array(a, copy=True) for n, a in inputs.items()}, key: changed}
                    return forward(args["q"], args["k"], args["v"], mask)[0]

                observed.append(nudged_observation(grad, f, value, dout))
            return (result, *grads, stacked(*observed), np.array([forward_lines, backward_lines]))

        keys = ["forward", "dq", "dk", "dv", "selfcheck", "byhand"]
        out.record([f"{key}:{label}" for key in keys], compute)

    # Large: every key and value reaches every output of its example, so a numerical
    # gradient needs about Tk (d + dv) forward passes.
    Tq, Tk, d, dv = (
        int(rng.integers(lo, hi)) for lo, hi in ((160, 200), (160, 200), (48, 64), (40, 56))
    )

    def run(own):
        q, k = own.standard_normal((1, Tq, d)), own.standard_normal((1, Tk, d))
        v, dout = own.standard_normal((1, Tk, dv)), own.standard_normal((1, Tq, dv))
        return (lambda: forward(q, k, v, None)[1], lambda cache: backward(dout, cache))

    record_large(out, rng, f"Tq = {Tq}, Tk = {Tk}, d = {d}, dv = {dv}, no mask", run)


# dq and dk come through the softmax's Jacobian, a cancellation where the softmax
# saturates (scores near 1e3): a correct log-sum-exp softmax and the max-shift one differ
# there by 2e-13 of the largest entry, which is 2e-5 of an entry of 1e-11 (measured,
# tests/variants_attention.py's log-sum-exp alternate). Entries under 1e-4 of the largest
# are judged at that scale (Rule.noise_floor).
SATURATED_NOISE = 1e-4

register(
    Check(
        name="attention_backward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_attention_backward,
        builds_on=ATTENTION,
        rules=with_large(
            {
                "forward": Rule("attention output (forward) with", rtol=1e-8, weight=0.5),
                "byhand": BY_HAND_RULE,
                "dq": Rule(
                    "dq with",
                    rtol=1e-7,
                    cap=WRONG_VALUE_CAP,
                    hint="dq = ds k / sqrt(d), ds = p * (dp - sum(dp * p, axis=-1)), "
                    "dp = dout v^T.",
                    requires="byhand",
                    noise_floor=SATURATED_NOISE,
                    factors=scale_factors,
                ),
                "dk": Rule(
                    "dk with",
                    rtol=1e-7,
                    hint="dk = ds^T q / sqrt(d) (swap the last two axes).",
                    hint_unless=(
                        (
                            "dq",
                            "dq is off too, and both come from ds: the softmax's Jacobian, "
                            "ds = p * (dp - sum(dp * p, axis=-1, keepdims=True)), dp = dout v^T, "
                            "summed over the keys (the last axis), not only its diagonal "
                            "p * (1 - p).",
                        ),
                    ),
                    cap=WRONG_VALUE_CAP,
                    requires="byhand",
                    noise_floor=SATURATED_NOISE,
                    factors=scale_factors,
                ),
                "dv": Rule(
                    "dv with",
                    rtol=1e-7,
                    hint="dv = p^T dout, p^T swapping the last two axes only (the inputs "
                    "may have several leading batch dimensions).",
                    cap=WRONG_VALUE_CAP,
                    requires="byhand",
                ),
                "selfcheck": self_check_rule(
                    "gradients",
                    "forward pass",
                    rtol=1e-6,
                    weight=2,
                    hint="a gradient does not match the forward pass it comes from: the "
                    "softmax's Jacobian, or the 1 / sqrt(d), is off.",
                    requires=("forward", "byhand"),
                ),
            },
            ("dq", "dk", "dv", "selfcheck"),
        ),
    )
)


# ------------------------------------------------------------------- causal mask


def probe_causal_mask(student, rng, out):
    """causal_mask(T) for T = 1 and three drawn sizes, seen through random values (its values
    alone repeat for every seed that draws the same T), and the kind of its dtype."""
    # Seen through random values (np.where(mask, X, 0)): a mask depends only on T, so
    # its values alone would be the same for every seed that draws the same T.
    for T in [1, *_sizes(rng, 3, 2, 12)]:
        X = away_from_zero(rng, (T, T))

        def compute(T=T, X=X):
            mask = np.asarray(student.causal_mask(T))
            if mask.shape != (T, T):
                raise ValueError(f"causal_mask({T}) has shape {mask.shape}, expected ({T}, {T})")
            return np.where(mask != 0, X, 0.0), float(ord(mask.dtype.kind))

        out.record([f"out:T = {T}", f"dtype:T = {T}"], compute)


register(
    Check(
        name="causal_mask",
        notebook=NOTEBOOK,
        points=1,
        probe=probe_causal_mask,
        rules={
            "out": Rule(
                "entries kept by the mask for",
                rtol=0,
                hint="True on and below the diagonal (query t sees keys 0..t, itself "
                "included): np.tril; np.triu gives the opposite, k=1 lets t see t + 1.",
            ),
            "dtype": Rule(
                "dtype of the mask for",
                rtol=0,
                hint="a boolean array (dtype=bool), not 0/1 numbers.",
                requires="out",
            ),
        },
    )
)


# ------------------------------------------------------------------- multi-head attention


def _mha_cases(rng):
    """(label, x, weights, heads, mask): N, T, D all different, a square N = T case."""
    cases = []
    N, T = _sizes(rng, 2, 2, 8)
    for heads, dh in ((1, int(rng.integers(3, 6))), (2, int(rng.integers(2, 4))), (3, 2)):
        D = heads * dh
        weights = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
        for mask_label, mask in (
            ("no mask", None),
            ("a causal mask", np.tril(np.ones((T, T), bool))),
        ):
            x = rng.standard_normal((N, T, D))
            cases.append((f"{heads} head(s) of {dh}, {mask_label}", x, weights, heads, mask))
    D, heads = 6, 2
    weights = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
    per_example = rng.random((N, T, T)) < 0.6
    per_example[..., 0] = True
    cases.append(
        ("2 heads, a (N, T, T) mask", rng.standard_normal((N, T, D)), weights, 2, per_example)
    )
    square = int(rng.integers(3, 6))
    cases.append(
        (
            "N = T, 2 heads, a causal mask",
            rng.standard_normal((square, square, D)),
            weights,
            2,
            np.tril(np.ones((square, square), bool)),
        )
    )
    wide = rng.standard_normal((N, T, 2 * D))
    cases.append(("non-contiguous x[..., ::2], 3 heads", wide[..., ::2], weights, 3, None))
    return cases


def probe_multihead_forward(student, rng, out):
    """multihead_attention_forward's outputs on _mha_cases, and the invariants the grader
    measures: outputs up to t unchanged when later inputs change (with a causal mask), and
    permuting the positions permutes the outputs (without one)."""
    forward = student.multihead_attention_forward
    for label, x, weights, heads, mask in _mha_cases(rng):
        out.record(
            f"out:{label}",
            lambda x=x, w=weights, h=heads, m=mask: forward(x, *copies(*w), h, m)[0],
        )
    N, T = _sizes(rng, 2, 3, 9)
    for heads in (2, 4):
        D = 2 * heads
        weights = [rng.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
        x = rng.standard_normal((N, T, D))
        t = int(rng.integers(1, T - 1))
        later = x.copy()
        later[:, t + 1 :] += away_from_zero(rng, later[:, t + 1 :].shape)

        def causal(x=x, later=later, weights=weights, heads=heads, t=t):
            mask = np.tril(np.ones((T, T), bool))
            first = np.asarray(forward(x.copy(), *copies(*weights), heads, mask)[0], np.float64)
            second = np.asarray(forward(later, *copies(*weights), heads, mask)[0], np.float64)
            return first, np.stack([first[:, : t + 1], second[:, : t + 1]])

        detail = f"{heads} heads, a causal mask, inputs after position {t} changed"
        out.record([f"out:{detail}", f"causal:{detail}"], causal)
        order = rng.permutation(T)

        def equivariant(x=x, weights=weights, heads=heads, order=order):
            plain = np.asarray(forward(x.copy(), *copies(*weights), heads)[0], np.float64)
            permuted = forward(np.ascontiguousarray(x[:, order]), *copies(*weights), heads)[0]
            return plain, np.stack([plain[:, order], np.asarray(permuted, np.float64)])

        detail = f"{heads} heads, no mask, positions permuted"
        out.record([f"out:{detail}", f"equivariant:{detail}"], equivariant)


register(
    Check(
        name="multihead_forward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_multihead_forward,
        builds_on=ATTENTION,
        rules={
            "out": Rule(
                "multi-head output for",
                rtol=1e-8,
                cap=WRONG_VALUE_CAP,
                weight=2,
                hint="Q = x Wq split along D in order: reshape (N, T, H, D/H) then transpose "
                "to (N, H, T, D/H) (reshape (N, H, T, D/H) alone keeps the shape and mixes "
                "positions); attention per head with d = D/H; merge back the same way; @ Wo.",
            ),
            "causal": Rule(
                "change of the outputs up to t (relative) with a causal mask and",
                kind="below",
                rtol=1e-12,
                hint="an output depends on a later position: the mask reaches every head "
                "(and the heads are split by position, not across positions).",
                requires="out",
                measure=change_relative_to_largest,
            ),
            "equivariant": Rule(
                "difference between the permuted output and the output of the permuted "
                "input (relative), with",
                kind="below",
                rtol=1e-10,
                hint="without a mask, attention must not depend on the order of positions: "
                "a head that mixes positions (a wrong reshape) breaks it.",
                requires="out",
                measure=change_relative_to_largest,
            ),
        },
    )
)


def probe_multihead_backward(student, rng, out):
    """multihead_attention_backward's gradients of x and the four weights, beside the forward
    values at nudged inputs, the lines each pass ran, and a large case timed against a budget."""
    forward, backward = student.multihead_attention_forward, student.multihead_attention_backward
    names = ("x", "Wq", "Wk", "Wv", "Wo")
    for label, x, weights, heads, mask in _mha_cases(rng)[1::2] + _mha_cases(rng)[-3:-1]:
        dout = rng.standard_normal(x.shape)

        def compute(x=x, weights=weights, heads=heads, mask=mask, dout=dout):
            (result, cache), forward_lines = lines_run(
                lambda: forward(*copies(x, *weights), heads, mask)
            )
            grads, backward_lines = lines_run(lambda: backward(dout.copy(), cache))
            inputs = dict(zip(names, [x, *weights], strict=True))
            observed = []
            for (key, value), grad in zip(inputs.items(), grads, strict=True):

                def f(changed, key=key):
                    args = {**{n: np.array(a, copy=True) for n, a in inputs.items()}, key: changed}
                    return forward(*(args[n] for n in names), heads, mask)[0]

                observed.append(nudged_observation(grad, f, value, dout))
            return (result, *grads, stacked(*observed), np.array([forward_lines, backward_lines]))

        keys = ["forward", *(f"d{n}" for n in names), "selfcheck", "byhand"]
        out.record([f"{key}:{label}" for key in keys], compute)

    # Large: every position of x reaches every output of its example, and each weight
    # matrix is dense in them: about T D + 4 D**2 forward passes for a numerical gradient.
    T, D = int(rng.integers(56, 72)), 16 * int(rng.integers(4, 5))

    def run(own):
        x, dout = own.standard_normal((2, T, D)), own.standard_normal((2, T, D))
        weights = [own.standard_normal((D, D)) / np.sqrt(D) for _ in range(4)]
        mask = np.tril(np.ones((T, T), bool))
        return (lambda: forward(x, *weights, 4, mask)[1], lambda cache: backward(dout, cache))

    record_large(out, rng, f"x of 2 by {T} by {D}, 4 heads, a causal mask", run)


MHA_BACKWARD_HINT = (
    "dWo = merged^T dout (flattened over N and T); back through the merge, attention_backward "
    "per head, the split undone; dx sums the three paths, dq Wq^T + dk Wk^T + dv Wv^T."
)

register(
    Check(
        name="multihead_backward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_multihead_backward,
        builds_on={**ATTENTION_BACKWARD, "multihead_forward": "multihead_attention_forward"},
        rules=with_large(
            {
                "forward": Rule("multi-head output (forward) for", rtol=1e-8, weight=0.5),
                "byhand": BY_HAND_RULE,
                **{
                    f"d{n}": Rule(
                        f"d{n} for",
                        rtol=1e-7,
                        hint=MHA_BACKWARD_HINT,
                        cap=WRONG_VALUE_CAP,
                        requires="byhand",
                    )
                    for n in ("x", "Wq", "Wk", "Wv", "Wo")
                },
                "selfcheck": self_check_rule(
                    "gradients", "forward pass", rtol=1e-6, weight=2, requires=("forward", "byhand")
                ),
            },
            ("dx", "dWq", "dWk", "dWv", "dWo", "selfcheck"),
        ),
    )
)


# ------------------------------------------------------------------- positions


def probe_positional_encoding(student, rng, out):
    """positional_encoding(T, D) at sizes from wide ranges, an odd D, and a long sequence in
    few dimensions: a table replayed from the notebook's sizes is right only where they
    repeat."""
    # Sizes from wide ranges: the encoding is a function of (T, D) alone, so a committed
    # table replayed is right wherever the sizes happen to repeat.
    T1, T2 = _sizes(rng, 2, 3, 60)
    D1, D2 = (2 * s for s in _sizes(rng, 2, 2, 12))
    D3 = 2 * int(rng.integers(2, 40))
    # and a long sequence in few dimensions (T far above D), of a length nobody can guess
    T4, D4 = max(D1, D2) + int(rng.integers(5, 200)), 2 * int(rng.integers(1, 4))
    # and an odd D (the API asks for any D: sin on its even columns, one more than the cos
    # on its odd ones), where a cos of every frequency does not fit the odd columns (issue 54)
    T5, D5 = int(rng.integers(3, 60)), 2 * int(rng.integers(1, 20)) + 1
    for T, D in ((T1, D1), (T2, D2), (D3, D3), (T4, D4), (T5, D5)):
        out.record(f"out:T = {T}, D = {D}", lambda T=T, D=D: student.positional_encoding(T, D))


register(
    Check(
        name="positional_encoding",
        notebook=NOTEBOOK,
        points=1,
        probe=probe_positional_encoding,
        rules={
            "out": Rule(
                "encoding for",
                rtol=1e-9,
                hint="column 2i is sin(p / 10000**(2i / D)), column 2i + 1 its cos, at the "
                "same frequency (2i, not i, in the exponent; positions from 0); an odd D has "
                "one sin column more than cos columns.",
            )
        },
    )
)


# ------------------------------------------------------------------- the block

BLOCK_NAMES = tuple("ln1_gamma ln1_beta Wq Wk Wv Wo ln2_gamma ln2_beta W1 b1 W2 b2".split())


def _block_params(rng, D, F):
    def w(fan_in, shape):
        return rng.standard_normal(shape) / np.sqrt(fan_in)

    return {
        "ln1_gamma": 1 + 0.3 * rng.standard_normal(D), "ln1_beta": 0.3 * rng.standard_normal(D),
        "Wq": w(D, (D, D)), "Wk": w(D, (D, D)), "Wv": w(D, (D, D)), "Wo": w(D, (D, D)),
        "ln2_gamma": 1 + 0.3 * rng.standard_normal(D), "ln2_beta": 0.3 * rng.standard_normal(D),
        "W1": w(D, (D, F)), "b1": 0.3 * rng.standard_normal(F), "W2": w(F, (F, D)),
        "b2": 0.3 * rng.standard_normal(D),
    }  # fmt: skip


def _relu_distance(params, x, heads, mask) -> float:
    """How close a hidden pre-activation of the block's MLP comes to ReLU's kink at 0
    (trusted NumPy, not student code)."""
    N, T, D = x.shape

    def ln(a, g, b):
        c = a - a.mean(-1, keepdims=True)
        return g * c / np.sqrt(np.mean(c**2, -1, keepdims=True) + 1e-5) + b

    p = params
    a = ln(x, p["ln1_gamma"], p["ln1_beta"])

    def split(m):
        return m.reshape(N, T, heads, D // heads).transpose(0, 2, 1, 3)

    q, k, v = split(a @ p["Wq"]), split(a @ p["Wk"]), split(a @ p["Wv"])
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(D // heads)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    h = x + (w @ v).transpose(0, 2, 1, 3).reshape(N, T, D) @ p["Wo"]
    z = ln(h, p["ln2_gamma"], p["ln2_beta"]) @ p["W1"] + p["b1"]
    return float(np.min(np.abs(z)))


BLOCK_SHAPES = ((2, 4, 7, True), (1, 5, 3, False), (3, 6, 6, True))  # heads, D, F, causal


def _block_label(heads, D, F, causal) -> str:
    return f"D = {D}, F = {F}, {heads} head(s), " + ("a causal mask" if causal else "no mask")


def _block_cases(rng):
    cases = []
    N, T = _sizes(rng, 2, 2, 6)
    for heads, D, F, causal in BLOCK_SHAPES:
        mask = np.tril(np.ones((T, T), bool)) if causal else None
        for _ in range(1000):
            params, x = _block_params(rng, D, F), rng.standard_normal((N, T, D))
            if _relu_distance(params, x, heads, mask) > 1e-3:
                break
        cases.append((_block_label(heads, D, F, causal), x, params, heads, mask))
    return cases


# The block's output without a mask (Rule.hint_unless): when it is off too, what mixes later
# positions into earlier ones is not a mask left out (issue 54: a layer norm over time was
# told to pass the mask).
UNMASKED_BLOCK = "forward:" + _block_label(*next(s for s in BLOCK_SHAPES if not s[3]))


def probe_block(student, rng, out):
    """The transformer block's output, dx and every parameter's gradient on _block_cases,
    beside its forward values at nudged inputs; with a causal mask, the outputs up to t after
    later inputs changed (judged by change_relative_to_largest)."""
    forward, backward = student.block_forward, student.block_backward
    for label, x, params, heads, mask in _block_cases(rng):
        dout = rng.standard_normal(x.shape)

        def compute(x=x, params=params, heads=heads, mask=mask, dout=dout):
            fresh = {n: v.copy() for n, v in params.items()}
            result, cache = forward(x.copy(), fresh, heads, mask)
            dx, grads = backward(dout.copy(), cache)
            ordered = [np.asarray(grads[n], dtype=np.float64) for n in BLOCK_NAMES]

            def fx(v):
                return forward(v, {n: a.copy() for n, a in params.items()}, heads, mask)[0]

            observed = [nudged_observation(dx, fx, x, dout)]
            for name, grad in zip(BLOCK_NAMES, ordered, strict=True):

                def f(v, name=name):
                    moved = {n: a.copy() for n, a in params.items()}
                    moved[name] = v
                    return forward(x.copy(), moved, heads, mask)[0]

                observed.append(nudged_observation(grad, f, params[name], dout))
            return (result, dx, *ordered, stacked(*observed))

        keys = ["forward", "dx", *(f"grad:{n}, {label}" for n in BLOCK_NAMES), "selfcheck"]
        keys = [k if k.startswith("grad:") else f"{k}:{label}" for k in keys]
        out.record(keys, compute)
        if mask is not None:
            T = x.shape[1]
            t = int(rng.integers(0, T - 1))
            later = x.copy()
            later[:, t + 1 :] += away_from_zero(rng, later[:, t + 1 :].shape)

            def causal(x=x, later=later, params=params, heads=heads, mask=mask, t=t):
                outs = [
                    np.asarray(forward(a, {n: v.copy() for n, v in params.items()}, heads, mask)[0])
                    for a in (x.copy(), later)
                ]
                return outs[0], np.stack([o[:, : t + 1] for o in outs]).astype(np.float64)

            detail = f"{label}, inputs after position {t} changed"
            out.record([f"forward:{detail}", f"causal:{detail}"], causal)

    # Large: every parameter element reaches every output, so a numerical gradient needs a
    # forward pass per parameter element (12,000 and more) besides those for x; the chain
    # rule costs about two forward passes.
    T = int(rng.integers(24, 32))

    def run(own):
        D, F = 32, 48
        params = _block_params(own, D, F)
        x, dout = own.standard_normal((2, T, D)), own.standard_normal((2, T, D))
        mask = np.tril(np.ones((T, T), bool))

        def gradients(cache):
            dx, grads = backward(dout, cache)
            return (dx, *(grads[n] for n in BLOCK_NAMES))

        return (lambda: forward(x, params, 4, mask)[1], gradients)

    record_large(out, rng, f"x of 2 by {T} by 32, F = 48, 4 heads, a causal mask", run)


# A wrong forward pass (LN2 with LN1's gamma and beta, review 54) makes dx and every
# gradient computed from its cache wrong too: then the likely mistake is the forward's, not
# a backward pass that is right (dx is still listed first: its key sorts before "forward").
BLOCK_FORWARD_FIRST = (
    (
        "forward",
        "your block output for this case is off too: fix the forward pass first (the "
        "gradients are computed from its cache).",
    ),
)

BLOCK = register(
    Check(
        name="block",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_block,
        builds_on={**CARRIED_05, **MULTIHEAD},
        rules={
            "forward": Rule(
                "block output for",
                rtol=1e-8,
                weight=2,
                cap=WRONG_VALUE_CAP,
                hint="pre-LN: h = x + MHA(LN1(x)), out = h + relu(LN2(h) W1 + b1) W2 + b2; "
                "the residuals add x and h themselves, not their normalised copies.",
            ),
            "dx": Rule(
                "dx for",
                rtol=1e-7,
                cap=WRONG_VALUE_CAP,
                hint="dx = dh (the residual) + LN1's backward of what comes back through "
                "attention; dh = dout + LN2's backward of the MLP's gradient.",
                hint_unless=BLOCK_FORWARD_FIRST,
            ),
            "grad": Rule(
                "gradient of",
                rtol=1e-7,
                cap=WRONG_VALUE_CAP,
                hint="each parameter's gradient summed over N and T (flatten to (N T, D)).",
                # Issue 54: a db1 without the ReLU's mask was told to sum over N and T.
                hints=tuple(
                    (
                        f"{name}, ",
                        f"d{name} comes through the ReLU: dout W2^T times its mask "
                        "(LN2(h) W1 + b1 > 0), then summed over N and T (flatten to (N T, F)).",
                    )
                    for name in ("W1", "b1")
                ),
                hint_unless=BLOCK_FORWARD_FIRST,
            ),
            "selfcheck": self_check_rule(
                "gradients",
                "forward pass",
                rtol=1e-5,  # correct code: one draw in 100 reached 1.1e-6 (test_inputs_sweep)
                weight=2,
                requires="forward",
            ),
            "causal": Rule(
                "change of the outputs up to t (relative) for",
                kind="below",
                rtol=1e-12,
                hint="an output of the block depends on a later position: pass the mask to "
                "the attention.",
                hint_unless=(
                    (
                        UNMASKED_BLOCK,
                        "the output without a mask is off too: a layer norm over time? Your 05 "
                        "layer norm normalises axis 1 of (N, D): on (N, T, D) that is time, "
                        "which mixes later positions into earlier ones. Reshape to (N T, D) "
                        "and back.",
                    ),
                ),
                requires="forward",
                measure=change_relative_to_largest,
            ),
        },
    )
)
BLOCK.rules = with_large(BLOCK.rules, ("dx", "grad", "selfcheck"))


# ------------------------------------------------------------------- training

TRAIN_STEPS = 25
TRAIN_BATCH = 8
TRAIN_LEARNING_RATE = 3e-3
# Measured (`course bench --bands --seeds 10`, 5 alternates, 21 mutants): correct code
# departs by up to 1.5e-16, the closest mutant (attention backward without 1 / sqrt(d)) by
# 4.7e-5. Not measured: a learner's own correct 05 layer norm (carried), which departs by up
# to 1e-8 in 05's curve.
LOSS_BAND = 1e-6  # relative, at every step


def _adam():
    """A fixed Adam (trusted code: the curve must not depend on the learner's 04 Adam)."""
    state = {}

    def update(name, w, dw):
        m, v, t = state.get(name, (np.zeros_like(w), np.zeros_like(w), 0))
        t += 1
        m = 0.9 * m + 0.1 * dw
        v = 0.999 * v + 0.001 * dw**2
        state[name] = (m, v, t)
        step = TRAIN_LEARNING_RATE * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        return w - step

    return update


def _copy_batch(rng, N, L, V):
    first = rng.integers(0, V, (N, L))
    sequence = np.concatenate([first, np.full((N, 1), V), first], axis=1)
    weights = np.zeros((N, 2 * L))
    weights[:, L:] = 1.0
    return sequence[:, :-1], sequence[:, 1:], weights


class _Transformer:
    """The notebook's TinyTransformer, one block, as trusted code around the learner's
    functions (block_forward/_backward, positional_encoding, the 05 layer norm): the
    curve depends on those functions, not on an edited copy of the given model."""

    def __init__(self, student, rng, vocab, D, heads, positions):
        self.student, self.heads, self.positions = student, heads, positions
        self.params = {"embed": rng.standard_normal((vocab, D))}
        block = _block_params(rng, D, 4 * D)
        for name in ("ln1_gamma", "ln2_gamma"):
            block[name] = np.ones(D)
        for name in ("ln1_beta", "ln2_beta", "b1", "b2"):
            block[name] = np.zeros_like(block[name])
        self.params.update({f"0.{n}": v for n, v in block.items()})
        self.params.update(
            lnf_gamma=np.ones(D),
            lnf_beta=np.zeros(D),
            W_out=0.02 * rng.standard_normal((D, vocab)),
            b_out=np.zeros(vocab),
        )

    def loss(self, tokens, targets, weights):
        s, p = self.student, self.params
        N, T = tokens.shape
        x = p["embed"][tokens]
        if self.positions:
            x = x + np.asarray(s.positional_encoding(T, x.shape[-1]), dtype=np.float64)
        block = {n.split(".", 1)[1]: v.copy() for n, v in p.items() if n.startswith("0.")}
        x, cache = s.block_forward(x, block, self.heads, np.tril(np.ones((T, T), bool)))
        D = x.shape[-1]
        f, lnf = s.layernorm_forward(
            np.reshape(x, (N * T, D)), p["lnf_gamma"].copy(), p["lnf_beta"].copy(), {}
        )
        scores = f @ p["W_out"] + p["b_out"]
        probs = np.exp(scores - scores.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        w = (weights / weights.sum()).reshape(-1)
        rows, flat = np.arange(N * T), targets.reshape(-1)
        loss = -np.sum(w * np.log(probs[rows, flat]))
        dscores = probs
        dscores[rows, flat] -= 1
        dscores *= w[:, None]
        grads = {"W_out": f.T @ dscores, "b_out": dscores.sum(axis=0)}
        df, grads["lnf_gamma"], grads["lnf_beta"] = s.layernorm_backward(
            dscores @ p["W_out"].T, lnf
        )
        dx, block_grads = s.block_backward(np.reshape(df, (N, T, D)), cache)
        grads.update({f"0.{n}": block_grads[n] for n in BLOCK_NAMES})
        grads["embed"] = np.zeros_like(p["embed"])
        np.add.at(grads["embed"], tokens, dx)
        return loss, grads


def probe_transformer_training(student, rng, out):
    """The loss curve of a tiny transformer built on the learner's layers and trained with a
    fixed Adam on a copying task, with and without the positional encoding."""
    V, L = int(rng.integers(4, 8)), int(rng.integers(3, 6))
    heads = int(rng.choice([2, 4]))
    D = heads * int(rng.integers(2, 5))
    init_seed, data_seed = (int(s) for s in rng.integers(1 << 20, size=2))
    for positions in (True, False):

        def compute(positions=positions):
            init = np.random.default_rng(init_seed)
            model = _Transformer(student, init, V + 1, D, heads, positions)
            update, data, losses = _adam(), np.random.default_rng(data_seed), []
            for _ in range(TRAIN_STEPS):
                loss, grads = model.loss(*_copy_batch(data, TRAIN_BATCH, L, V))
                for name in model.params:
                    model.params[name] = update(name, model.params[name], grads[name])
                losses.append(float(loss))
            return np.array(losses)

        label = "with positions" if positions else "without positions"
        out.record(f"loss:curve {label}", compute)


register(
    Check(
        name="transformer_training",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_transformer_training,
        builds_on={
            **CARRIED_05,
            **MULTIHEAD,
            "positional_encoding": "positional_encoding",
            "block": "block_forward or block_backward",
        },
        trains_through=("attention_backward", "multihead_backward", "block"),
        rules={
            "loss": training_curve_rule(
                LOSS_BAND,
                "a curve that starts right and departs later has a gradient slightly wrong; "
                "one that starts wrong, a forward pass (or the positions) off.",
                what="training loss",
            ),
        },
    )
)


# ------------------------------------------------------------------- predictions


def probe_predictions(student, rng, out):
    """The learner's predicted numbers (the spread of q . k, the loss of a uniform guess, ...)
    at three settings each, drawn from the seed: a number written for the notebook's settings
    alone is right only there."""
    # Three settings each, judged together: a value replayed from another run must not
    # fall within the 2% band of all three by chance.
    # K small: log(K - 1) for log K (the separator left out) must show.
    ds, Ks = rng.integers(5, 5000, size=3), rng.choice(np.arange(3, 17), size=3, replace=False)
    out.record(
        "std:standard deviation of q . k",
        lambda: np.array([student.predicted_score_std(int(d)) for d in ds], dtype=float),
    )
    out.record(
        "loss:loss of a uniform guess",
        lambda: np.array([student.predicted_initial_loss(int(K)) for K in Ks], dtype=float),
    )


register(
    Check(
        name="attention_predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_predictions,
        rules={
            # The judge's tolerance is relative to |got| + |want|: 0.01 is about 2%.
            "std": Rule(
                "predicted",
                rtol=0.01,
                hint="a sum of d independent products, each of variance 1: variance d.",
            ),
            "loss": Rule(
                "predicted", rtol=0.01, hint="-log of the probability of the right token."
            ),
        },
    )
)


# ------------------------------------------------------------ shape predictions (part 7)


# Head widths for the predictions: one small width whose square root is far from a whole
# number (round(sqrt(d)), int(c**2) and c**2 +- 1 all miss a 2% band: at d = 3 or 6, c**2
# in floating point is a hair below d, so int(c**2) is d - 1), then two of 16 to 512.
SMALL_WIDTHS = np.array([3, 6])


def probe_shape_predictions(student, rng, out):
    """Part 7's predictions at three head widths drawn from the seed: the factor c that
    turns a head without the 1/sqrt(d) into yours, and SGD's relative step without it."""
    widths = [rng.choice(SMALL_WIDTHS), *rng.choice(np.arange(16, 513), size=2, replace=False)]
    out.record(
        "query:c with softmax(q k^T) = softmax((c q) k^T / sqrt(d)), at three hidden widths",
        lambda: np.array([student.predicted_query_scale(int(d)) for d in widths], dtype=float),
    )
    # Asked in terms of c, not d: its answer, d, would be the identity of its argument, and
    # any function of the package that hands its argument back would earn the point. The
    # label names no value (its FAIL line is shown to the learner).
    out.record(
        "sgd:SGD's step relative to W_q, unscaled over scaled, at three hidden values of c",
        lambda: np.array(
            [student.predicted_sgd_step_ratio(float(np.sqrt(d))) for d in widths], dtype=float
        ),
    )


def _known_slips(*table):
    """Rule.slips for a prediction: (f, words, likely mistake) rows, the first whose
    f(expected) the answer matches at every width (within the rule's 1%) is said. Each
    names the slip, never the expected value (review 35: 1/c, c**2, sqrt of the ratio, 1)."""

    def slips(got, want, case):
        with np.errstate(all="ignore"):
            for f, words, likely in table:
                if np.allclose(got, f(want), rtol=0.01, atol=0):
                    return words, likely
        return None

    return slips


QUERY_SLIPS = _known_slips(
    (
        lambda c: 1 / c,
        "is the inverse of the factor",
        "c multiplies q, so it must undo what your attention divides the scores by.",
    ),
    (
        lambda c: c**2,
        "is the square of the factor",
        "your attention divides the scores by the square root of the width, not the width.",
    ),
    (
        lambda c: np.ones_like(c),
        "is 1 at every width",
        "without the scale the scores are larger: c is not 1.",
    ),
)
SGD_SLIPS = _known_slips(
    (
        lambda r: 1 / r,
        "is the inverse of the ratio",
        "the ratio asked is the unscaled model's step over the scaled model's.",
    ),
    (
        np.sqrt,
        "counts one of two changes",
        "the unscaled model's gradient and its own W_q both differ from the scaled model's.",
    ),
    (
        lambda r: 1 / np.sqrt(r),
        "counts one of two changes, the other way round",
        "the unscaled model's gradient and its own W_q both differ from the scaled model's; "
        "the ratio asked is unscaled over scaled.",
    ),
    (
        lambda r: np.ones_like(r),
        "is 1 at every value of c",
        "the two models compute the same function, but each step is relative to its own W_q.",
    ),
)


register(
    Check(
        name="shape_predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_shape_predictions,
        rules={
            "query": Rule(
                "predicted",
                rtol=0.01,
                hint="write softmax((c q) . k / s) = softmax(q . k), with s what your attention "
                "divides the scores by, and solve for c (for every width, not one).",
                slips=QUERY_SLIPS,
            ),
            "sgd": Rule(
                "predicted",
                rtol=0.01,
                hint="compare the two models at the same function: the unscaled model's "
                "gradient with respect to W_q, and its W_q, each against the scaled model's.",
                slips=SGD_SLIPS,
            ),
        },
    )
)
