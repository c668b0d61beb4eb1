"""Hidden checks of assignment 04, "Initialisation and optimisers" (API: shared API.md,
section 04).

Update rules are run for several consecutive steps from hidden states, so that the state
carried in `config` is checked, and train a small fixed problem whose loss curve is
compared with the reference's. Initialisation is judged by the statistics of large draws,
never by the exact random numbers.
"""

import numpy as np

from course.checks.common import (
    INPUTS_RULE,
    away_from_zero,
    clear_of_kinks,
    drawn_with,
    moments,
    record_network_loss,
    relu_distance,
    seeded,
    self_check_rule,
)
from course.grader.model import Assignment, Check, Rule, register

ASSIGNMENT = Assignment(
    id="04_optimisers",
    notebook="optimisers",
    title="04 Initialisation and optimisers",
    builds=(
        "`weight_init` (Xavier, He), a deep `FullyConnectedNet`, `sgd_momentum`, `rmsprop`, "
        "`adam`, `adamw`"
    ),
    leak=(
        "at depth, the scale of the first draw decides whether anything trains: too small a "
        "start is a plateau at log C, where SGD's step vanishes and epsilon shortens Adam's; "
        "bias correction, where weight decay enters and the learning-rate schedule each "
        "change the descent"
    ),
)
NOTEBOOK = ASSIGNMENT.key

# ------------------------------------------------------------------- weight_init


def _moments(W: np.ndarray) -> tuple[float, float, float]:
    """(mean, std, excess kurtosis): a normal sample's kurtosis is 0, a uniform one's -1.2."""
    W = np.asarray(W, dtype=np.float64)
    centred = W - W.mean()
    std = centred.std()
    return float(W.mean()), float(std), float(np.mean(centred**4) / std**4 - 3.0)


def probe_weight_init(student, rng, out):
    """weight_init's matrices for 'xavier', 'he' and a number as the scheme: their shape and
    sample moments beside the scheme's std (the grader reads the reference run's)."""
    # From the (secret) seed, fan_in well above fan_out: a scheme that uses fan_out shows,
    # and the shape, which every moment requires, cannot be known before the check runs.
    fan_in, fan_out = int(rng.integers(450, 551)), int(rng.integers(200, 301))
    for scheme, std in (
        ("xavier", np.sqrt(1 / fan_in)),
        ("he", np.sqrt(2 / fan_in)),
        (0.037, 0.037),
    ):
        seed = int(rng.integers(1 << 31))

        def compute(scheme=scheme, std=std, seed=seed):
            W = student.weight_init(fan_in, fan_out, scheme, np.random.default_rng(seed))
            shape = np.array(np.shape(W), dtype=float)
            # Observations: the sample's moments, and the scheme's std (the grader reads
            # the reference run's, never the student's).
            moments = np.array([*_moments(W), std])
            return shape, moments, moments, moments

        label = f"scheme {scheme!r}" if isinstance(scheme, str) else "a number as the scheme"
        keys = ["shape", "mean", "std", "normal"]
        out.record([f"{k}:{label}" for k in keys], compute)

    def reproducible():
        seed = int(rng.integers(1 << 31))
        rows, cols = int(rng.integers(5, 9)), int(rng.integers(2, 5))  # known to no one
        first = student.weight_init(rows, cols, "he", np.random.default_rng(seed))
        np.random.seed(seed % 1000)  # a function drawing from the global generator differs
        second = student.weight_init(rows, cols, "he", np.random.default_rng(seed))
        other = student.weight_init(rows, cols, "he", np.random.default_rng(seed + 1))
        return np.stack([np.asarray(a, dtype=np.float64) for a in (first, second, other)])

    out.record("rng:scheme 'he'", reproducible)  # credited with he's spread (requires)


# 120,000 draws: the mean's and the std's errors are about 0.3% of std, the kurtosis's
# about 0.014, so these bounds hold for any correct generator. Each measure reads the
# student's (mean, std, excess kurtosis) and the reference run's std of the scheme.


def seeded_like_reference(got, want):
    """seeded, on draws of the shape (drawn from the seed) the reference run made."""
    if np.shape(got) != np.shape(want):
        return "the draws do not have the shape (fan_in, fan_out)"
    return seeded(got, want)


def _centred(got, want):
    return abs(got[0]) < 0.02 * want[3] or "the mean is not 0"


def _scaled(got, want):
    return abs(got[1] / want[3] - 1) < 0.02 or (
        "the standard deviation is not the scheme's (fan_in, not fan_out; a std, not a variance)"
    )


def _normal(got, want):
    return abs(got[2]) < 0.1 or "the draws are not normal (uniform?)"


register(
    Check(
        name="weight_init",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_weight_init,
        rules={
            # Shape, mean and normality are credited only with the right spread: they are
            # easy, and the scheme's standard deviation is the point of the function.
            "shape": Rule("shape for", rtol=0, hint="(fan_in, fan_out).", requires="std"),
            # (and the spread only with the right shape: the two require each other)
            "mean": Rule(
                "mean of the draws for",
                kind="true",
                hint="rng.normal(0.0, std, ...).",
                requires="std",
                measure=_centred,
            ),
            "std": Rule(
                "standard deviation for",
                kind="true",
                weight=3,
                hint="xavier: sqrt(1 / fan_in); he: sqrt(2 / fan_in); a number: that std "
                "(a std, not a variance). The course's 'xavier' is the fan_in form (LeCun's, "
                "and PyTorch's fan_in mode); Glorot and Bengio's own 2 / (fan_in + fan_out) "
                "averages the fans, another convention, not this API's.",
                measure=_scaled,
                requires="shape",
            ),
            "normal": Rule(
                "normal shape for",
                kind="true",
                hint="draw with rng.normal.",
                requires="std",
                measure=_normal,
            ),
            # Credited only with the right spread: two arrays that differ are easy to make.
            "rng": Rule(
                "the generator passed in decides the draws, for",
                kind="true",
                weight=2,
                hint="draw from the rng argument, not np.random's global generator.",
                measure=seeded_like_reference,
                requires="std",
            ),
        },
    )
)


# ------------------------------------------------------------------- FullyConnectedNet


def _fcn_params(rng, dims: list[int]) -> dict:
    params = {}
    for layer in range(1, len(dims)):
        params[f"W{layer}"] = 0.5 * rng.standard_normal((dims[layer - 1], dims[layer]))
        params[f"b{layer}"] = 0.1 * rng.standard_normal(dims[layer])
    return params


def _fcn_with(student, dims, params, reg):
    net = student.FullyConnectedNet(
        list(dims[1:-1]), dims[0], dims[-1], reg=reg, weight_scale=0.1, dtype=np.float64, seed=0
    )
    for name, value in params.items():
        net.params[name] = value.copy()
    return net


def _float_size(param) -> int:
    dtype = np.asarray(param).dtype
    return dtype.itemsize if np.issubdtype(dtype, np.floating) else 0


def probe_fully_connected_net(student, rng, out):
    """FullyConnectedNet: its parameters' shapes, per-matrix initial statistics, biases and float
    types, whether a seed draws the same weights, then its loss and gradients beside its own
    loss at nudged parameters."""
    Net = student.FullyConnectedNet

    def construction():
        # Sizes from the (secret) seed: the shapes, which every other construction
        # sub-check requires, cannot be known before the check runs.
        # Per weight matrix, never pooled (a last layer at a fixed scale hides among the
        # others' draws): each has at least 1,000 entries, 6 sigmas of its std are 13%.
        dims = [int(rng.integers(low, low + 10)) for low in (40, 32, 36, 30)]
        net = Net(dims[1:-1], dims[0], dims[-1], weight_scale=0.23, dtype=np.float64, seed=3)
        names = [f"{p}{i}" for i in range(1, len(dims)) for p in ("W", "b")]
        if sorted(net.params) != sorted(names):
            raise KeyError(f"params has keys {sorted(net.params)}, expected W1, b1, ..., W3, b3")
        shapes = np.concatenate([np.shape(net.params[n]) for n in names]).astype(float)
        weights = [moments(net.params[f"W{layer}"]) for layer in range(1, len(dims))]
        biases = np.concatenate([net.params[n].ravel() for n in names if n[0] == "b"])
        # The size of each parameter's float type, in bytes (0: not a float): float64 when
        # asked for, float32 by default.
        default = Net([4], 3, 2, seed=1).params
        params = [net.params[n] for n in names] + [default[n] for n in sorted(default)]
        sizes = np.array([_float_size(p) for p in params], dtype=float)
        draws = np.stack([np.asarray(Net([6], 5, 3, seed=s).params["W1"]) for s in (11, 11, 12)])
        return [shapes, *weights, biases, sizes, draws]

    keys = ["shapes:", "init:W1", "init:W2", "init:W3", "bias:", "dtype:", "seed:"]
    out.record(keys, construction)

    N = 8
    k = int(rng.integers(4, 8))
    for dims, label in (
        ([7, 4], "no hidden layer"),
        ([7, 6, 4], "one hidden layer"),
        ([7, 6, 5, 4], "two hidden layers"),
        # Square weights: a transpose in the wrong place keeps the shapes right.
        ([k, k, k, 3], "two hidden layers, square W1 and W2"),
    ):
        params, X = clear_of_kinks(
            lambda d=dims: (_fcn_params(rng, d), rng.standard_normal((N, d[0]))),
            lambda drawn: relu_distance(*drawn),
        )
        y = rng.integers(0, dims[-1], N)
        out.record(
            f"scores:{label}",
            lambda d=dims, p=params, X=X: _fcn_with(student, d, p, 0.0).loss(X.copy()),
        )
        regs = (0.0, float(rng.uniform(0.2, 0.8))) if label == "two hidden layers" else (0.0,)
        for reg in regs:
            case = f"{label}, {'with' if reg else 'without'} regularisation"
            record_network_loss(
                out, case, lambda p, d=dims, reg=reg: _fcn_with(student, d, p, reg), params, X, y
            )


register(
    Check(
        name="fully_connected_net",
        notebook=NOTEBOOK,
        points=4,
        probe=probe_fully_connected_net,
        builds_on={
            "affine_forward": "affine_forward",
            "affine_backward": "affine_backward",
            "relu": {"out:": "relu_forward", "dx:": "relu_backward"},
            "softmax_loss": "softmax_loss",
        },
        rules={
            "shapes": Rule(
                "parameter shapes of W1, b1, ..., W3, b3",
                rtol=0,
                hint="W_l (d_{l-1}, d_l), b_l (d_l,).",
            ),
            # Weighted up: a construction key stands alone, a gradient has many siblings.
            # Each is credited only with the right shapes, which depend on the seed (the
            # initial weights' measure reads each matrix's shape itself).
            "init": Rule(
                "initial weights",
                kind="true",
                hint="every W_l, the last one too, from N(0, weight_scale**2).",
                measure=drawn_with(0.23),
            ),
            "bias": Rule(
                "initial biases", rtol=0, weight=3, hint="start at zero.", requires="shapes"
            ),
            "dtype": Rule(
                "parameter dtype",
                rtol=0,
                weight=3,
                hint="parameters are of the `dtype` asked for (float32 by default).",
                requires="shapes",
            ),
            "seed": Rule(
                "seed",
                kind="true",
                weight=3,
                hint="draw with np.random.default_rng(seed).",
                measure=seeded,
                requires="shapes",
            ),
            "scores": Rule(
                "scores for",
                rtol=1e-10,
                hint="{affine - relu} for each hidden layer, then affine (no relu after the last).",
            ),
            "loss": Rule(
                "loss for",
                rtol=1e-9,
                hint="softmax loss plus 0.5 * reg * sum of every W_l**2 (not the biases).",
            ),
            "grad": Rule(
                "gradient of",
                rtol=1e-8,
                hint="backpropagate through the layers in reverse; the regulariser adds reg * W_l.",
            ),
            "selfcheck": self_check_rule(
                "gradients",
                "loss",
                rtol=1e-5,  # a wrong gradient is off by 1e-3 or more; kinks and rounding 1e-7
                requires="loss",
            ),
            "inputs": INPUTS_RULE,
        },
    )
)


# ------------------------------------------------------------------- update rules

STEPS = 4
CURVE_STEPS = 40


def rule_probe(function: str, given: dict, state: dict, curve_config: dict):
    """Probe an update rule.

    given: hyper-parameters for the "given config" run; state: {key: how to draw it from
    rng} of state already in that config (as after earlier steps). A rule with an epsilon
    also meets a dead unit (gradients exactly 0 from zero state) and gradients far below a
    given epsilon of 1, where an epsilon that is missing (0 / 0) or not read from config
    (a hard-coded 1e-8) shows, and where its place, inside or outside the root, does not.
    """

    def probe(student, rng, out):
        rule = getattr(student, function)
        shape = (4, 3)
        w0, dws = away_from_zero(rng, shape), [away_from_zero(rng, shape) for _ in range(STEPS)]
        start = dict(given)
        for key, draw in state.items():
            start[key] = draw(rng, shape)
        state_keys = sorted(state)

        def record_run(label, config, steps, start_w=w0):
            def run():
                current = (
                    None
                    if config is None
                    else {
                        k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in config.items()
                    }
                )
                w, path, moved = start_w.copy(), [], []
                for dw in steps:
                    # How much the call moved the arrays handed to it, raw: a rule that
                    # changes w or dw in place (w += v) moves its caller's arrays.
                    w_in, dw_in = np.array(w, dtype=np.float64), dw.copy()
                    w_before = w_in.copy()
                    w, current = rule(w_in, dw_in, current)
                    path.append(np.array(w, dtype=np.float64))
                    moved.append(np.array([w_in - w_before, dw_in - dw]))
                # The state, one array: t alone is a number anyone can guess, so the state
                # is credited only with the weights of the same run.
                kept = [np.asarray(current[k], dtype=np.float64).ravel() for k in state_keys]
                return np.array(path), np.concatenate(kept), np.array(moved)

            out.record([f"w:from {label}", f"state:from {label}", f"inputs:from {label}"], run)

        record_run("the default config", None, dws)
        record_run("a given config and state", start, dws)

        def defaults():
            _, config = rule(w0.copy(), dws[0].copy(), None)
            return np.array([float(config[k]) for k in sorted(given)])

        out.record("defaults:", defaults)

        # The fixed problem for the loss curve: least squares, written out here (no graded
        # function of any assignment is a loss a kernel could import from the package).
        X = rng.standard_normal((60, 5))
        Y = X @ rng.standard_normal((5, 3)) + 0.5 * rng.standard_normal((60, 3))
        W_start = 0.1 * rng.standard_normal((5, 3))

        def curve():
            W, config, losses = W_start.copy(), dict(curve_config), []
            for _ in range(CURVE_STEPS):
                residual = X @ W - Y
                losses.append(0.5 * float(np.mean(np.sum(residual**2, axis=1))))
                W, config = rule(W, X.T @ residual / len(X), config)
            return np.array(losses)

        out.record("curve:", curve)

        if "epsilon" in given:  # drawn last: the earlier cases' inputs stay as they were
            tiny = [1e-7 * away_from_zero(rng, shape) for _ in range(STEPS)]
            dead = int(rng.integers(shape[1]))
            for dw in tiny:
                dw[:, dead] = 0.0  # a dead unit: its gradient is exactly zero at every step
            config = {"learning_rate": given["learning_rate"], "epsilon": 1.0}
            # Weights as small as the gradients: each step (about learning_rate * 1e-7) is
            # then 1% to 4% of a weight, not 1e-9 of it, where weights left as they were
            # are within the rule's 1e-6 (the w of `first`, the trivial answer, earned
            # Adam's and RMSProp's sub-check on every seed: tests/test_trivial_answers.py).
            small_w = 1e-7 * away_from_zero(rng, shape)
            record_run(
                "zero state, a dead unit, gradients near 1e-7 and epsilon 1",
                config,
                tiny,
                small_w,
            )

    return probe


# Other well-known conventions, named in the feedback of the rules they change, so that
# code written in one of them is recognised rather than misdiagnosed.
CONVENTIONS = {
    "sgd_momentum": (
        " This course's velocity is v = momentum * v - learning_rate * dw, next_w = w + v; "
        "PyTorch's SGD convention, v = momentum * v + dw and next_w = w - learning_rate * v, "
        "takes the same steps from zero velocity but keeps a different velocity in config "
        "(-v / learning_rate), so a given velocity means something else."
    ),
    "adamw": (
        " This course follows PyTorch's AdamW: the decay is weight_decay * w on the weights "
        "before the step, times learning_rate. The AdamW paper (Loshchilov and Hutter) "
        "multiplies the decay by the schedule multiplier eta_t instead (1 here, not "
        "learning_rate), and decaying the weights after Adam's step is a third variant: "
        "both are other conventions, not this API's."
    ),
}


def rule_rules(hint: str, given: dict, state: dict, convention: str = "") -> dict[str, Rule]:
    """The rules of an update rule's check (momentum, RMSProp, Adam, AdamW): the weights and
    the stored state after STEPS steps, the w and dw it must leave alone, its defaults, and a
    least-squares curve trained with it. convention: words naming another well-known
    convention, added to the hints."""
    # 1e-6: tolerates where epsilon sits (inside or outside the square root; the API
    # leaves it open for rmsprop), and catches every real mistake (off by 1e-3 or more).
    eps = (
        " Read epsilon from config: with epsilon 1 and gradients near 1e-7, a hard-coded "
        "epsilon takes steps far too large, and without one a dead unit (zero gradients) "
        "is 0 / 0."
        if "epsilon" in given
        else ""
    )
    return {
        "w": Rule(
            f"weights after {STEPS} steps,", rtol=1e-6, weight=2, hint=hint + convention + eps
        ),
        "state": Rule(
            f"config's {', '.join(sorted(state))} after {STEPS} steps,",
            rtol=1e-6,
            weight=len(state),
            hint="the state must be stored back into config, as the API defines it." + convention,
            requires="w",
        ),
        # Raw differences, compared exactly with the reference's (zeros), and credited
        # only with the weights of the same run (zeros alone are easy to send).
        "inputs": Rule(
            "how much each call moved the w and dw it was given,",
            rtol=0,
            weight=2,
            hint="the rule changed w or dw in place (w += v, w -= ...): the caller's weights "
            "move behind its back. Compute next_w as a new array (next_w = w + v); only "
            "config's own state may change.",
            requires="w",
        ),
        # The API's numbers, known to all: credited only with the curve, which uses them.
        "defaults": Rule(
            f"default values of {', '.join(sorted(given))}",
            rtol=1e-12,
            hint="use config.setdefault with the API's defaults.",
            requires="curve",
        ),
        # The curve's gradients shrink as it converges, where epsilon's place shows more:
        # a band of 1e-4 still separates every mistake (1e-2 and more) from correct code.
        "curve": Rule(
            "loss of least squares trained with your rule",
            rtol=1e-4,
            weight=2,
            hint="the update, the state, or a default.",
            picture="curve",
        ),
    }


def _positive(rng, shape):
    return rng.uniform(0.01, 1.0, shape)


def _normal(rng, shape):
    return 0.1 * rng.standard_normal(shape)


RULES = {
    "sgd_momentum": (
        2,
        {"learning_rate": 0.03, "momentum": 0.8},
        {"velocity": _normal},
        {"learning_rate": 0.1},
        "v = momentum * v - learning_rate * dw; next_w = w + v.",
    ),
    "rmsprop": (
        2,
        {"learning_rate": 0.02, "decay_rate": 0.9, "epsilon": 1e-8},
        {"cache": _positive},
        {"learning_rate": 0.02},
        "cache = decay_rate * cache + (1 - decay_rate) * dw**2; "
        "next_w = w - learning_rate * dw / (sqrt(cache) + epsilon).",
    ),
    "adam": (
        3,
        {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6},
        {"m": _normal, "v": _positive, "t": lambda rng, shape: 5},
        {"learning_rate": 0.05},
        "increment t first; m and v as running averages of dw and dw**2; divide them by "
        "(1 - beta**t); next_w = w - learning_rate * m_hat / (sqrt(v_hat) + epsilon).",
    ),
    "adamw": (
        2,
        {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6, "weight_decay": 0.3},
        {"m": _normal, "v": _positive, "t": lambda rng, shape: 5},
        {"learning_rate": 0.05, "weight_decay": 0.1},
        "Adam's step plus weight_decay * w, both times learning_rate; the decay is not "
        "added to dw (that is L2, not decoupled decay).",
    ),
}

for function, (points, given, state, curve_config, hint) in RULES.items():
    register(
        Check(
            name=function,
            notebook=NOTEBOOK,
            points=points,
            probe=rule_probe(function, given, state, curve_config),
            rules=rule_rules(hint, given, state, CONVENTIONS.get(function, "")),
        )
    )


# ------------------------------------------------------------ landscape predictions


def probe_landscape_predictions(student, rng, out):
    """The two predictions of part 5, on settings drawn from the (secret) seed: the loss on
    the plateau of too small a start, and the length of Adam's first step."""
    # 2 to 20 classes: log(C) is more than 1% from log(C +- 1), log2(C), 1 / C and C - 1.
    classes = rng.choice(np.arange(2, 21), size=3, replace=False)
    out.record(
        "plateau:softmax loss when every score is 0",
        lambda: np.array([student.predicted_plateau_loss(int(c)) for c in classes], float),
    )
    # Rates over three decades and counts over four: lr sqrt(n) is far from lr, lr n,
    # lr / sqrt(n) and the uncorrected step sqrt(10) lr sqrt(n) for every draw. Both rules'
    # rtol of 0.005 is relative to |got| + |want|: about 1% of the answer.
    rates = 10.0 ** rng.uniform(-4, -1, size=3)
    counts = rng.integers(10, 100_001, size=3)
    settings = list(zip(rates.tolist(), counts.tolist(), strict=True))
    out.record(
        "adam:length of Adam's first step",
        lambda: np.array([student.predicted_adam_first_step(r, int(n)) for r, n in settings]),
    )


register(
    Check(
        name="landscape_predictions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_landscape_predictions,
        rules={
            "plateau": Rule(
                "predicted",
                rtol=0.005,
                hint="with every score 0, softmax gives each of the classes the same "
                "probability, whichever the label.",
            ),
            "adam": Rule(
                "predicted",
                rtol=0.005,
                hint="at t = 1, with m = v = 0, the bias-corrected m_hat is dw and v_hat is "
                "dw**2: each parameter moves by learning_rate * dw / |dw|.",
            ),
        },
    )
)
