"""Hidden checks of assignment 03, "Multilayer networks" (API: shared API.md, section 03).

Inputs are float64 with N, D, M (and C, H) all different, so that a missing transpose or
reshape shows; `affine` also meets a 4-D x. Each function gets fresh copies of its inputs,
so an in-place edit in one sub-check cannot change another's inputs.
"""

import numpy as np

from course.checks.common import (
    INPUTS_RULE,
    away_from_zero,
    copies,
    drawn_with,
    gradient_observation,
    large_scores,
    moments,
    nudged_observation,
    record_network_loss,
    self_check_rule,
    stacked,
    training_curve_rule,
)
from course.grader.model import Assignment, Check, Rule, register
from course.grader.probe import nudged
from course.training import accuracy, fit

ASSIGNMENT = Assignment(
    id="03_multilayer",
    notebook="multilayer",
    title="03 Multilayer networks",
    builds=(
        "affine and ReLU layers, losses on scores, `TwoLayerNet`, `sgd`, a training loop (97% "
        "on the digits' test set)"
    ),
    leak=(
        "the weight scale and the step size decide whether the network learns at all, or its "
        "ReLUs die"
    ),
    slow_cells=frozenset({"two_layer_training"}),
)
NOTEBOOK = ASSIGNMENT.key


# ------------------------------------------------------------------- affine


def probe_affine_forward(student, rng, out):
    """affine_forward's outputs for a 2-D and a 4-D x (flattened to (N, D)), on copies of the
    inputs."""
    for name, x_shape, M in (("x (5, 7)", (5, 7), 4), ("4-D x (3, 4, 2, 5)", (3, 4, 2, 5), 6)):
        x = rng.standard_normal(x_shape)
        w = rng.standard_normal((int(np.prod(x_shape[1:])), M))
        b = rng.standard_normal(M)
        out.record(f"out:{name}", lambda x=x, w=w, b=b: student.affine_forward(*copies(x, w, b))[0])


register(
    Check(
        name="affine_forward",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_affine_forward,
        rules={
            "out": Rule(
                "output for",
                rtol=1e-10,
                hint="flatten x to (N, D) with x.reshape(N, -1), then x @ w + b.",
            )
        },
    )
)


def probe_affine_backward(student, rng, out):
    """affine_backward's dx, dw, db for a 2-D x, a 4-D x and a square w (where a misplaced
    transpose keeps the shapes), beside the forward values at nudged inputs."""
    k = int(rng.integers(3, 8))  # a square w: a misplaced transpose keeps the shapes right
    for name, x_shape, M in (
        ("x (6, 5)", (6, 5), 3),
        ("4-D x (4, 3, 2, 2)", (4, 3, 2, 2), 5),
        ("a square w", (int(rng.integers(2, 6)), k), k),
    ):
        x = rng.standard_normal(x_shape)
        w = rng.standard_normal((int(np.prod(x_shape[1:])), M))
        b = rng.standard_normal(M)
        dout = rng.standard_normal((x_shape[0], M))

        def compute(x=x, w=w, b=b, dout=dout):
            _, cache = student.affine_forward(*copies(x, w, b))
            dx, dw, db = student.affine_backward(dout.copy(), cache)
            inputs = {"x": x, "w": w, "b": b}
            observed = []
            for key, grad in (("x", dx), ("w", dw), ("b", db)):

                def f(v, key=key):
                    return student.affine_forward(
                        **{**{k: a.copy() for k, a in inputs.items()}, key: v}
                    )[0]

                observed.append(nudged_observation(grad, f, inputs[key], dout))
            return dx, dw, db, stacked(*observed)

        out.record([f"dx:{name}", f"dw:{name}", f"db:{name}", f"selfcheck:{name}"], compute)


register(
    Check(
        name="affine_backward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_affine_backward,
        builds_on={"affine_forward": "affine_forward"},  # its cache
        rules={
            "dx": Rule(
                "gradient dx for",
                rtol=1e-9,
                hint="dx = dout @ w.T, reshaped back to x's shape.",
            ),
            "dw": Rule(
                "gradient dw for",
                rtol=1e-9,
                hint="dw = x_flat.T @ dout, with x flattened to (N, D).",
            ),
            "db": Rule("gradient db for", rtol=1e-9, hint="db sums dout over the batch (axis 0)."),
            "selfcheck": self_check_rule(
                "dx, dw, db",
                "affine_forward",
                rtol=1e-7,
                hint="the backward pass does not match the forward pass.",
                requires="dx",
            ),
        },
    )
)


# ------------------------------------------------------------------- relu


def probe_relu(student, rng, out):
    """relu_forward's outputs and relu_backward's dx, on inputs drawn away from the kink at 0."""
    for name, shape in (("x (7, 4)", (7, 4)), ("3-D x (3, 5, 2)", (3, 5, 2))):
        x = away_from_zero(rng, shape, low=0.05)
        dout = rng.standard_normal(shape)
        out.record(f"out:{name}", lambda x=x: student.relu_forward(x.copy())[0])

        def backward(x=x, dout=dout):
            _, cache = student.relu_forward(x.copy())
            return student.relu_backward(dout.copy(), cache)

        out.record(f"dx:{name}", backward)


# What relu's sub-checks run (Check.builds_on).
RELU_FUNCTIONS = {"out:": "relu_forward", "dx:": "relu_backward"}
# The layers a network is made of, each graded by its own check.
LAYERS = {
    "affine_forward": "affine_forward",
    "affine_backward": "affine_backward",
    "relu": RELU_FUNCTIONS,
    "softmax_loss": "softmax_loss",
}

register(
    Check(
        name="relu",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_relu,
        rules={
            "out": Rule("relu_forward output for", rtol=1e-12, hint="np.maximum(0, x)."),
            "dx": Rule(
                "relu_backward dx for",
                rtol=1e-12,
                hint="dout where the forward input was positive, 0 elsewhere.",
            ),
        },
    )
)


# ------------------------------------------------------------------- losses on scores


def score_cases(rng, N: int, C: int) -> dict:
    """{case name: (x, y)}: ordinary scores twice, and scores near 1e3 whose rows have very
    different ranges."""
    cases = {
        f"ordinary scores {i}": (rng.standard_normal((N, C)) * 2.0, rng.integers(0, C, N))
        for i in (1, 2)
    }
    cases["scores near 1e3"] = (large_scores(rng, N, C), rng.integers(0, C, N))
    return cases


def loss_probe(function: str):
    """The probe of a score-based loss (softmax_loss, svm_loss): its loss and dx on score_cases,
    and, except at scores near 1e3, its own loss at nudged scores for the self-check."""

    def probe(student, rng, out):
        loss_fn = getattr(student, function)
        for name, (x, y) in score_cases(rng, 9, 5).items():
            large = "large_" if "1e3" in name else ""
            keys = [f"{large}loss:{name}", f"{large}dx:{name}"]
            if not large:
                keys.append(f"selfcheck:{name}")

            def compute(x=x, y=y, large=large):
                loss, dx = loss_fn(x.copy(), y.copy())
                results = [np.asarray(loss, dtype=np.float64), dx]
                if not large:
                    plus, minus = nudged(lambda s: loss_fn(s.copy(), y.copy())[0], x)
                    results.append(gradient_observation(dx, plus, minus))
                return results

            out.record(keys, compute)

    return probe


def score_loss_rules(loss_hint: str, gradient_hint: str, large_weight: float) -> dict[str, Rule]:
    """The rules that judge what loss_probe records: the loss and dx against the reference's
    (the large-score cases weighted apart), and dx against the learner's own loss."""
    return {
        "loss": Rule("loss at", rtol=1e-9, hint=loss_hint),
        "dx": Rule("gradient dx at", rtol=1e-8, hint=gradient_hint),
        "large_loss": Rule("loss at", rtol=1e-9, hint=loss_hint, weight=large_weight),
        "large_dx": Rule("gradient dx at", rtol=1e-8, hint=gradient_hint, weight=large_weight),
        "selfcheck": self_check_rule(
            "dx",
            "loss",
            rtol=1e-5,  # a wrong dx is off by 1e-2 or more; rounding alone reaches 1e-7
            hint="the gradient does not match the loss it comes from.",
            requires="loss",
            then="at",
        ),
    }


register(
    Check(
        name="softmax_loss",
        notebook=NOTEBOOK,
        points=2,
        probe=loss_probe("softmax_loss"),
        rules=score_loss_rules(
            "the mean of -log p[y]; compute log p by log-sum-exp, shifting each row by its own "
            "maximum, never the log of a probability.",
            "dx = (p - one_hot(y)) / N.",
            large_weight=2.0,
        ),
    )
)
register(
    Check(
        name="svm_loss",
        notebook=NOTEBOOK,
        points=2,
        probe=loss_probe("svm_loss"),
        rules=score_loss_rules(
            "margins x_j - x_y + 1 for j != y only, clipped at 0, summed per row, averaged over N.",
            "+1 for each positive margin, minus their count at the correct class, divided by N.",
            large_weight=1.0,
        ),
    )
)


# ------------------------------------------------------------------- TwoLayerNet

PARAM_NAMES = ("W1", "b1", "W2", "b2")


def hidden_params(rng, D: int, H: int, C: int, scale: float = 0.5) -> dict:
    """Weights and (non-zero) biases that the probe writes into a student's network."""
    return {
        "W1": scale * rng.standard_normal((D, H)),
        "b1": 0.1 * rng.standard_normal(H),
        "W2": scale * rng.standard_normal((H, C)),
        "b2": 0.1 * rng.standard_normal(C),
    }


def with_params(student, D, H, C, params, reg):
    """A student's TwoLayerNet of these sizes and reg, its parameters replaced by copies of
    `params` (the API fixes .params and its keys, not how the weights are drawn)."""
    net = student.TwoLayerNet(D, H, C, weight_scale=1e-2, reg=reg)
    for name in PARAM_NAMES:
        net.params[name] = params[name].copy()
    return net


TWO_LAYER_SCALE = 0.37


def probe_two_layer_net(student, rng, out):
    """TwoLayerNet: its parameters' shapes and initial statistics at drawn sizes, its scores
    without y, its loss and gradients beside its own loss at nudged parameters, and whether the
    loss left X, y and the parameters alone."""
    # Initialisation, judged by its statistics: a student may draw with any generator.
    # Sizes from the (secret) seed: the shapes, which every other initial sub-check
    # requires, cannot be known before the check runs.
    # Each weight matrix has at least 1,000 entries: 6 sigmas of its sample std are 13%.
    D0, H0, C0 = (int(rng.integers(low, low + 20)) for low in (50, 40, 25))
    scale = TWO_LAYER_SCALE
    np.random.seed(int(rng.integers(1 << 31)))

    def initial():
        net = student.TwoLayerNet(D0, H0, C0, weight_scale=scale)
        shapes = np.concatenate([np.shape(net.params[k]) for k in PARAM_NAMES]).astype(float)
        biases = np.concatenate([net.params["b1"].ravel(), net.params["b2"].ravel()])
        return shapes, moments(net.params["W1"]), moments(net.params["W2"]), biases

    out.record(["shapes:", "init:W1", "init:W2", "bias:"], initial)

    N, D, H, C = 5, 7, 9, 4
    params = hidden_params(rng, D, H, C)
    X = rng.standard_normal((N, D))
    y = rng.integers(0, C, N)
    out.record(
        "scores:loss(X) with y None",
        lambda: with_params(student, D, H, C, params, 0.0).loss(X.copy()),
    )
    for reg in (0.0, float(rng.uniform(0.3, 0.9))):
        label = "with regularisation" if reg else "without regularisation"

        record_network_loss(
            out, label, lambda p, reg=reg: with_params(student, D, H, C, p, reg), params, X, y
        )


register(
    Check(
        name="two_layer_net",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_two_layer_net,
        builds_on=LAYERS,
        rules={
            "shapes": Rule(
                "parameter shapes of W1, b1, W2, b2",
                rtol=0,
                hint="W1 (D, H), b1 (H,), W2 (H, C), b2 (C,).",
            ),
            # The weight scale is this leak: each matrix's sample mean and standard
            # deviation, judged per matrix (a W2 at a fixed scale hides in pooled draws).
            "init": Rule(
                "initial weights",
                kind="true",
                hint="draw every weight matrix, W2 too, from N(0, weight_scale**2): "
                "weight_scale * np.random.randn(...), not a fixed scale or weight_scale**2.",
                measure=drawn_with(TWO_LAYER_SCALE),  # its shape too (from the seed)
            ),
            "bias": Rule(
                "initial biases", rtol=0, weight=2, hint="start at zero.", requires="shapes"
            ),
            "scores": Rule(
                "scores for",
                rtol=1e-10,
                hint="affine - relu - affine on the current .params, returned alone.",
            ),
            "loss": Rule(
                "loss",
                rtol=1e-9,
                hint="softmax loss of the scores plus 0.5 * reg * (sum(W1**2) + sum(W2**2)).",
            ),
            "grad": Rule(
                "gradient of",
                rtol=1e-8,
                hint="backpropagate through affine, relu, affine; the regulariser adds "
                "reg * W to the weight matrices' gradients only.",
            ),
            "selfcheck": self_check_rule("gradients", "loss", rtol=1e-6, requires="loss", then=""),
            "inputs": INPUTS_RULE,
        },
    )
)


# ------------------------------------------------------------------- sgd


def probe_sgd(student, rng, out):
    """Three sgd steps from the default config and from a given learning rate: the weights
    after them and the learning rate each step returned in config."""
    w = rng.standard_normal((3, 4))
    dws = [rng.standard_normal((3, 4)) for _ in range(3)]

    def steps(config):
        current, learning_rates = w.copy(), []
        for dw in dws:
            current, config = student.sgd(current, dw.copy(), config)
            learning_rates.append(config["learning_rate"])
        return np.asarray(current, dtype=np.float64), np.array(learning_rates, dtype=float)

    out.record(["w:the default config", "config:the default config"], lambda: steps(None))
    lr = float(rng.uniform(0.2, 0.6))
    out.record(
        ["w:a given learning_rate", "config:a given learning_rate"],
        lambda: steps({"learning_rate": lr}),
    )


register(
    Check(
        name="sgd",
        notebook=NOTEBOOK,
        points=1,
        probe=probe_sgd,
        rules={
            "w": Rule(
                "weights after 3 steps, with",
                rtol=1e-12,
                hint="next_w = w - config['learning_rate'] * dw, the rate 1e-2 by default.",
            ),
            # The rate is a number anyone can guess: credited only with the weights.
            "config": Rule(
                "config['learning_rate'] kept, with",
                requires="w",
                rtol=1e-12,
                hint="config.setdefault('learning_rate', 1e-2), and return the config.",
                weight=0.5,
            ),
        },
    )
)


# ------------------------------------------------------------------- training

TRAIN_SIZES = (40, 6, 10, 3)  # N, D, H, C
TRAIN_STEPS = 30
TRAIN_LEARNING_RATE = 0.5
TRAIN_REG = 1e-3
# Measured (`course bench --bands --seeds 10`): correct code departs by up to 3.1e-15, the
# closest mutant (the affine bias forgotten) by 7.9e-3.
LOSS_BAND = 1e-6  # relative, at every step


def probe_two_layer_training(student, rng, out):
    """The loss curve and final accuracy of the learner's TwoLayerNet trained with their sgd by
    the course's trusted loop, on clustered data and parameters drawn from the seed."""
    N, D, H, C = TRAIN_SIZES
    centres = 1.5 * rng.standard_normal((C, D))
    y = rng.integers(0, C, N)
    X = centres[y] + rng.standard_normal((N, D))
    params = hidden_params(rng, D, H, C, scale=0.3)

    def compute():
        net = with_params(student, D, H, C, params, TRAIN_REG)
        history = fit(
            net,
            student.sgd,
            X,
            y,
            epochs=TRAIN_STEPS,
            batch_size=N,
            config={"learning_rate": TRAIN_LEARNING_RATE},
        )
        return np.array(history["loss"]), accuracy(net.loss(X), y)

    out.record(["loss:", "accuracy:"], compute)


register(
    Check(
        name="two_layer_training",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_two_layer_training,
        # Its network gets its parameters set (with_params): its initialisation is not used.
        builds_on={
            **LAYERS,
            "two_layer_net": {
                k: "TwoLayerNet.loss" for k in ("scores", "loss", "grad", "selfcheck", "inputs")
            },
            "sgd": "sgd",
        },
        rules={
            "loss": training_curve_rule(
                LOSS_BAND,
                "a gradient of TwoLayerNet, or the sgd step, that is wrong, even slightly.",
                weight=2,
            ),
            # A guessable number (1.0 on an easy problem): credited only with the curve.
            "accuracy": Rule(
                "training accuracy after the last step", rtol=1e-12, hint="", requires="loss"
            ),
        },
    )
)


# ------------------------------------------------------------------- predictions


def probe_predictions(student, rng, out):
    """The learner's predicted ratios (initial scores, |dW1|) at weight scale sigma / a, for
    three factors a drawn from the seed and judged together."""
    # Factors from the (secret) seed, three each, judged together: an answer written for
    # the notebook's factor alone (10: a number, not the formula) is right only there. From
    # 2 to 50, 1 / a and 1 / a**2 always differ by far more than the band. The answers are
    # fractions (1 / a, not a): no function that returns its argument is right.
    factors = rng.uniform(2.0, 50.0, size=3).tolist()
    out.record(
        "scores:initial scores at sigma / a, as a fraction of those at sigma",
        lambda: np.array([student.predicted_score_ratio(a) for a in factors], float),
    )
    out.record(
        "gradient:gradient of W1 at sigma / a, as a fraction of that at sigma",
        lambda: np.array([student.predicted_gradient_ratio(a) for a in factors], float),
    )


register(
    Check(
        name="multilayer_predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_predictions,
        rules={
            # The judge's tolerance is relative to |got| + |want|: 0.01 is about 2%.
            "scores": Rule(
                "predicted",
                rtol=0.01,
                hint="the scores pass through both weight matrices (the ReLU passes a "
                "positive scale through, and the biases are 0).",
            ),
            "gradient": Rule(
                "predicted",
                rtol=0.01,
                hint="dW1 = x.T @ (dscores @ W2.T where the ReLU is on): which factors scale "
                "with the weights? At small scores dscores hardly changes.",
            ),
        },
    )
)
