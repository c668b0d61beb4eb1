"""Hidden checks of assignment 02, "Linear classifiers" (API: shared API.md, section 02).

Every loss is probed on float64 inputs with N, D and C all different, at ordinary scores
and at scores of magnitude 1e3 whose rows have very different ranges (so that a shift by
one maximum for the whole batch, or the log of an underflowed probability, shows).
"""

import numpy as np

from course.checks.common import (
    as_given,
    clear_of_kinks,
    flat,
    gradient_observation,
    hinge_distance,
    left_as_given,
    row_scales,
    self_check_rule,
)
from course.grader.model import Assignment, Check, Rule, register
from course.grader.probe import nudged

ASSIGNMENT = Assignment(
    id="02_linear",
    notebook="linear",
    title="02 Linear classifiers",
    builds=(
        "SVM and softmax losses, with loops and vectorised, trained with SGD on real "
        "handwritten digits"
    ),
    leak=(
        "floating point: a softmax that overflows, or takes the log of a probability that "
        "rounded to 0, stops training; the learning rate and regularisation decide what is "
        "learned"
    ),
)
NOTEBOOK = ASSIGNMENT.key


def loss_cases(rng, N: int, D: int, C: int) -> dict:
    """{case name: (W, X, y, reg)}: ordinary scores with and without regularisation, and
    large scores (up to about 1e3) on rows scaled from 0.02 to 2."""
    cases = {}
    for reg in (0.0, float(rng.uniform(0.1, 0.5))):
        W, X, y = clear_of_kinks(
            lambda: (
                0.5 * rng.standard_normal((D, C)),
                rng.standard_normal((N, D)),
                rng.integers(0, C, N),
            ),
            lambda drawn: hinge_distance(*drawn),
        )
        cases["at ordinary scores, " + ("with" if reg else "without") + " regularisation"] = (
            W,
            X,
            y,
            reg,
        )
    W = 300.0 * rng.standard_normal((D, C))
    X = rng.standard_normal((N, D)) * row_scales(rng, N)
    cases["at scores near 1e3"] = (W, X, rng.integers(0, C, N), 1e-3)
    return cases


def record_loss(out, loss_fn, name, W, X, y, reg, self_check: bool) -> None:
    """Record loss and dW of loss_fn(W, X, y, reg), its inputs right before and right after
    the call (the grader wants them unchanged) and, optionally, the student's own loss at W
    nudged by +-h."""
    large = "large_" if "1e3" in name else ""  # judged by rules of their own (weights)
    keys = [f"{large}loss:{name}", f"{large}dW:{name}", f"inputs:{name}"]
    keys += [f"selfcheck:{name}"] if self_check else []
    inputs = (W, X, y)

    def compute():
        before = flat(*inputs)
        loss, dW = loss_fn(W, X, y, reg)
        after = as_given(before, flat(*inputs))
        results = [np.asarray(loss, dtype=np.float64), np.asarray(dW, dtype=np.float64), after]
        if self_check:
            plus, minus = nudged(lambda w: loss_fn(w, X, y, reg)[0], W)
            results.append(gradient_observation(dW, plus, minus))
        return results

    out.record(keys, compute)


def loss_probe(function: str, sizes: tuple[int, int, int], large: bool = True):
    """large: whether the case at scores near 1e3 is judged here (softmax's is judged by
    its own grade cell, softmax_numerics)."""

    def probe(student, rng, out):
        loss_fn = getattr(student, function)
        for name, (W, X, y, reg) in loss_cases(rng, *sizes).items():
            if large or "1e3" not in name:
                record_loss(out, loss_fn, name, W, X, y, reg, self_check="ordinary" in name)

    return probe


SOFTMAX_SIZES = {"softmax_loss_naive": (7, 5, 4), "softmax_loss_vectorized": (23, 6, 5)}


def probe_softmax_numerics(student, rng, out):
    """Both softmax losses at scores near 1e3 (rows of very different ranges, so that one
    maximum for the whole batch underflows the smaller rows), and at the kind of the
    notebook's visible case: a correct class 800 to 3600 below its row's maximum, whose
    probability rounds to 0."""
    for function, (N, D, C) in SOFTMAX_SIZES.items():
        loss_fn = getattr(student, function)
        W = 300.0 * rng.standard_normal((D, C))
        X = rng.standard_normal((N, D)) * row_scales(rng, N)
        y = rng.integers(0, C, N)
        record_loss(out, loss_fn, f"{function} at scores near 1e3", W, X, y, 1e-3, False)
        top, middle, bottom = rng.permutation(C)[:3]  # which classes: from the seed
        W2 = np.zeros((D, C))
        W2[0, [top, middle, bottom]] = rng.uniform(800.0, 1200.0) * np.array([1.0, 0.0, -1.0])
        X2 = np.zeros((2, D))
        X2[:, 0] = rng.uniform(0.5, 1.5, 2)
        y2 = np.array([bottom, middle])  # the class far below the maximum, and the middle one
        record_loss(
            out,
            loss_fn,
            f"{function} with the correct class far below its row's maximum",
            W2,
            X2,
            y2,
            0.0,
            False,
        )


def loss_rules(loss_hint: str, gradient_hint: str, large_weight: float) -> dict[str, Rule]:
    """large_weight: how much the large-score case counts against each ordinary one."""
    after = "inputs"  # credited only if W, X and y are left as they were
    return {
        "loss": Rule("loss", rtol=1e-9, hint=loss_hint, requires=after),
        "dW": Rule("gradient dW", rtol=1e-8, hint=gradient_hint, requires=after),
        "large_loss": Rule("loss", rtol=1e-9, hint=loss_hint, weight=large_weight, requires=after),
        "large_dW": Rule(
            "gradient dW", rtol=1e-8, hint=gradient_hint, weight=large_weight, requires=after
        ),
        "inputs": Rule(
            "W, X and y after the call,",
            kind="true",
            measure=left_as_given,  # bit for bit, against the same process's snapshot
            weight=0,  # worth nothing alone; the loss and dW are credited only with it
            hint="the function changed its inputs W, X or y in place (work on new arrays).",
        ),
        "selfcheck": self_check_rule(
            "dW",
            "loss",
            rtol=1e-6,
            hint="the gradient does not match the loss it comes from.",
            requires="loss",
            then="",
        ),
    }


SVM_LOSS_HINT = (
    "margins are s_j - s_y + 1 for j != y only (the correct class is left out), "
    "averaged over N, plus reg * sum(W * W)."
)
SVM_GRADIENT_HINT = (
    "each positive margin adds x_i to column j and subtracts x_i from column y_i; "
    "divide by N; the regulariser adds 2 * reg * W."
)
SOFTMAX_LOSS_HINT = (
    "the mean of -log p[y] plus reg * sum(W * W); at large scores compute log p by "
    "log-sum-exp, shifting each row by its own maximum, never log of a probability."
)
SOFTMAX_GRADIENT_HINT = (
    "dscores = p - one_hot(y), dW = X.T @ dscores / N + 2 * reg * W, with p from the "
    "row-shifted scores."
)

# Softmax's numerics at large scores are the leak this assignment is about: they are a
# grade cell of their own (softmax_numerics), not a share of each loss's cell.
for function, points, sizes, hints, large in (
    ("svm_loss_naive", 2, (7, 5, 4), (SVM_LOSS_HINT, SVM_GRADIENT_HINT), True),
    ("svm_loss_vectorized", 3, (23, 6, 5), (SVM_LOSS_HINT, SVM_GRADIENT_HINT), True),
    ("softmax_loss_naive", 1, (7, 5, 4), (SOFTMAX_LOSS_HINT, SOFTMAX_GRADIENT_HINT), False),
    ("softmax_loss_vectorized", 2, (23, 6, 5), (SOFTMAX_LOSS_HINT, SOFTMAX_GRADIENT_HINT), False),
):
    register(
        Check(
            name=function,
            notebook=NOTEBOOK,
            points=points,
            probe=loss_probe(function, sizes, large),
            rules=loss_rules(*hints, 1.0),
        )
    )

NUMERICS_RULES = {
    "large_loss": Rule(
        "loss of",
        rtol=1e-9,
        requires="inputs",
        hint="shift each row by its own maximum before exp (exp(1000) is inf), and "
        "compute log p by log-sum-exp, never as the log of a probability (exp(-2000) "
        "rounds to 0, and -log 0 is inf; -log(p + 1e-12) is finite but wrong).",
    ),
    "large_dW": Rule(
        "gradient dW of",
        rtol=1e-8,
        requires="inputs",
        hint="p from the row-shifted scores (p = exp(log p)), then X.T @ (p - one_hot) / N.",
    ),
    "inputs": loss_rules("", "", 1.0)["inputs"],  # W, X and y left as they were
}
# record_loss names a case's keys "large_" only if the case says "1e3": the same rules.
NUMERICS_RULES |= {"loss": NUMERICS_RULES["large_loss"], "dW": NUMERICS_RULES["large_dW"]}

register(
    Check(
        name="softmax_numerics",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_softmax_numerics,
        rules=NUMERICS_RULES,
    )
)


# ------------------------------------------------------------------- predictions


def probe_predictions(student, rng, out):
    """The learner's predicted numbers (the loss -log(p + eps) reports, the regulariser's factor
    on W, ...) at three settings each, drawn from the seed and judged together."""
    # Settings from the (secret) seed, three each, judged together: an answer written for
    # the notebook's settings alone (a number, not the formula) is right only there.
    # eps spans 1e-15 to 1e-3, so log10 for the natural log (a factor 2.3) always shows.
    # The regulariser's factor is drawn in [0.15, 0.6], where the near formulas differ from
    # it by more than the band: (1 - learning_rate * reg)**steps (the 2 of d(W^2) left
    # out) and 1 - 2 * learning_rate * reg * steps (the steps added, not compounded).
    eps = 10.0 ** rng.uniform(-15, -3, size=3)
    steps = rng.choice(np.arange(3, 30), size=3, replace=False)
    shrink = 1 - rng.uniform(0.15, 0.6, size=3) ** (1 / steps)  # 2 * learning_rate * reg
    rates = rng.uniform(0.05, 1.0, size=3)
    factors = list(
        zip(rates.tolist(), (shrink / (2 * rates)).tolist(), steps.tolist(), strict=True)
    )
    out.record(
        "clipped:loss reported by -log(p + eps) for a p rounded to 0",
        lambda: np.array([student.predicted_clipped_loss(e) for e in eps.tolist()], float),
    )
    out.record(
        "factor:factor of W after the regulariser's steps alone",
        lambda: np.array([student.predicted_regulariser_factor(*f) for f in factors], float),
    )


register(
    Check(
        name="linear_predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_predictions,
        rules={
            # The judge's tolerance is relative to |got| + |want|: 0.01 is about 2%.
            "clipped": Rule(
                "predicted",
                rtol=0.01,
                hint="p + eps is eps when p is 0: the loss is -log(eps), a natural log.",
            ),
            "factor": Rule(
                "predicted",
                rtol=0.01,
                hint="the gradient of reg * sum(W * W) is 2 * reg * W, so each step "
                "multiplies W by the same factor; steps compound.",
            ),
        },
    )
)
