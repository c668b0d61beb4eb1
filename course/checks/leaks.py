"""Hidden checks of assignment 09, "Everything leaks" (the capstone; its API is stated in
the notebook, since shared API.md stops at 08).

Part 1 grades the learner's instruments, each on models and arrays drawn from the check's
(secret) seed. The models are the grader's own small tanh networks (`course.runs.TanhNet`), smooth
everywhere, so that a centred difference is accurate to about 1e-9 relative; for the
gradient check, some of their gradients are wrong on purpose, by a secret amount, in
secret parameters. The kernel reports what the instruments returned, and the models'
parameters before and after; the grader compares them with the same probe run on the
source solutions.
"""

import numpy as np

from course.checks.common import as_given, copies, flat, left_as_given
from course.data import digits
from course.grader.model import Assignment, Check, Rule, register
from course.grader.probe import in_the_grader
from course.runs import CAUSES, EDGE_KINDS, RUN_KINDS, TanhNet, make_edge_run, make_run

ASSIGNMENT = Assignment(
    id="09_leaks",
    notebook="leaks",
    title="09 Everything leaks",
    slow_cells=frozenset({"diagnose", "fix"}),
    builds=(
        "the instruments of a practitioner: the loss at initialisation against ln C, a "
        "gradient check of a whole model, update-to-weight ratios, activation statistics "
        "per layer, a tiny-subset overfit, the loss of a whole dataset in batches, t "
        "intervals over seeds, paired, to decide whether an improvement is real; used on your "
        "04 network, then to diagnose whole broken runs and fix them"
    ),
    leak=(
        "every part built in 01-08 leaks into the loss of a whole run; the instruments say "
        "which: a start far from ln C is the initialisation's scale, a dead or saturated "
        "layer the activation's, an update ratio far from 1e-3 the learning rate's, a model "
        "that cannot overfit 20 examples a bug, a gap between train and validation loss "
        "over-fitting, an evaluation in training mode or a mean of batch means a lie, and "
        "a difference of a percent between runs a claim until a paired interval over seeds "
        "excludes 0; read in order, the start first, they name a broken run's leak, and a "
        "fix is a run they all read healthy"
    ),
)
NOTEBOOK = ASSIGNMENT.key


def _params(rng, D: int, H: int, C: int, scale: float = 0.5) -> dict:
    return {
        "W1": scale * rng.standard_normal((D, H)),
        "b1": 0.1 * rng.standard_normal(H),
        "W2": scale * rng.standard_normal((H, C)),
        "b2": 0.1 * rng.standard_normal(C),
    }


def _data(rng, N: int, D: int, C: int):
    return rng.standard_normal((N, D)), rng.integers(0, C, N)


def _left_as_given(what: str, hint: str) -> Rule:
    """What a call left of its inputs, judged bit for bit (left_as_given): worth nothing
    alone, the rules that need it say so with `requires`."""
    return Rule(what, kind="true", measure=left_as_given, weight=0, hint=hint)


def _params_given(net) -> np.ndarray:
    return flat(*(net.params[k] for k in sorted(net.params)))


# ---------------------------------------------------------------- initial loss


def probe_initial_loss(student, rng, out):
    """The expected loss at initialisation for three numbers of classes drawn from the
    seed, one of them small (ln C against log10 C, log2 C or ln(C - 1) shows)."""
    classes = [int(rng.integers(2, 6)), *rng.choice(np.arange(6, 2000), size=2, replace=False)]
    out.record(
        "loss:expected loss at initialisation, for three hidden numbers of classes",
        lambda: np.array([student.expected_initial_loss(int(C)) for C in classes], float),
    )


register(
    Check(
        name="initial_loss",
        notebook=NOTEBOOK,
        points=1,
        probe=probe_initial_loss,
        rules={
            "loss": Rule(
                "value",
                rtol=1e-9,
                hint="at initialisation the scores are nearly equal, so every class has "
                "probability 1/C: the loss is -log(1/C), a natural log.",
            ),
        },
    )
)


# ---------------------------------------------------------------- gradient check


def gradient_check_cases(rng) -> list[tuple[str, dict, dict, np.ndarray, np.ndarray]]:
    """Two models, each with one or two of its four gradients wrong (which ones, and by
    how much, from the seed): (label, params, hidden, X, y). Drawn again until every
    gradient entry is at least 1e-3 in size, so that the centred differences' rounding
    (about 1e-11) stays far below any relative error a rule looks at."""
    cases = []
    for label, count, (N, D, H, C) in (
        ("a model with one wrong gradient", 1, (7, 5, 4, 3)),
        ("a model with two wrong gradients", 2, (9, 4, 4, 5)),
    ):
        for _ in range(1000):
            params, (X, y) = _params(rng, D, H, C), _data(rng, N, D, C)
            names = sorted(rng.choice(sorted(params), size=count, replace=False).tolist())
            hidden = {
                n: (
                    rng.uniform(0.01, 0.2) * rng.standard_normal(params[n].shape),
                    rng.uniform(0.5, 2.0, params[n].shape),
                )
                for n in names
            }
            grads = TanhNet(params, 0.1).loss(X, y)[1]
            if min(float(np.abs(g).min()) for g in grads.values()) > 1e-3:
                break
        cases.append((label, params, hidden, X, y))
    return cases


def probe_gradient_check(student, rng, out):
    """The learner's rel_error per parameter on each model, the parameters right before
    and right after the call (the check must put back every value exactly), and which
    parameters it reported on."""
    for label, params, hidden, X, y in gradient_check_cases(rng):
        net = TanhNet({k: v.copy() for k, v in params.items()}, 0.1, hidden)
        names = sorted(params)

        def compute(net=net, X=X, y=y, names=names):
            before = _params_given(net)
            errors = student.gradient_check_model(net, X.copy(), y.copy(), h=1e-5)
            after = as_given(before, _params_given(net))
            errors = {k: float(v) for k, v in dict(errors).items()}
            if sorted(errors) != names:
                raise KeyError(f"it returned errors for {sorted(errors)}, not for {names}")
            return [np.array([errors[k] for k in names]), after]

        out.record([f"errors:{label}", f"params:{label}"], compute)


def _planted(got, want):
    """measure: the rel_error of each parameter against the reference's, judged at the
    reference's scale where the reference finds a wrong gradient (its rel_error above 1e-4,
    a value the centred differences decide to about 1e-9 of itself), and below 1e-7 where
    the reference finds the gradient right (there both are rounding noise, about 1e-10)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return "not one finite error per parameter"
    for g, w in zip(got, want, strict=True):
        if w > 1e-4 and abs(g - w) > 1e-6 * w:
            return "a wrong gradient's relative error is not the reference's"
        if w <= 1e-4 and not 0 <= g < 1e-7:
            return "a right gradient is reported with a relative error above 1e-7"
    return True


GRADIENT_CHECK_HINT = (
    "for every entry of every parameter: f(p + h) and f(p - h) with the model's own loss, "
    "(f+ - f-) / 2h, the value put back exactly (save it, never p += h then p -= h); the "
    "analytic gradients from one loss call at the unchanged parameters; rel_error as the "
    "API's, max(|a - n| / max(1e-8, |a| + |n|)) over the entries, not a ratio of norms."
)

register(
    Check(
        name="gradient_check_model",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_gradient_check,
        rules={
            "errors": Rule(
                "relative error per parameter, on",
                kind="true",
                measure=_planted,
                cap=0.5,
                requires="params",
                hint=GRADIENT_CHECK_HINT,
            ),
            "params": _left_as_given(
                "the model's parameters after the check, on",
                "the check left the parameters changed: put each nudged value back "
                "exactly (save it first; p += h then p -= h leaves rounding residue).",
            ),
        },
    )
)


# ---------------------------------------------------------------- update ratios


def probe_update_ratios(student, rng, out):
    """The ratios between two snapshots of parameters of very different scales (a step
    of SGD, a step of Adam-sized changes), and the snapshots after the call."""
    for label in ("after a step of SGD", "after a step of equal-sized changes"):
        shapes = {"W1": (6, 5), "W2": (5, 3), "b1": (5,), "gamma1": (5,)}
        before = {
            k: rng.uniform(0.1, 3.0) * rng.standard_normal(s) + (1.0 if k == "gamma1" else 0)
            for k, s in shapes.items()
        }
        if "SGD" in label:
            step = {k: rng.uniform(1e-4, 1e-1) * rng.standard_normal(s) for k, s in shapes.items()}
        else:
            step = {k: 1e-3 * np.sign(rng.standard_normal(s)) for k, s in shapes.items()}
        after = {k: before[k] + step[k] for k in shapes}
        names = sorted(shapes)

        def compute(before=before, after=after, names=names):
            b, a = copies(*(before[k] for k in names)), copies(*(after[k] for k in names))
            given_b, given_a = dict(zip(names, b, strict=True)), dict(zip(names, a, strict=True))
            snapshot = flat(*b, *a)
            ratios = dict(student.update_ratios(given_b, given_a))
            left = as_given(snapshot, flat(*b, *a))
            if sorted(ratios) != names:
                raise KeyError(f"it returned ratios for {sorted(ratios)}, not for {names}")
            return [np.array([float(ratios[k]) for k in names]), left]

        out.record([f"ratios:{label}", f"inputs:{label}"], compute)


register(
    Check(
        name="update_ratios",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_update_ratios,
        rules={
            "ratios": Rule(
                "ratios",
                rtol=1e-9,
                requires="inputs",
                cap=0.5,
                hint="per parameter, the Frobenius norm of the change, |after - before|, "
                "over that of the parameter before it, |before| (not the norm of after, "
                "not a ratio of standard deviations, not squared norms).",
            ),
            "inputs": _left_as_given(
                "both snapshots after the call,",
                "the function changed the parameters it was given: read them only.",
            ),
        },
    )
)


# ---------------------------------------------------------------- activation statistics


def probe_activation_stats(student, rng, out):
    """Statistics of a ReLU layer's outputs with dead units (some columns zero in every
    row, others zero in all rows but one) and of a tanh layer's with saturated entries."""
    N, H = int(rng.integers(20, 40)), int(rng.integers(8, 16))
    relu = np.maximum(rng.standard_normal((N, H)) + rng.uniform(-1, 1, H), 0.0)
    dead = rng.choice(H, size=int(rng.integers(2, H // 2)), replace=False)
    relu[:, dead] = 0.0
    almost = int(rng.choice(np.setdiff1d(np.arange(H), dead)))
    relu[:, almost] = 0.0
    relu[int(rng.integers(N)), almost] = rng.uniform(0.5, 2.0)  # alive, by one row
    # A scale of 2 or more: about a fifth of the entries saturate (|a| > 0.99 where the
    # input passes 2.65), so none of at least 115 is a chance of 1e-10. From 0.5 (until
    # stop 58's ci2), a small scale saturated no entry, and constant zeros earned the
    # saturated share's sub-check: on 211 of 2000 seeds (0 of 2000 now).
    tanh = np.tanh(rng.uniform(2.0, 4.0) * rng.standard_normal((N + 3, H - 1)))
    # Units whose input weights are all 0 output tanh(0) = 0 exactly: dead here too, so that
    # no statistic of either case is 0 (round 16: constant zeros earned a sub-check).
    tanh[:, rng.choice(H - 1, size=2, replace=False)] = 0.0
    for label, a in (("ReLU outputs with dead units", relu), ("saturated tanh outputs", tanh)):

        def compute(a=a):
            (given,) = copies(a)
            before = flat(given)
            stats = dict(student.activation_stats(given))
            left = as_given(before, flat(given))
            values = [float(stats[k]) for k in ("mean", "std", "dead", "saturated")]
            return [*values, left]

        keys = [f"{k}:{label}" for k in ("mean", "std", "dead", "saturated")]
        out.record([*keys, f"inputs:{label}"], compute)


STATS_HINTS = {
    "mean": "the mean over every entry of the array.",
    "std": "the standard deviation over every entry, NumPy's default (divide by n, not "
    "n - 1: ddof=1 is the sample estimate, another convention).",
    "dead": "the share of units (columns) whose output is 0 in every row: a unit that fires "
    "for one example is alive (not the share of zero entries).",
    "saturated": "the share of entries with |a| > 0.99, on both sides (tanh saturates at "
    "-1 as at +1).",
}

register(
    Check(
        name="activation_stats",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_activation_stats,
        rules={
            **{
                k: Rule(k, rtol=1e-9, requires="inputs", hint=hint)
                for k, hint in STATS_HINTS.items()
            },
            "inputs": _left_as_given(
                "the activations after the call,",
                "the function changed the array it was given: read it only.",
            ),
        },
    )
)


# ---------------------------------------------------------------- overfit a small batch


def probe_overfit(student, rng, out):
    """The loss curve of plain gradient descent on a small batch, and the model's
    parameters after it (the training must change the model it is given)."""
    N, D, H, C = 12, 6, int(rng.integers(8, 14)), int(rng.integers(3, 6))
    params, (X, y) = _params(rng, D, H, C), _data(rng, N, D, C)
    steps, rate = int(rng.integers(25, 40)), float(rng.uniform(0.3, 0.8))
    net = TanhNet({k: v.copy() for k, v in params.items()}, reg=0.0)

    def compute():
        X_in, y_in = copies(X, y)
        losses = student.overfit_small_batch(net, X_in, y_in, steps, rate)
        return [np.asarray(losses, dtype=np.float64), _params_given(net)]

    out.record(["curve:loss before each step", "params:the model's parameters after"], compute)


register(
    Check(
        name="overfit_small_batch",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_overfit,
        rules={
            "curve": Rule(
                "loss curve",
                rtol=1e-6,
                picture="curve",
                hint="`steps` steps, each: loss and gradients of the whole batch from "
                "model.loss(X, y), the loss recorded before the update, then every "
                "parameter p -= learning_rate * its gradient.",
            ),
            "params": Rule(
                "",
                rtol=1e-6,
                hint="train the model you are given: update model.params (its arrays, or "
                "the dict's entries), not a copy.",
            ),
        },
    )
)


# ---------------------------------------------------------------- dataset loss


def probe_dataset_loss(student, rng, out):
    """The loss over a whole set in batches, on a model whose training mode differs from
    its test mode (a fixed mask on the hidden layer) and which has a regulariser: a set
    that the batches divide evenly and one whose last batch is short."""
    D, H, C = 5, int(rng.integers(6, 10)), int(rng.integers(3, 7))
    params = _params(rng, D, H, C)
    mask = rng.integers(0, 2, H) * 2.0  # keeps half the units, scaled by 1 / 0.5
    for label, (N, batch) in (
        ("a set the batches divide evenly", (int(rng.integers(3, 6)) * 8, 8)),
        ("a set whose last batch is short", (int(rng.integers(4, 7)) * 7 + 2, 7)),
    ):
        X, y = _data(rng, N, D, C)
        net = TanhNet({k: v.copy() for k, v in params.items()}, reg=0.3, train_mask=mask)

        def compute(net=net, X=X, y=y, batch=batch):
            X_in, y_in = copies(X, y)
            before = flat(X_in, y_in, _params_given(net))
            loss = float(student.dataset_loss(net, X_in, y_in, batch))
            return [np.float64(loss), as_given(before, flat(X_in, y_in, _params_given(net)))]

        out.record([f"loss:on {label}", f"inputs:on {label}"], compute)


register(
    Check(
        name="dataset_loss",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_dataset_loss,
        builds_on={"softmax_loss": "softmax_loss"},
        rules={
            "loss": Rule(
                "loss",
                rtol=1e-9,
                requires="inputs",
                hint="scores in test mode, model.loss(X_batch) with no labels (with labels "
                "the model runs in training mode and adds its regulariser), your "
                "softmax_loss of each batch, weighted by the batch's size: the last batch "
                "may be short, so the mean of the batches' means is not the set's.",
            ),
            "inputs": _left_as_given(
                "X, y and the parameters after the call,",
                "the function changed X, y or the model's parameters: evaluate only.",
            ),
        },
    )
)


# ---------------------------------------------------------------- is this improvement real?


IMPROVEMENT_KINDS = (
    "B clearly better",
    "a difference within the seeds' noise",
    "B better on every seed, by less than the seeds differ",
    "B worse",
)


def improvement_cases(rng) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"pair k": (a, b)}: the losses of regimens A and B, one per seed, paired by seed. Six
    pairs: each kind of IMPROVEMENT_KINDS once, and two more of any kind, in an order the
    inputs decide, so that the right decisions are computed, never known (the pairs' names
    say nothing of their kind). Each decision is far from the interval's edge (never a coin
    toss at rounding), and the kinds tell apart a decision by the mean alone, by unpaired
    intervals, or the wrong way round."""
    kinds = list(IMPROVEMENT_KINDS) + list(rng.choice(IMPROVEMENT_KINDS, size=2))
    cases = {}
    for k, kind in enumerate(rng.permutation(kinds), start=1):
        n = int(rng.integers(6, 11) if kind.startswith("a difference") else rng.integers(4, 9))
        a = rng.uniform(0.3, 0.6) + rng.uniform(0.05, 0.1) * rng.standard_normal(n)
        noise = rng.standard_normal(n)
        noise = (noise - noise.mean()) / noise.std(ddof=1)  # mean 0, sample std 1 exactly
        if kind == "B clearly better":
            d = 0.05 + 0.01 * noise  # a - b
        elif kind.startswith("a difference"):
            d = 0.01 * noise + 0.2 * 0.01 / np.sqrt(n)  # mean above 0, interval across it
        elif kind.startswith("B better on every"):
            d = 0.015 * a.mean() + 0.001 * noise
        else:
            d = -0.05 + 0.01 * noise
        cases[f"pair {k}"] = (a, a - d)
    return cases


def probe_improvement(student, rng, out):
    """The learner's interval of each regimen's mean and of the paired differences, on each
    case, and the six decisions as one observation: an answer that ignores its data (always
    False, always True) is right on some cases, and earns nothing for that."""
    cases = improvement_cases(rng)
    for label, (a, b) in cases.items():

        def compute(a=a, b=b):
            a_in, b_in = copies(a, b)
            return np.array(
                [
                    student.mean_interval(a_in.copy()),
                    student.mean_interval(b_in.copy()),
                    student.paired_interval(a_in.copy(), b_in.copy()),
                ],
                dtype=np.float64,
            )

        out.record(f"intervals:{label}", compute)

    def decide():
        decisions = []
        for a, b in cases.values():
            decision = student.improvement_is_real(*copies(a, b))
            if not isinstance(decision, bool | np.bool_):
                raise TypeError(f"improvement_is_real returned {type(decision).__name__}")
            decisions.append(float(bool(decision)))
        return np.array(decisions)

    out.record(f"decision:on pairs 1 to {len(cases)}", decide)


register(
    Check(
        name="improvement_real",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_improvement,
        rules={
            "intervals": Rule(
                "intervals (A's mean, B's mean, the paired difference) for",
                rtol=1e-9,
                cap=0.5,
                hint="mean +- t * s / sqrt(n), with s the sample standard deviation "
                "(ddof=1), t = t_quantile((1 + confidence) / 2, n - 1) (not 1.96: a few "
                "seeds have fatter tails), and for the pair the same interval of a - b, "
                "seed by seed.",
            ),
            "decision": Rule(
                "decisions, B better than A (1) or not (0),",
                rtol=0,
                hint="B is better only when the whole paired interval of a - b lies above "
                "0: not from the means alone, not from whether A's and B's own intervals "
                "overlap (the seed's share of each loss cancels in a - b).",
            ),
        },
    )
)


# ---------------------------------------------------------------- broken runs


def probe_diagnose(student, rng, out):
    """The learner's diagnosis of eight runs: every kind of RUN_KINDS once
    (course.runs.make_run), and a run at the edge of each of EDGE_KINDS (make_edge_run: the
    healthy run whose first layer moves the fastest, the diverged run whose ratio falls the
    furthest by its tenth step), in an order the inputs decide, so that no diagnosis is found
    by elimination and none whose threshold sits at a kind's edge passes on some seeds only.
    Recorded as indices of CAUSES, all in one observation: a diagnosis that ignores its run
    (always "no leak") is right on some, and earns nothing for that.

    The runs' true kinds are the grader's alone (round 17): computed only in the grader's
    own run of this probe (Rule.uses), and in a kernel dropped before the learner's code
    runs, so that nothing the kernel records or keeps beside the runs says what they are.
    """
    made = [(kind, make_run) for kind in RUN_KINDS] + [(k, make_edge_run) for k in EDGE_KINDS]
    made = [made[i] for i in rng.permutation(len(made))]
    data = digits()
    kinds = [kind for kind, _ in made]
    runs = [maker(kind, rng, data) for kind, maker in made]
    truth = np.full(len(runs), np.nan)
    if in_the_grader():
        truth = np.array([CAUSES.index(kind) for kind in kinds], dtype=np.float64)
    del kinds, made

    def compute():
        found = []
        for run in runs:
            answer = student.diagnose(run)
            if not isinstance(answer, str) or answer not in CAUSES:
                raise ValueError(f"diagnose returned {answer!r}, not one of CAUSES")
            found.append(CAUSES.index(answer))
        return np.array(found, dtype=np.float64)

    detail = f"of runs 1 to {len(runs)}"
    out.record(f"diagnoses:{detail}", compute)
    out.record(f"truth:{detail}", lambda: truth)


def _causes(got, want):
    """measure: True if every entry is the index of one of CAUSES."""
    got = np.asarray(got, dtype=np.float64)
    if got.ndim != 1 or not np.all(np.isin(got, np.arange(len(CAUSES)))):
        return "not one index of CAUSES per run"
    return True


def _same_diagnoses(got, truth):
    """measure: True if every run's diagnosis is its true cause, otherwise how many were
    (and what the learner said where wrong, never the right cause)."""
    got, truth = np.asarray(got, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    if got.shape != truth.shape:
        return f"{got.size} diagnoses for {truth.size} runs"
    right = int(np.sum(got == truth))
    if right == truth.size:
        return True
    named = dict(enumerate(CAUSES))
    wrong = [f"run {i + 1} ({named.get(g, g)!r})" for i, g in enumerate(got) if g != truth[i]]
    return f"{right} of {truth.size} runs diagnosed right; wrong: {', '.join(wrong)}"


register(
    Check(
        name="diagnose",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_diagnose,
        # The instruments it reads the runs with (the solution's; a learner's may use fewer).
        builds_on={
            "initial_loss": "expected_initial_loss",
            "update_ratios": "update_ratios",
            "gradient_check_model": "gradient_check_model",
            "dataset_loss": "dataset_loss",
        },
        rules={
            "diagnoses": Rule(
                "diagnoses, each one of CAUSES,", kind="true", weight=0, measure=_causes
            ),
            "truth": Rule(
                "diagnoses",
                kind="true",
                measure=_same_diagnoses,
                uses="diagnoses",
                requires="diagnoses",
                hint="read the instruments in order, the start first (a start far too "
                "large saturates the layer: its gradient check fails too, and the run then "
                "learns as little as one whose labels do not match); an update ratio, not "
                "the curve, tells a learning rate far too small from labels that do not "
                "match (both curves sit near ln C); a gradient check is the only "
                "instrument a wrong backward pass moves.",
            ),
        },
    )
)


# ---------------------------------------------------------------- fixed runs
#
# The kernel sends what the fixed run holds, never a reading: its start's parameters, rate
# and labels, its model's scores at the start and loss and gradients a step off it on a
# few rows, and the handed run's rate and labels after the call. The grader rebuilds the
# run from the reference's seed, requires the handed run unchanged and all but the leaked
# part the run's own, the model to agree with the run's whole loss, then puts the part in
# and reads every instrument in its own process, on its own model, SGD step and rows
# (course.runs.TanhNet). So a `step` of the learner's (a clipped gradient, a per-layer
# rate, training on other rows), a model that answers otherwise while nudged, a run changed
# after `fix` returned, or a patched probe that sends readings, moves nothing the grader
# reads: numbers that read healthy here are a repaired part (tests/test_attacks_round18.py),
# and only those numbers are graded (a run that trains otherwise by its own `step`: README,
# "Not protected"). Every number read must be finite (round 19: a NaN passed `x > tol`).

FIX_KINDS = RUN_KINDS  # a healthy run too: it needs no change
FIX_ROWS = 8  # the rows of the fixed model's loss, gradients and scores: the run's first
FIX_START = 1.0  # a fixed run starts within this of ln C (a start too large: 10 and more)
FIX_SATURATED = 0.05  # of its hidden units at the start, |tanh| > 0.99 (healthy: 0 to 1e-3)
FIX_RATIO = (1e-3, 1e-1)  # its first ratios' largest (healthy 3.8e-3 to 1.5e-2)
FIX_GRADIENT = 1e-6  # its gradients' relative error (right: 1e-15; a planted term: 1e-2)
FIX_MOVE = 0.1  # the size of the step off the start where loss and gradients are read
FIX_SAME = 1e-9  # what is not the leak's part, against the run's own (recomputed: rounding)
FIX_HELD_OUT = 1.2  # its test loss after training (healthy 0.3 to 0.9; a leak's 2 and more)
TANH_KEYS = ("W1", "b1", "W2", "b2")


def _fix_run(index: int, seed: int, data):
    """The fix check's run of FIX_KINDS[index], rebuilt from its own seed (kernel and grader)."""
    return make_run(FIX_KINDS[index], np.random.default_rng(seed), data)


def _planted(index: int, seed: int, data) -> set:
    """The parameters whose gradient misses a term of the loss in that run (none or one)."""
    return set(_fix_run(index, seed, data).model().hidden)


def _held_out_loss(params, X, y) -> float:
    """The mean cross-entropy of the grader's own TanhNet with `params` on rows (X, y)."""
    scores = TanhNet({k: np.asarray(params[k], dtype=np.float64) for k in TANH_KEYS}).loss(X)
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(len(y)), y].mean())


def _true_gradients(model: TanhNet, X, y) -> tuple[float, dict]:
    """The model's whole loss, and its gradients with the planted term's included."""
    loss, grads = model.loss(X, y)
    for name, (a, b) in model.hidden.items():
        grads[name] = grads[name] + a * b * np.cos(b * model.params[name])
    return float(loss), grads


def _sgd(model: TanhNet, X, y, rate: float) -> None:
    grads = _true_gradients(model, X, y)[1]
    for name in TANH_KEYS:
        model.params[name] = model.params[name] - rate * grads[name]


def _flat(arrays) -> list[np.ndarray]:
    return [np.asarray(arrays[k], dtype=np.float64).ravel() for k in TANH_KEYS]


def probe_fix(student, rng, out):
    """The learner's fix of seven runs, one of each kind of RUN_KINDS (a healthy one too) and
    a second wrong backward pass on another parameter, in an order the inputs decide, each
    handed with its true cause: fix(run, cause) returns a run. The kernel sends the run's
    index and seed and what the grader reads of the fixed run: its learning rate, its
    model's start and scores there, its loss and gradients a step off the start (_moved), on
    the run's first rows, its labels, and the handed run's rate and labels after the call
    (_fixed_run_reads_healthy judges them)."""
    data = digits()
    order, seeds = rng.permutation(len(FIX_KINDS)), rng.integers(2**31, size=len(FIX_KINDS))
    handed = list(zip(order, seeds, strict=True))
    # A second wrong backward pass, its term on another parameter: a fix that names the
    # parameter instead of reading the model's loss repairs one of the two at most (with one,
    # it passed on the seeds that planted the parameter it named: 1 in 4).
    wrong = FIX_KINDS.index("a wrong backward pass")
    planted = _planted(wrong, dict(handed)[wrong], data)
    for _ in range(64):  # each draw another parameter 3 times in 4; bounded all the same
        if _planted(wrong, seed := int(rng.integers(2**31)), data) != planted:
            break
    else:
        raise RuntimeError("no second run with its term on another parameter")
    handed.insert(int(rng.integers(len(handed) + 1)), (wrong, seed))
    for position, (index, seed) in enumerate(handed):
        run = _fix_run(index, int(seed), data)
        X, y = run.X_train[:FIX_ROWS].copy(), run.y_train[:FIX_ROWS].copy()

        def compute(run=run, kind=FIX_KINDS[index], X=X, y=y, index=index, seed=seed):
            fixed = student.fix(run, kind)
            params = _flat(fixed.model().params)
            scores = np.asarray(fixed.model().loss(X), dtype=np.float64).ravel()
            model = fixed.model()  # moved off the start: a planted term on a bias is 0 there
            for k, step in _moved(seed, model.params).items():
                model.params[k] = model.params[k] + step
            loss, grads = model.loss(X, y)
            numbers = [index, seed, fixed.learning_rate, run.learning_rate, loss]
            labels = [np.asarray(fixed.y_train), np.asarray(run.y_train)]
            return np.concatenate(
                [np.array(numbers, dtype=np.float64), *params, *_flat(grads)]
                + [scores, *(np.asarray(v, dtype=np.float64) for v in labels)]
            )

        out.record(f"fixed:run {position + 1}", compute)


def _moved(seed: int, params) -> dict:
    """The step off the start at which the fixed model's loss and gradients are read."""
    rng = np.random.default_rng([int(seed), 1])
    return {k: FIX_MOVE * rng.standard_normal(np.shape(params[k])) for k in TANH_KEYS}


def _read_fix(got, run) -> dict | str:
    """The kernel's numbers for `run`, by name, or why they cannot be read."""
    model = run.model()
    shapes = {k: np.shape(model.params[k]) for k in TANH_KEYS}
    sizes = [int(np.prod(shape)) for shape in shapes.values()]
    C, N = shapes["W2"][1], len(run.y_train)
    parts = {"numbers": 5, "params": sum(sizes), "grads": sum(sizes)}
    parts.update(scores=FIX_ROWS * C, labels=N, handed_labels=N)
    values = np.asarray(got, dtype=np.float64).ravel()
    if values.size != sum(parts.values()):
        return (
            f"the fixed run's model has other shapes than the run's {shapes}, or its labels "
            "another length"
        )
    split = dict(zip(parts, np.split(values, np.cumsum(list(parts.values()))[:-1]), strict=True))
    read = dict(
        zip(("index", "seed", "rate", "handed_rate", "loss"), split["numbers"], strict=True)
    )
    for name in ("params", "grads"):
        chunks = np.split(split[name], np.cumsum(sizes)[:-1])
        read[name] = {k: v.reshape(shapes[k]) for k, v in zip(TANH_KEYS, chunks, strict=True)}
    read.update(scores=split["scores"].reshape(FIX_ROWS, C), labels=split["labels"])
    read["handed_labels"] = split["handed_labels"]
    return read


def _relative(got, want) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def _fixed_run_reads_healthy(got, want):
    """measure: True if the run the reference names (its index and seed: the grader's, never
    the kernel's), rebuilt here with the fix's changes, is the run repaired: the handed run
    left as it was; what did not leak as the run's own; the fixed model's scores, and its
    loss and gradients a step off its start, those of the whole loss there (the grader's
    TanhNet); its labels the rows' own; then every instrument read here, on the grader's
    model with plain SGD: the start near ln C with few saturated units, W1's first ten
    update ratios in FIX_RATIO, and the loss on the digits' test rows after training below
    FIX_HELD_OUT."""
    index, seed = (int(v) for v in np.asarray(want, dtype=np.float64).ravel()[:2])
    kind, data = FIX_KINDS[index], digits()
    run = _fix_run(index, seed, data)
    read = _read_fix(got, run)
    if isinstance(read, str):
        return f"({kind}) {read}"
    original = run.model()
    start = {k: np.array(original.params[k], dtype=np.float64) for k in TANH_KEYS}
    truth = run.y_train.copy()
    if kind == "labels that do not match the inputs":
        truth = np.roll(truth, -1)  # make_run's shift, undone
    rate = float(read["rate"])
    # Every number read finite first: a NaN compares False both ways, so a test `x > tol`
    # passes it, and Python's max() drops a NaN after its first item (round 19: NaN
    # gradients of three parameters passed the gradient test on W1's alone).
    numbers = [rate, read["loss"], read["scores"], read["labels"], read["handed_labels"]]
    numbers += [*read["params"].values(), *read["grads"].values()]
    if not all(np.all(np.isfinite(v)) for v in numbers):
        return (
            f"({kind}) its learning rate, labels, model's start, scores, loss or gradients "
            "are not all finite numbers"
        )
    if read["handed_rate"] != run.learning_rate or not np.array_equal(
        read["handed_labels"], run.y_train
    ):
        return f"({kind}) changed the run it was handed: return a new one (run.with_changes)"
    if kind != "initialisation too large":
        if not np.max([_relative(read["params"][k], start[k]) for k in TANH_KEYS]) <= FIX_SAME:
            return f"({kind}) changed the model's start: change only what leaked"
    if kind not in ("learning rate too high", "learning rate too low"):
        if not abs(rate - run.learning_rate) <= FIX_SAME * run.learning_rate:
            return f"({kind}) changed the learning rate: change only what leaked"
    if not rate > 0:
        return f"({kind}) its learning rate is {rate:g}, not a positive number"
    params = read["params"]
    grader = TanhNet(dict(params), original.reg, original.hidden, original.train_mask)
    X, y = run.X_train[:FIX_ROWS], run.y_train[:FIX_ROWS]
    if not _relative(read["scores"], grader.loss(X)) <= FIX_SAME:
        return f"({kind}) its model's scores (loss(X) without labels) are not its forward pass's"
    moved = {k: params[k] + step for k, step in _moved(seed, params).items()}
    loss, grads = _true_gradients(
        TanhNet(moved, original.reg, original.hidden, original.train_mask), X, y
    )
    if not abs(float(read["loss"]) - loss) <= FIX_SAME * abs(loss):
        return (
            f"({kind}) its model's loss is not the run's whole loss: the loss is what the run "
            "minimises; repair the backward pass, not the loss"
        )
    error = float(np.max([_relative(read["grads"][k], grads[k]) for k in TANH_KEYS]))
    if not error <= FIX_GRADIENT:
        return (
            f"({kind}) its gradients disagree with its loss (relative error {error:.1e}): "
            "give the term of the loss its backward pass leaves out its gradient"
        )
    labels = read["labels"]
    wrong = int(np.sum(labels != truth))
    if wrong:
        return f"({kind}) {wrong} of its {truth.size} training labels are not their rows' own"
    ln_c = float(np.log(start["W2"].shape[1]))
    begins = _held_out_loss(params, run.X_train, truth)
    if not abs(begins - ln_c) <= FIX_START:
        return (
            f"({kind}) starts at a loss of {begins:.3g}, not within {FIX_START:g} of ln C = "
            f"{ln_c:.3f}: a start far above ln C is the initialisation's scale"
        )
    saturated = float(np.mean(np.abs(np.tanh(run.X_train @ params["W1"] + params["b1"])) > 0.99))
    if not saturated <= FIX_SATURATED:
        return (
            f"({kind}) starts with {saturated:.0%} of its hidden units saturated "
            "(|tanh| > 0.99): a healthy start saturates almost none"
        )

    def fresh():
        return TanhNet(dict(params), original.reg, original.hidden, original.train_mask)

    trained, order, ratios = fresh(), np.random.default_rng(0), []
    with np.errstate(all="ignore"):  # a rate still too large overflows
        for _ in range(10):
            batch = order.choice(len(run.X_train), run.batch_size, replace=False)
            before = trained.params["W1"]
            _sgd(trained, run.X_train[batch], truth[batch], rate)
            change = np.linalg.norm(trained.params["W1"] - before)
            ratios.append(change / np.linalg.norm(before))
    top, (low, high) = float(np.max(ratios)), FIX_RATIO
    if not low <= top <= high:
        return (
            f"({kind}) its first steps move W1 by up to {top:.1e} of its norm a step, outside "
            f"{low:.0e} to {high:.0e}: the learning rate sets the update ratio"
        )
    trained, order = fresh(), np.random.default_rng(run.seed)
    with np.errstate(all="ignore"):
        for _ in range(run.steps):
            batch = order.choice(len(run.X_train), run.batch_size, replace=False)
            _sgd(trained, run.X_train[batch], truth[batch], rate)
        held = _held_out_loss(trained.params, data.X_test, data.y_test)
    if not held <= FIX_HELD_OUT:
        return (
            f"({kind}) ends at a loss of {held:.3g} on rows it never saw, not below "
            f"{FIX_HELD_OUT:g} (a rate that moves W1 by less than about 4e-3 a step learns too "
            "slowly for the run's steps)"
        )
    return True


register(
    Check(
        name="fix",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_fix,
        # The instrument the solution's rate search reads (a learner's may read none).
        builds_on={"update_ratios": "update_ratios"},
        rules={
            "fixed": Rule(
                "fixed run, every instrument read by the grader, for",
                kind="true",
                measure=_fixed_run_reads_healthy,
                hint="repair the part that leaked, not its symptom: the initialisation's "
                "scale, the learning rate (a few thousandths of W1's norm a step), the "
                "backward pass (the term of the loss it leaves out), or the labels (undo "
                "their shift); every instrument must then read healthy, and the run learn.",
            ),
        },
    )
)
