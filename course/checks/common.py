"""Shared by the hidden checks: the inputs probes draw, and the grader-side measures
(course.grader.model.Rule.measure).

Each turns observations into a verdict in the grader's process: the kernel records raw
values (results, arrays after a call, forward values at nudged inputs, sample moments),
never a boolean or an error it computed itself.
"""

from __future__ import annotations

import time

import numpy as np

from course.gradcheck import relative_errors
from course.grader import probe as _probe
from course.grader.model import NUDGED_FORWARD_OFF, ROUNDING_RTOL, Broken, Rule
from course.grader.probe import OverBudget, nudge_sample, nudged, within_budget

STEP = 1e-5  # the step of course.grader.probe.nudged, unless a probe says otherwise

# A centred difference carries an absolute rounding error of about eps * |f| / h, whatever
# the size of the element: measured element by element, a gradient element that happens to
# be near zero would make that noise look like a mistake (10 draws of inputs in 200 did for
# affine_backward's self-check, measured by sweeping seeds: tests/test_inputs_sweep.py).
# So elements below this fraction of the largest are measured against that fraction of
# it; a wrong gradient is still off by far more.
SCALE_FLOOR = 1e-3

# A wrong output or a wrong gradient caps its grade cell at half its points (Rule.cap),
# however many of the cell's other sub-checks pass: one wrong value must not earn most of
# the cell (issue 37: a state stored one step late kept 2.3 of 3).
WRONG_VALUE_CAP = 0.5


def rounding_aware_error(got, want) -> float:
    """The largest element-by-element relative error, |x - y| / (|x| + |y|), where an
    element pair smaller than SCALE_FLOOR times the largest pair is measured against that."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.size == 0:
        return 0.0
    scale = np.abs(got) + np.abs(want)
    finite = scale[np.isfinite(scale)]
    floor = SCALE_FLOOR * float(finite.max()) if finite.size else 0.0
    errors = relative_errors(got, want)
    with np.errstate(divide="ignore", invalid="ignore"):
        floored = np.abs(got - want) / np.maximum(scale, floor)
    errors = np.where(scale < floor, floored, errors)
    return float(np.max(np.where(np.isnan(errors), np.inf, errors)))


def gradient_observation(analytic, plus, minus) -> np.ndarray:
    """(3, K): a student's gradient and f at x + h and x - h, element by element; a
    gradient of the wrong size becomes NaN (it then disagrees, in the grader)."""
    plus, minus = np.ravel(plus), np.ravel(minus)
    grad = np.asarray(analytic, dtype=np.float64).ravel()
    if grad.size != plus.size:
        grad = np.full(plus.size, np.nan)
    return np.stack([grad, plus, minus])


def nudged_observation(analytic, f, x, df=None) -> np.ndarray:
    """(3, K): a student's gradient and f at x + h and x - h, at the K elements of x that
    nudge_sample picks (all of a small x); a gradient not shaped like x becomes NaN."""
    x = np.asarray(x, dtype=np.float64)
    at = nudge_sample(x)
    plus, minus = nudged(f, x, df, at=at)
    grad = np.asarray(analytic, dtype=np.float64).ravel()
    grad = grad[at] if grad.size == x.size else np.full(at.size, np.nan)
    return np.stack([grad, plus, minus])


def stacked(*observations: np.ndarray) -> np.ndarray:
    """Several gradient observations side by side (one measure for all)."""
    return np.concatenate(observations, axis=1)


def flat(*arrays) -> np.ndarray:
    """The arrays' values, one after the other, as float64 (integers up to 2**53 exactly)."""
    return np.concatenate([np.ravel(np.array(a, dtype=np.float64)) for a in arrays])


def as_given(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """(2, K): a call's inputs right before it and right after it, both flat(...) in the
    same process (left_as_given compares them)."""
    after = np.asarray(after, dtype=np.float64)
    if after.shape != before.shape:  # the student's code resized an input: fails there
        after = np.full(before.shape, np.nan)
    return np.stack([before, after])


def left_as_given(got, want):
    """measure: whether a call left its inputs as it was given them, from as_given's
    snapshots of the student's process: the same bytes before and after, bit for bit. Both
    were taken by the same process, so no processor or BLAS kernel can make them differ;
    only code that writes into its inputs can (x[i] += h, then x[i] -= h, leaves a
    residue). The snapshot before the call must be the check's inputs (the reference
    run's, to rounding: another processor may draw them a few ulps apart), so that it is
    a snapshot of what the probe gave, not just any two equal arrays."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.ndim != 2 or got.shape[0] != 2 or got.shape != want.shape:
        return "not recorded as the probe records it"
    before, after = got
    if before.size and float(relative_errors(before, want[0]).max()) > ROUNDING_RTOL:
        return "the values recorded before the call are not the check's inputs"
    if np.array_equal(before.view(np.uint64), after.view(np.uint64)):
        return True
    if not np.all(np.isfinite(after)):
        return "changed in place (they hold NaN or infinity after the call, or changed shape)"
    change = float(relative_errors(after, before).max())
    if change <= ROUNDING_RTOL:
        return (
            f"changed in place by a rounding-sized amount (largest relative change "
            f"{change:.0e}): the code writes into them and puts them back, which leaves "
            "rounding residue"
        )
    return f"changed in place (largest relative change {change:.1e})"


def network_loss_observed(build, params: dict, X, y, names) -> tuple:
    """A student's network's loss on copies of X and y: (loss, grads, left, observed).

    build(params) -> a student's network holding copies of `params`, a fresh one for every
    evaluation, so nothing a loss call leaves behind reaches the next. `left` is X, y and
    every parameter right before and right after the call (as_given: a loss that edits them
    in place, W -= ..., or a layer writing into a cached array, changes them); `observed`
    holds the gradient of each parameter in `names` beside its own loss at that parameter
    nudged by +-h.
    """
    net, X_in, y_in = build(params), X.copy(), y.copy()

    def given():
        return flat(X_in, y_in, *(net.params[n] for n in params))

    before = given()
    loss, grads = net.loss(X_in, y_in)
    left = as_given(before, given())
    observed = []
    for name in names:

        def f(v, name=name):
            return build({**params, name: v}).loss(X.copy(), y.copy())[0]

        observed.append(nudged_observation(grads[name], f, params[name]))
    return loss, grads, left, stacked(*observed)


# The student's forward values at the nudged inputs must be a correct forward pass's: the
# reference run nudges its own forward at the same inputs, so those values are checked like
# any forward output. Otherwise a forward that answers a constant only while it is being
# nudged (it can see the grader's frames) makes a zero gradient agree with "its own"
# centred differences (round 7). Alternates differ from the reference by rounding only.
NUDGED_FORWARD_RTOL = 1e-7


def centred_error(h: float = STEP, forward_is_the_references: bool = True):
    """measure: the relative error between a student's gradient and the centred
    difference of their own forward values, (f(x+h) - f(x-h)) / 2h, credited only where
    those forward values are a correct forward pass's (the reference's, at the same
    nudged inputs). forward_is_the_references=False where a correct forward pass need not
    give the reference's values (it draws its own dropout mask): then only the agreement."""

    def measure(got, want):
        got = np.asarray(got, dtype=np.float64)
        if got.ndim != 2 or got.shape[0] != 3:
            return float("inf")
        want = np.asarray(want, dtype=np.float64)
        if forward_is_the_references and want.shape != got.shape:
            return float("inf")
        if forward_is_the_references:
            off = rounding_aware_error(got[1:], want[1:])
            if off > NUDGED_FORWARD_RTOL:
                # The judge says why (course.grader.judge.judge): a forward that is off
                # everywhere, or one right at x that answers otherwise while nudged.
                return f"{NUDGED_FORWARD_OFF} (relative error {off:.1e})"
        return rounding_aware_error(got[0], (got[1] - got[2]) / (2 * h))

    return measure


def against_reference(got, want) -> float:
    """measure: relative error of a student's value against a trusted value the probe
    computed in the reference run (Rule.uses names the student's observation)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    return rounding_aware_error(got, want)


def seeded(got, want):
    """measure: draws with one seed, the same seed again, another seed (stacked): the
    same seed must give the same draws, another one different draws."""
    first, again, other = np.asarray(got, dtype=np.float64)
    if not np.array_equal(first, again):
        return "the same seed does not give the same draws"
    if np.array_equal(first, other):
        return "another seed gives the same draws"
    return True


def away_from_zero(rng: np.random.Generator, shape=None, low: float = 0.5, high: float = 2.0):
    """Entries of size `low` to `high` with random signs (a float when shape is None).

    Away from zero so that a kink (ReLU at 0) is not hit by chance, and no tiny weight or
    gradient makes a relative error of rounding (or of where epsilon sits) look like a
    mistake; the probe chooses `low` for what it checks.
    """
    magnitude = rng.uniform(low, high, shape)
    signs = rng.choice([-1.0, 1.0], shape)
    return float(magnitude * signs) if shape is None else magnitude * signs


KINK_GAP = 1e-3  # 30 to 100 times what a nudge of STEP moves a margin or pre-activation


def clear_of_kinks(draw, distance, gap: float = KINK_GAP, tries: int = 1000):
    """What draw() returns, drawn again while distance(drawn) < gap.

    A centred difference across a kink (a hinge's margin at 0, ReLU at 0) measures neither
    side's slope, so a right gradient would fail its self-check: 2 or 3 draws in 1000 of the
    SVM and network checks did, measured by sweeping seeds. distance: how close the drawn
    inputs put any margin or pre-activation to its kink (trusted NumPy, not student code).
    """
    for _ in range(tries):
        drawn = draw()
        if distance(drawn) >= gap:
            return drawn
    raise RuntimeError(f"no inputs clear of kinks in {tries} draws")


def hinge_distance(W, X, y) -> float:
    """How close a multiclass SVM margin, s_j - s_y + 1 for j != y, comes to 0."""
    scores = X @ W
    margins = scores - scores[np.arange(len(y)), y][:, None] + 1.0
    margins[np.arange(len(y)), y] = np.inf
    return float(np.min(np.abs(margins)))


def relu_distance(params: dict, X) -> float:
    """How close any hidden pre-activation of a ReLU network (W1, b1, ..., WL, bL) comes
    to 0."""
    layers = len(params) // 2
    closest, h = np.inf, np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    for layer in range(1, layers):
        pre = h @ params[f"W{layer}"] + params[f"b{layer}"]
        closest = min(closest, float(np.min(np.abs(pre))))
        h = np.maximum(pre, 0)
    return closest


# A backward pass is written by hand. A finite difference of the forward pass (any step,
# a complex step, Richardson's extrapolation; calling the forward or writing it again
# inline) evaluates the forward once or more per input element, and so runs many times
# the lines of the learner's own code that an analytic backward runs: the course's closed
# and staged forms run at most about as many as the reference's forward or backward
# (course.grader.probe.lines_run counts them; tests/test_attacks_round8.py measures both).
# The bound is the reference run's counts, not the learner's forward: a forward padded
# with idle lines cannot raise it.
HAND_FACTOR, HAND_SLACK = 4, 50


def by_hand(got, want):
    """measure: the lines of the learner's code their backward pass ran are at most
    HAND_FACTOR times the reference's (the larger of its forward's and its backward's, on
    the same inputs) plus HAND_SLACK. got and want: (forward's lines, backward's lines)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != (2,) or want.shape != (2,) or not np.all(np.isfinite(got)):
        return "its observation could not be read"
    bound = HAND_FACTOR * float(want.max()) + HAND_SLACK
    if got[1] <= bound:
        return True
    # One wording for every case (the counts would split the report into a line each).
    return (
        "it ran many times the code a backward pass runs: a gradient computed from your "
        "forward pass at nudged inputs (a finite difference) is not a backward pass"
    )


# Worth nothing itself: the gradients of the same case require it (Rule.requires).
BY_HAND_RULE = Rule(
    "backward pass by hand, for",
    kind="true",
    weight=0,
    hint="compute each gradient from the cache with the chain rule; numerical gradients "
    "are for checking one.",
    measure=by_hand,
)


# A backward pass is written by hand, second rule: it is fast on a large case. Each check
# that requires BY_HAND_RULE also runs its layer once on inputs drawn (from its seed) so
# that the chain rule costs about one forward pass (milliseconds) while a gradient from
# forward passes at nudged inputs needs at least about 1e4 of them, however it groups the
# elements that share no output (the Jacobian's colouring), stacked in one batch or not:
# seconds to minutes. The kernel gives that backward a CPU-time budget (LARGE_FACTOR times
# its own forward's, at least LARGE_FLOOR, at most LARGE_CAP seconds) and LARGE_MEMORY more
# bytes of address space; a kernel that lifts them meets the cell's timeout (60 s, taken
# outside the kernel). Its gradients travel as a few random projections (LARGE_PROJECTIONS
# each, drawn after the backward returned), judged against the reference's to rounding;
# every gradient sub-check of the check requires it (Rule.requires_every).
LARGE_FACTOR, LARGE_FLOOR, LARGE_CAP = 20, 0.1, 2.0
LARGE_MEMORY = 1 << 30
LARGE_PROJECTIONS = 2
LARGE_RTOL = 1e-9  # the course's analytic forms agree to about 1e-13 of the norm
# Off only where a test judges many seeds (tests/test_inputs_sweep.py: a few run it). A
# kernel that turns it off records no large case, and fails it.
LARGE_CASES = [True]


# A large case's draws for the last few seeds, kept: the tests judge hundreds of candidate
# functions on one seed, and drawing the large arrays was half of that (in a grading run
# each seed is drawn once and this only holds them). Bounded in bytes; callers get copies.
_DRAWN: dict[int, tuple[np.random.Generator, list]] = {}
_DRAWN_BYTES = 64 << 20


class _Draws:
    """default_rng(seed): the same values in the same order, replayed from _DRAWN where
    this seed drew them before (any Generator method: standard_normal, uniform, choice)."""

    def __init__(self, seed: int):
        self._seed, self._log, self._own = seed, [], None

    def __getattr__(self, method: str):
        def draw(*args, **kwargs):
            return self._draw(method, args, kwargs)

        return draw

    def _draw(self, method: str, args: tuple, kwargs: dict):
        call = (method, repr(args), repr(sorted(kwargs.items())))
        self._log.append((method, args, kwargs))
        if self._own is not None:  # left the kept sequence: an ordinary generator
            return getattr(self._own, method)(*args, **kwargs)
        if self._seed not in _DRAWN:  # a generator only for a seed not kept yet
            _DRAWN[self._seed] = (np.random.default_rng(self._seed), [])
        rng, kept = _DRAWN[self._seed]
        at = len(self._log) - 1
        if at < len(kept) and kept[at][0] == call:
            return _copied(kept[at][1])
        if at == len(kept):
            value = getattr(rng, method)(*args, **kwargs)
            kept.append((call, value))
            _forget_oldest_draws()
            return _copied(value)
        self._own = np.random.default_rng(self._seed)  # another sequence: replay this one's
        for earlier, earlier_args, earlier_kwargs in self._log[:-1]:
            getattr(self._own, earlier)(*earlier_args, **earlier_kwargs)
        return getattr(self._own, method)(*args, **kwargs)


def _copied(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def _forget_oldest_draws() -> None:
    def size():
        return sum(np.asarray(v).nbytes for _, kept in _DRAWN.values() for _, v in kept)

    while len(_DRAWN) > 1 and size() > _DRAWN_BYTES:
        del _DRAWN[next(iter(_DRAWN))]


def _projections(grads, rng) -> np.ndarray:
    """(gradients, 2 + LARGE_PROJECTIONS): each gradient's size, its norm and its dot
    products with random normal vectors (drawn once, for the largest)."""
    arrays = [np.asarray(g, dtype=np.float64).ravel() for g in grads]
    largest = max((a.size for a in arrays), default=0)
    u = rng.standard_normal((LARGE_PROJECTIONS, largest))
    rows = []
    for a in arrays:
        finite = bool(np.all(np.isfinite(a)))
        norm = float(np.linalg.norm(a)) if finite else float("nan")
        rows.append([float(a.size), norm, *(u[:, : a.size] @ a if finite else [np.nan] * 2)])
    return np.array(rows, dtype=np.float64)


def _own_arrays(grads) -> list[np.ndarray]:
    """The backward pass's gradients as new float64 arrays, copied inside its budget: a
    result that computes its values only when converted (its own __array__, an ndarray
    subclass, a buffer) or that a thread fills later does that work here, counted (round
    13), and what _projections reads afterwards is the grader's own copy."""
    grads = list(grads) if isinstance(grads, tuple | list) else [grads]
    return [np.array(g, dtype=np.float64, copy=True, subok=False) for g in grads]


def record_large(out, rng, label: str, run, prefix: str = "large") -> None:
    """The large case of a by-hand backward pass, under "<prefix>:<label>".

    run(large_rng) -> (forward, backward): forward() runs the student's forward pass on
    inputs drawn from large_rng and returns its cache; backward(cache) returns the
    gradients (a tuple, or one array). One draw of `rng` seeds large_rng, whatever happens.
    Where the gradient comes from a call that is also the forward pass (a loss and its
    gradient), forward() is a trusted forward pass of the same cost, the yardstick.
    """
    seed = int(rng.integers(2**63))
    if not LARGE_CASES[0]:
        return
    key = f"{prefix}:{label}"
    if _probe._WORKED_ELSEWHERE[0]:
        out[key] = Broken(
            "not run: on the smaller cases your backward pass worked in another thread or "
            "process (a backward pass by hand needs neither)"
        )
        return

    def compute():
        own = _Draws(seed)
        forward, backward = run(own)
        start = time.process_time()
        try:
            cache = within_budget(forward, LARGE_CAP, LARGE_MEMORY)
        except OverBudget as exc:
            if exc.args:
                return Broken(f"the forward pass was stopped: {exc.args[0]}")
            return Broken(f"the forward pass took more than {LARGE_CAP:g} s of CPU time")
        except MemoryError:
            return Broken("the forward pass ran out of memory")
        spent = time.process_time() - start
        budget = min(LARGE_CAP, max(LARGE_FLOOR, LARGE_FACTOR * spent))
        try:
            grads = within_budget(lambda: _own_arrays(backward(cache)), budget, LARGE_MEMORY)
        except OverBudget as exc:
            if exc.args:
                return Broken(
                    f"the backward pass was stopped: {exc.args[0]} (a backward pass by hand "
                    "needs no other thread or process)"
                )
            return Broken(
                f"the backward pass took more than {budget:.2g} s of CPU time (your forward "
                f"pass: {spent * 1e3:.0f} ms). A backward pass by hand costs about one "
                "forward pass; a gradient from your forward pass at nudged inputs (a finite "
                "difference, a complex step, stacked in a batch or not) costs thousands"
            )
        except MemoryError:
            return Broken(
                f"the backward pass ran out of memory (more than {LARGE_MEMORY >> 20} MiB "
                "beyond the forward's): a backward pass by hand needs a few arrays of the "
                "inputs' size, a batch of nudged inputs needs thousands"
            )
        return _projections(grads, own)

    out.record(key, compute)


def projection_error(got, want):
    """measure: the large case's gradients against the reference's, from _projections:
    the largest difference of a norm or a projection, relative to the reference
    gradient's norm."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.ndim != 2 or got.shape[1] != 2 + LARGE_PROJECTIONS or len(got) != len(want):
        return f"returned {len(got) if got.ndim == 2 else 'other'} gradients, expected {len(want)}"
    if not np.array_equal(got[:, 0], want[:, 0]):
        return "a gradient has the wrong size"
    if not np.all(np.isfinite(got)):
        return "a gradient contains NaN or infinity"
    scale = np.maximum(want[:, 1], 1e-300)[:, None]
    return float(np.max(np.abs(got[:, 1:] - want[:, 1:]) / scale))


# Worth nothing itself, like BY_HAND_RULE: every gradient sub-check of the check requires
# it (Rule.requires_every=("large",)).
LARGE_RULE = Rule(
    "gradients of a large case (judged by random projections), for",
    kind="below",
    rtol=LARGE_RTOL,
    weight=0,
    hint="compute each gradient from the cache with the chain rule, with array operations "
    "over the whole batch.",
    measure=projection_error,
)


def with_large(rules: dict[str, Rule], gradients, prefix: str = "large") -> dict[str, Rule]:
    """rules with LARGE_RULE under `prefix` (record_large's), required by each rule named in
    `gradients` (besides what it required already)."""
    import dataclasses

    changed = {k: dataclasses.replace(r, requires_every=(*r.requires_every, prefix))
               for k, r in rules.items() if k in gradients}  # fmt: skip
    return {**rules, **changed, prefix: LARGE_RULE}


# ---------------------------------------------------------------- shared by several assignments
# Each assignment's checks module imports only this one of the checks: a rule changed for
# one assignment never moves another's grade, and a grading kernel loads only its own.


def row_scales(rng, N: int) -> np.ndarray:
    """(N, 1) factors from 0.02 to 2, shuffled: rows' score ranges differ by 100x, so one
    maximum for the whole batch underflows the smaller rows."""
    return np.geomspace(0.02, 2.0, N)[rng.permutation(N), None]


def large_scores(rng, N: int, C: int) -> np.ndarray:
    """(N, C) scores up to about 1e3, rows of very different ranges."""
    return 600.0 * rng.standard_normal((N, C)) * row_scales(rng, N)


def moments(W) -> np.ndarray:
    """(mean, std, then the shape) of one weight matrix: an observation, judged by
    drawn_with in the grader."""
    W = np.asarray(W, dtype=np.float64)
    return np.array([W.mean(), W.std(), *W.shape], dtype=np.float64)


SIGMAS = 6.0


def drawn_with(scale: float, sigmas: float = SIGMAS):
    """measure: one weight matrix's (mean, std, shape) against N(0, scale**2), within
    `sigmas` of each statistic's sampling spread for its n entries: the std's ratio to
    scale within sigmas / sqrt(2n), the mean within sigmas * scale / sqrt(n). Judged per
    matrix, never pooled, so a matrix at another scale does not hide among the others'
    draws. The shape must be the reference run's (drawn from the seed)."""

    def measure(got, want):
        got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        if got.shape != want.shape or not np.array_equal(got[2:], want[2:]):
            return "the weight matrix does not have the expected shape"
        mean, std, n = got[0], got[1], float(np.prod(got[2:]))
        if abs(std / scale - 1) < sigmas / np.sqrt(2 * n) and abs(mean) < sigmas * scale / np.sqrt(
            n
        ):
            return True
        return (
            "weights are not drawn from N(0, weight_scale**2) (the sample's mean or "
            "standard deviation is far off)"
        )

    return measure


INPUTS_RULE = Rule(
    "X, y and the parameters after loss(X, y),",
    kind="true",
    measure=left_as_given,  # bit for bit, against the same process's snapshot
    hint="loss changed X, y or self.params in place (an in-place update, or a layer "
    "writing into an array it was given or cached): work on new arrays.",
    # Leaving them alone is easy (a loss that returns zeros does): credited only with the
    # loss of the same case (two_layer_net's and fully_connected_net's trivial answers
    # earned it on every seed: tests/test_trivial_answers.py).
    requires="loss",
)


def record_network_loss(out, label: str, build, params: dict, X, y) -> None:
    """Record a network's loss, each gradient, its own loss at each parameter nudged by
    +-h (the grader compares the centred differences with the gradients), and X, y and
    the network's parameters after the call, raw (the grader wants them unchanged); see
    network_loss_observed."""
    names = list(params)

    def compute():
        loss, grads, left, observed = network_loss_observed(build, params, X, y, names)
        return [np.asarray(loss, dtype=np.float64)] + [grads[n] for n in names] + [observed, left]

    keys = [f"loss:{label}"] + [f"grad:{n}, {label}" for n in names] + [f"selfcheck:{label}"]
    keys.append(f"inputs:{label}")
    out.record(keys, compute)


# The functions carried from 03 that a network of 05 or 06 runs through (course.carry): a
# failure they cause is named by their own checks.
CARRIED_03 = {
    "affine_forward": "affine_forward",
    "affine_backward": "affine_backward",
    "relu": "relu_forward or relu_backward",
    "softmax_loss": "softmax_loss",
}


# ---------------------------------------------------------------- the checks' toolkit
# Each piece is written once here, and every checks module uses it instead of a copy.


def copies(*arrays) -> list[np.ndarray]:
    """Fresh copies of the arrays (same values, same memory layout), one per argument: what
    a probe hands the learner's code, so that nothing it writes into reaches the probe's
    own arrays or the next call."""
    return [np.array(a, copy=True) for a in arrays]


def change_relative_to_largest(got, want) -> float:
    """measure: the largest absolute difference between the first array stacked in an
    observation and each of the others, over the first one's largest magnitude (inf where
    any is not finite, or the first is all zeros: nothing computed). For outputs that must
    not change at all, such as the outputs up to t after later inputs changed."""
    got = np.asarray(got, dtype=np.float64)
    if got.ndim < 2 or len(got) < 2 or not np.all(np.isfinite(got)):
        return float("inf")
    scale = float(np.abs(got[0]).max())
    if scale == 0:
        return float("inf")  # all zeros: nothing computed
    return max(float(np.abs(other - got[0]).max()) / scale for other in got[1:])


def change_element_by_element(got, want) -> float:
    """measure: the largest relative error, element by element (rounding_aware_error),
    of each array stacked in an observation after the first against the first: for an
    output that must not change, such as a normalisation's at another scale of x."""
    got = np.asarray(got, dtype=np.float64)
    if got.ndim < 2 or len(got) < 2:
        return float("inf")
    return max(rounding_aware_error(other, got[0]) for other in got[1:])


def training_curve_rule(
    band: float, hint: str, what: str = "training loss curve", weight: float = 1.0
) -> Rule:
    """The rule of a training check: the learner's curve (a loss at every step, drawn over
    the reference's if it fails) within the relative `band` of the reference's. Each
    checks module measures its own band (`course bench --bands`) and passes it here."""
    return Rule(what, rtol=band, weight=weight, hint=hint, picture="curve")


def self_check_rule(
    gradients: str,
    own: str,
    rtol: float,
    requires,
    hint: str | None = None,
    then: str = "for",
    weight: float = 1.0,
    h: float = STEP,
    forward_is_the_references: bool = True,
) -> Rule:
    """The rule that the learner's gradients agree with centred differences of their own
    forward pass or loss, as the notebook's own gradient check does (centred_error; the
    words read "<gradients> against centred differences of your own <own>, <then> <case>").
    Credited only with what `requires` names: all-zero code agrees with itself. hint:
    by default, that a gradient does not match the `own` it comes from."""
    return Rule(
        f"{gradients} against centred differences of your own {own},"
        + (f" {then}" if then else ""),
        kind="below",
        rtol=rtol,
        weight=weight,
        hint=f"a gradient does not match the {own} it comes from." if hint is None else hint,
        requires=requires,
        measure=centred_error(h, forward_is_the_references),
    )
