"""Hidden checks of assignment 04, "Initialisation and optimisers" (API: shared API.md,
section 04).

Update rules are run for several consecutive steps from hidden states, so that the state
carried in `config` is checked, and train a small fixed problem whose loss curve is
compared with the reference's. Initialisation is judged by the statistics of large draws,
never by the exact random numbers.
"""

import numpy as np

from course.checks.multilayer import INPUTS_RULE, record_network_loss
from course.grader.model import Broken, Check, Rule, register

NOTEBOOK = "04_optimisers/optimisers"

# ------------------------------------------------------------------- weight_init


def _moments(W: np.ndarray) -> tuple[float, float, float]:
    """(mean, std, excess kurtosis): a normal sample's kurtosis is 0, a uniform one's -1.2."""
    W = np.asarray(W, dtype=np.float64)
    centred = W - W.mean()
    std = centred.std()
    return float(W.mean()), float(std), float(np.mean(centred**4) / std**4 - 3.0)


def probe_weight_init(student, rng, out):
    fan_in, fan_out = 500, 240  # fan_in != fan_out: a scheme that uses fan_out shows
    for scheme, std in (
        ("xavier", np.sqrt(1 / fan_in)),
        ("he", np.sqrt(2 / fan_in)),
        (0.037, 0.037),
    ):
        seed = int(rng.integers(1 << 31))

        def compute(scheme=scheme, std=std, seed=seed):
            W = student.weight_init(fan_in, fan_out, scheme, np.random.default_rng(seed))
            shape = np.array(np.shape(W), dtype=float)
            mean, sample_std, kurtosis = _moments(W)
            # 120,000 draws: the mean's and the std's errors are about 0.3% of std, the
            # kurtosis's about 0.014, so these bounds hold for any correct generator.
            centred = abs(mean) < 0.02 * std or Broken("the mean is not 0")
            normal = abs(kurtosis) < 0.1 or Broken("the draws are not normal (uniform?)")
            return shape, centred, sample_std, normal

        label = f"scheme {scheme!r}" if isinstance(scheme, str) else "a number as the scheme"
        keys = ["shape", "mean", "std", "normal"]
        out.record([f"{k}:{label}" for k in keys], compute)

    def reproducible():
        seed = int(rng.integers(1 << 31))
        first = student.weight_init(7, 5, "he", np.random.default_rng(seed))
        np.random.seed(seed % 1000)  # a function drawing from the global generator differs
        second = student.weight_init(7, 5, "he", np.random.default_rng(seed))
        other = student.weight_init(7, 5, "he", np.random.default_rng(seed + 1))
        return bool(np.array_equal(first, second) and not np.array_equal(first, other))

    out.record("rng:the generator passed in decides the draws", reproducible)


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
            "mean": Rule(
                "mean of the draws for",
                kind="true",
                hint="rng.normal(0.0, std, ...).",
                requires="std",
            ),
            # The sample's std, raw, against the reference's: rtol 0.01 admits a ratio
            # within about 2% (each is within 0.3% of its true value, one sigma).
            "std": Rule(
                "standard deviation of the draws for",
                rtol=0.01,
                weight=3,
                hint="xavier: sqrt(1 / fan_in); he: sqrt(2 / fan_in); a number: that std "
                "(a std, not a variance). The course's 'xavier' is the fan_in form (LeCun's, "
                "and PyTorch's fan_in mode); Glorot and Bengio's own 2 / (fan_in + fan_out) "
                "averages the fans, another convention, not this API's.",
            ),
            "normal": Rule(
                "normal shape for", kind="true", hint="draw with rng.normal.", requires="std"
            ),
            "rng": Rule(
                "",
                kind="true",
                weight=2,
                hint="draw from the rng argument, not np.random's global generator.",
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


def probe_fully_connected_net(student, rng, out):
    Net = student.FullyConnectedNet

    # Per weight matrix, never pooled: a last layer at a fixed scale hides among the others.
    # The smallest matrix has 1,200 entries: its sample std is within 2% (one sigma).
    dims = [60, 50, 40, 30]
    layers = range(1, len(dims))

    def construction():
        net = Net(dims[1:-1], dims[0], dims[-1], weight_scale=0.23, dtype=np.float64, seed=3)
        names = [f"{p}{i}" for i in layers for p in ("W", "b")]
        if sorted(net.params) != sorted(names):
            raise KeyError(f"params has keys {sorted(net.params)}, expected W1, b1, ..., W3, b3")
        shapes = np.concatenate([np.shape(net.params[n]) for n in names]).astype(float)
        stds = [float(np.std(net.params[f"W{i}"])) for i in layers]
        means = [abs(float(np.mean(net.params[f"W{i}"]))) / 0.23 for i in layers]
        biases = np.concatenate([net.params[f"b{i}"].ravel() for i in layers]).astype(float)
        f64 = all(p.dtype == np.float64 for p in net.params.values())
        f32 = all(p.dtype == np.float32 for p in Net([4], 3, 2, seed=1).params.values())
        typed = (f64 and f32) or Broken(
            "parameters are not of the `dtype` asked for (float32 by default)"
        )
        same = Net([6], 5, 3, seed=11).params["W1"]
        again = Net([6], 5, 3, seed=11).params["W1"]
        other = Net([6], 5, 3, seed=12).params["W1"]
        seeded = (np.array_equal(same, again) and not np.array_equal(same, other)) or Broken(
            "the same seed does not give the same weights (draw with np.random.default_rng(seed))"
        )
        return [shapes, *stds, *means, biases, typed, seeded]

    keys = ["shapes:of W1, b1, ..., W3, b3"]
    keys += [f"std:of W{i}" for i in layers] + [f"mean:of W{i}" for i in layers]
    keys += ["init:biases", "dtype:", "seed:"]
    out.record(keys, construction)

    N = 8
    for dims, label in (
        ([7, 4], "no hidden layer"),
        ([7, 6, 4], "one hidden layer"),
        ([7, 6, 5, 4], "two hidden layers"),
        # Square weights: a transpose in the wrong place that square shapes let through.
        ([6, 6, 6, 4], "two hidden layers, square W1 and W2"),
    ):
        params = _fcn_params(rng, dims)
        X = rng.standard_normal((N, dims[0]))
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
        rules={
            "shapes": Rule("parameter shapes", rtol=0, hint="W_l (d_{l-1}, d_l), b_l (d_l,)."),
            # Weighted up: a construction key stands alone, a gradient has many siblings.
            "std": Rule(
                "standard deviation of the initial weights",
                rtol=0.05,  # a ratio within about 10% of the reference's: five sigmas
                weight=2,
                hint="every W_l, the last one too, from N(0, weight_scale**2).",
            ),
            "mean": Rule(
                "|mean| / weight_scale of the initial weights",
                kind="below",
                rtol=0.2,
                hint="draw from a normal centred at 0.",
            ),
            "init": Rule("initial", rtol=0, weight=3, hint="biases start at zero."),
            "dtype": Rule("parameter dtype", kind="true", weight=3, hint=""),
            "seed": Rule("seed", kind="true", weight=3, hint=""),
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
            "selfcheck": Rule(
                "gradients against centred differences of your own loss, for",
                kind="below",
                rtol=1e-5,  # a wrong gradient is off by 1e-3 or more; kinks and rounding 1e-7
                hint="a gradient does not match the loss it comes from.",
                requires="loss",
            ),
            "inputs": INPUTS_RULE,
        },
    )
)


# ------------------------------------------------------------------- update rules

STEPS = 4
CURVE_STEPS = 40


def softmax_regression(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """The fixed problem for the loss curves: mean cross-entropy of X @ W, and its gradient."""
    scores = X @ W
    shifted = scores - scores.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(y))
    dscores = np.exp(log_probs)
    dscores[rows, y] -= 1
    return float(-log_probs[rows, y].mean()), X.T @ dscores / len(y)


def rule_probe(function: str, given: dict, state: dict, curve_config: dict):
    """Probe an update rule.

    given: hyper-parameters for the "given config" run; state: {key: how to draw it from
    rng} of state already in that config (as after earlier steps). A rule with an epsilon
    also meets dead units (gradients exactly 0 from zero state) and gradients far below
    a given epsilon of 1, where an epsilon that is missing (0 / 0) or not read from config
    (a hard-coded 1e-8) shows, and where its place, inside or outside the root, does not.
    """

    def probe(student, rng, out):
        rule = getattr(student, function)
        shape = (4, 3)
        w0, dws = _away_from_zero(rng, shape), [_away_from_zero(rng, shape) for _ in range(STEPS)]
        start = dict(given)
        for key, draw in state.items():
            start[key] = draw(rng, shape)
        state_keys = sorted(state)

        def record_run(label, config, steps):
            def run():
                current = (
                    None
                    if config is None
                    else {
                        k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in config.items()
                    }
                )
                w, path, moved = w0.copy(), [], []
                for dw in steps:
                    # How much the call moved the arrays handed to it, raw: a rule that
                    # changes w or dw in place (w += v) moves its caller's arrays.
                    w_in, dw_in = np.array(w, dtype=np.float64), dw.copy()
                    w_before = w_in.copy()
                    w, current = rule(w_in, dw_in, current)
                    path.append(np.array(w, dtype=np.float64))
                    moved.append(np.array([w_in - w_before, dw_in - dw]))
                return [np.array(path), np.array(moved)] + [
                    np.asarray(current[k], dtype=np.float64) for k in state_keys
                ]

            n = len(steps)
            keys = [f"w:{n} steps from {label}", f"inputs:w and dw moved by {n} calls from {label}"]
            keys += [f"state:{k} after {n} steps from {label}" for k in state_keys]
            out.record(keys, run)

        record_run("the default config", None, dws)
        record_run("a given config and state", start, dws)

        def defaults():
            _, config = rule(w0.copy(), dws[0].copy(), None)
            return np.array([float(config[k]) for k in sorted(given)])

        out.record("defaults:of " + ", ".join(sorted(given)), defaults)

        C = 3
        centres = 2.0 * rng.standard_normal((C, 5))
        y = rng.integers(0, C, 60)
        X = centres[y] + rng.standard_normal((60, 5))
        W_start = 0.1 * rng.standard_normal((5, C))

        def curve():
            W, config, losses = W_start.copy(), dict(curve_config), []
            for _ in range(CURVE_STEPS):
                loss, dW = softmax_regression(W, X, y)
                W, config = rule(W, dW, config)
                losses.append(loss)
            return np.array(losses)

        out.record("curve:loss of softmax regression trained with your rule", curve)

        if "epsilon" in given:  # drawn last: the earlier cases' inputs stay as they were
            tiny = [1e-7 * _away_from_zero(rng, shape) for _ in range(STEPS)]
            for dw in tiny:
                dw[:, 1] = 0.0  # a dead unit: its gradient is exactly zero at every step
            dead = {"learning_rate": given["learning_rate"], "epsilon": 1.0}
            record_run("zero state, a dead unit, gradients near 1e-7 and epsilon 1", dead, tiny)

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


def rule_rules(hint: str, convention: str = "") -> dict[str, Rule]:
    # 1e-6: tolerates where epsilon sits (inside or outside the square root; the API
    # leaves it open for rmsprop), and catches every real mistake (off by 1e-3 or more).
    return {
        "w": Rule("weights after", rtol=1e-6, weight=2, hint=hint + convention),
        # Raw arrays, compared exactly with what the reference leaves (them unchanged).
        "inputs": Rule(
            "",
            rtol=0,
            weight=2,
            hint="the rule changed w or dw in place (w += v, w -= ...): the caller's weights "
            "move behind its back. Compute next_w as a new array (next_w = w + v); only "
            "config's own state may change.",
        ),
        "state": Rule(
            "config",
            rtol=1e-6,
            hint="the state must be stored back into config, as the API defines it." + convention,
        ),
        "defaults": Rule(
            "default values", rtol=1e-12, hint="use config.setdefault with the API's defaults."
        ),
        # The curve's gradients shrink as it converges, where epsilon's place shows more:
        # a band of 1e-4 still separates every mistake (1e-2 and more) from correct code.
        "curve": Rule(
            "", rtol=1e-4, weight=2, hint="the update, the state, or a default.", picture="curve"
        ),
    }


def _away_from_zero(rng, shape):
    """Entries of size 0.5 to 2: no tiny weight or gradient makes a relative error of
    rounding (or of where epsilon sits) look like a mistake."""
    return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


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
            rules=rule_rules(hint, CONVENTIONS.get(function, "")),
        )
    )
