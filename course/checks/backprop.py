"""Hidden checks of assignment 01, "Backprop by hand" (API: shared API.md, section 01)."""

import numpy as np

from course.data import two_moons
from course.gradcheck import rel_error
from course.grader.model import Broken, Check, Rule, register
from course.mlp import MLP, train

NOTEBOOK = "01_backprop/backprop"


def _signed(rng, low=0.5, high=2.0):
    return float(rng.uniform(low, high) * rng.choice([-1.0, 1.0]))


def _forward(V, values, build):
    """build(*Values) on fresh leaves; the output node, checked to be a Value with a float."""
    leaves = [V(x) for x in values]
    node = build(*leaves)
    if not isinstance(node, V):
        raise TypeError(f"the result is a {type(node).__name__}, not a Value")
    if not isinstance(node.data, float):
        raise TypeError(f".data is a {type(node.data).__name__}, not a float")
    return leaves, node


def _record_expression(out, V, name, points, build, self_check=True):
    """Record, at each input point, the forward value and the gradients after backward(),
    and (optionally) their agreement with centred differences of the student's own forward.

    points: list of input vectors; several points share one key, so an implementation that
    is right only where the answer is 0 (ReLU at a negative input) earns nothing.
    """
    keys = [f"data:{name}", f"grad:{name}"] + ([f"selfcheck:{name}"] if self_check else [])

    def compute():
        datas, grads, numeric = [], [], []
        for values in points:
            leaves, node = _forward(V, values, build)
            node.backward()
            datas.append(node.data)
            grads.append([leaf.grad for leaf in leaves])
            if self_check:
                h = 1e-6
                for i in range(len(values)):
                    plus, minus = list(values), list(values)
                    plus[i] += h
                    minus[i] -= h
                    f_plus = _forward(V, plus, build)[1].data
                    f_minus = _forward(V, minus, build)[1].data
                    numeric.append((f_plus - f_minus) / (2 * h))
        results = [np.array(datas), np.array(grads)]
        if self_check:
            results.append(rel_error(np.array(grads).ravel(), np.array(numeric)))
        return results

    out.record(keys, compute)


# ------------------------------------------------------------------- Value: operators


def probe_value_ops(student, rng, out):
    V = student.Value
    a, b = _signed(rng), _signed(rng)
    c = float(rng.uniform(0.5, 2.0))  # positive: a base for a fractional power
    k = float(rng.uniform(1.5, 3.0))  # a plain number on either side of an operator
    n = int(rng.integers(2, 5))
    p = float(rng.uniform(0.3, 0.8))
    expressions = {
        "a + b": ([a, b], lambda x, y: x + y),
        "a - b": ([a, b], lambda x, y: x - y),
        "a * b": ([a, b], lambda x, y: x * y),
        "a / b": ([a, b], lambda x, y: x / y),
        "-a": ([a], lambda x: -x),
        "a + k": ([a], lambda x: x + k),
        "k + a": ([a], lambda x: k + x),
        "a - k": ([a], lambda x: x - k),
        "k - a": ([a], lambda x: k - x),
        "a * k": ([a], lambda x: x * k),
        "k * a": ([a], lambda x: k * x),
        "a / k": ([a], lambda x: x / k),
        "k / a": ([a], lambda x: k / x),
        "a ** n (int)": ([a], lambda x: x**n),
        "c ** p (float)": ([c], lambda x: x**p),
        "a ** -2": ([a], lambda x: x**-2),
    }
    for name, (values, build) in expressions.items():
        _record_expression(out, V, name, [values], build, self_check=False)


register(
    Check(
        name="value_ops",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_value_ops,
        rules={
            "data": Rule(
                "forward value of",
                rtol=1e-12,
                hint="the operator computes the wrong thing, or a reflected form "
                "(__radd__, __rsub__, __rmul__, __rtruediv__) swaps its operands; "
                "every operator returns a Value whose .data is a float.",
            ),
            "grad": Rule(
                "gradients of",
                rtol=1e-9,
                hint="the local derivative of this operator in its _backward, or the "
                "chain rule's multiplication by out.grad.",
            ),
        },
    )
)


# ------------------------------------------------------------------- Value: functions


def probe_value_functions(student, rng, out):
    V = student.Value
    neg = -float(rng.uniform(0.3, 2.0))
    pos = float(rng.uniform(0.3, 2.0))
    functions = {
        "exp": lambda x: x.exp(),
        "log": lambda x: x.log(),
        "tanh": lambda x: x.tanh(),
        "relu": lambda x: x.relu(),
        "sigmoid": lambda x: x.sigmoid(),
    }
    for fname, build in functions.items():
        if fname == "log":
            name, points = "log(x) at two x > 0", [[pos], [pos + 1.0]]
        else:
            name, points = f"{fname}(x) at an x < 0 and an x > 0", [[neg], [pos]]
        _record_expression(out, V, name, points, build, self_check=False)
    # The numerics the notebook teaches first: exp(800) overflows a float64 (math.exp
    # raises), so a sigmoid or tanh written through exp of the wrong sign fails here.
    for fname in ("tanh", "sigmoid"):
        name = f"{fname}(x) at x = -800 and x = 800"
        _record_expression(out, V, name, [[-800.0], [800.0]], functions[fname], self_check=False)


register(
    Check(
        name="value_functions",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_value_functions,
        rules={
            "data": Rule(
                "forward value of",
                rtol=1e-12,
                hint="the formula of this function (check it at a negative input too, and "
                "at +-800, where exp of a large positive number overflows: sigmoid's "
                "stable form uses exp(-|x|), tanh's math.tanh).",
            ),
            "grad": Rule(
                "derivative of",
                rtol=1e-9,
                hint="the local derivative, e.g. tanh' = 1 - tanh**2, "
                "sigmoid' = s * (1 - s), relu' = 1 where x > 0 else 0.",
            ),
        },
    )
)


# ------------------------------------------------------------------- Value: backward


def probe_value_backward(student, rng, out):
    V = student.Value

    def micrograd_1(x):
        z = 2 * x + 2 + x
        q = z.relu() + z * x
        h = (z * z).relu()
        return h + q + q * x

    def micrograd_2(a, b):
        c = a + b
        d = a * b + b**3
        c = c + c + 1
        c = c + 1 + c + (-a)
        d = d + d * 2 + (b + a).relu()
        d = d + 3 * d + (b - a).relu()
        e = c - d
        f = e**2
        g = f / 2.0
        return g + 10.0 / f

    def neuron(x1, x2, w1, w2, b):
        return (x1 * w1 + x2 * w2 + b).tanh()

    def logistic(x, w, b):
        return -((x * w + b).sigmoid().log())

    def softplus_mix(a, b):
        return (a.exp() + b.exp()).log() * (a - b) / (1 + b * b)

    expressions = {
        "micrograd example 1": (micrograd_1, 1),
        "micrograd example 2": (micrograd_2, 2),
        "tanh neuron": (neuron, 5),
        "logistic loss": (logistic, 3),
        "log-sum-exp mix": (softplus_mix, 2),
    }
    for name, (build, arity) in expressions.items():
        values = [_signed(rng, 0.5, 1.5) for _ in range(arity)]
        _record_expression(out, V, name, [values], build)


register(
    Check(
        name="value_backward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_value_backward,
        rules={
            "data": Rule(
                "forward value of",
                rtol=1e-10,
                hint="an operator or function used in this expression.",
            ),
            "grad": Rule(
                "gradients of the inputs of",
                rtol=1e-7,
                hint="backward() must seed the output with 1.0, visit nodes in reverse "
                "topological order, and each _backward must add (+=) into .grad.",
            ),
            "selfcheck": Rule(
                "backward() against centred differences of your own forward, for",
                kind="below",
                rtol=1e-5,
                hint="some _backward disagrees with its own forward computation.",
                requires="data",
            ),
        },
    )
)


# ------------------------------------------------------------------- accumulation and order


def probe_value_accumulation(student, rng, out):
    V = student.Value
    a0 = _signed(rng, 0.3, 1.2)

    def reused_sum(a):
        return a + a

    def cube(a):
        return a * a * a

    def diamond(a):
        b = a.tanh()
        c = b * b
        d = c + b
        return d * b.exp()

    def shared_chain(a):
        # Each node feeds the next one twice: wrong order or overwriting compounds.
        x = a
        for _ in range(12):
            x = x * 0.9 + x.tanh()
        return x

    def late_reuse(a):
        b = a * 2
        c = b.tanh()
        d = c * 3 + 1
        return d * b  # b is used again only at the very end

    for name, build in {
        "a + a": reused_sum,
        "a * a * a": cube,
        "a diamond": diamond,
        "a chain reusing every node": shared_chain,
        "a node reused at the end": late_reuse,
    }.items():
        _record_expression(out, V, name, [[a0]], build)

    def seeded():
        o = V(a0) * V(2.0)
        o.backward()
        return o.grad

    def unrelated_leaf():
        a, spare = V(a0), V(3.0)
        (a * a).backward()
        return [spare.grad, a.grad]  # with a.grad: a backward() that does nothing earns nothing

    out.record("seed:output grad after backward()", seeded)
    out.record("leaf:grads of a Value outside the graph and of one inside", unrelated_leaf)


register(
    Check(
        name="value_accumulation",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_value_accumulation,
        rules={
            "data": Rule("forward value of", rtol=1e-10, hint=""),
            "grad": Rule(
                "gradient of",
                rtol=1e-7,
                hint="a node used more than once must accumulate (+=) the gradient of "
                "every use, and backward() must visit a node only after every node "
                "that uses it (reverse topological order, each node once).",
            ),
            "selfcheck": Rule(
                "backward() against centred differences of your own forward, for",
                kind="below",
                rtol=1e-5,
                hint="accumulation or visiting order.",
                requires="data",
            ),
            "seed": Rule("", rtol=1e-12, hint="backward() seeds the output's grad with 1.0."),
            "leaf": Rule(
                "", rtol=1e-12, hint="backward() touches only nodes that the output depends on."
            ),
        },
    )
)


# ------------------------------------------------------------------- numerical gradients


def _unless_moved(grad, x, original):
    """The gradient, or Broken if x was not restored exactly (bit for bit)."""
    if x.shape == original.shape and np.array_equal(x, original):
        return grad
    return Broken(
        "x was not restored exactly afterwards (save each old element and assign "
        "it back: x[i] += h, then x[i] -= h, leaves rounding residue)"
    )


def _record_checker(out, name, call, x, exact, h):
    """Record what a student's gradient checker gives on x (Broken unless x is restored
    exactly) and, at the default step, its agreement with the exact gradient.

    call(x, h): runs the student's checker; exact(x): the analytic gradient.
    """
    original = x.copy()

    def compute():
        grad = call(x, h)
        return _unless_moved(grad, x, original), rel_error(grad, exact(original))

    if h is None:
        out.record([f"grad:{name}", f"analytic:{name}"], compute)
    else:
        # The truncation error of centred differences is h**2 * f''' / 6: with h = 1e-2 it
        # is visible, so only the default step is held to the analytic gradient.
        out.record(f"grad:{name}", lambda: compute()[0])


def probe_numerical_gradient(student, rng, out):
    egrad = student.eval_numerical_gradient
    w = rng.standard_normal((4, 3))
    cases = {
        # name: (f, analytic gradient, x, h or None for the default)
        "sum(w * x**2), x (4, 3)": (
            lambda x: np.sum(w * x**2),
            lambda x: 2 * w * x,
            rng.standard_normal((4, 3)),
            None,
        ),
        "sum(sin(x)), x (2, 3, 4)": (
            lambda x: np.sum(np.sin(x)),
            np.cos,
            rng.standard_normal((2, 3, 4)),
            None,
        ),
        "sum(w * x**2), x = a transposed (3, 4) array (not contiguous)": (
            lambda x: np.sum(w * x**2),
            lambda x: 2 * w * x,
            rng.standard_normal((3, 4)).T,
            None,
        ),
        "sum(x**3) with h=1e-2": (
            lambda x: np.sum(x**3),
            lambda x: 3 * x**2,
            rng.standard_normal((3, 2)),
            1e-2,
        ),
    }
    for name, (f, analytic, x, h) in cases.items():
        call = (lambda x, h, f=f: egrad(f, x)) if h is None else (lambda x, h, f=f: egrad(f, x, h))
        _record_checker(out, name, call, x, analytic, h)


register(
    Check(
        name="eval_numerical_gradient",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_numerical_gradient,
        rules={
            "grad": Rule(
                "numerical gradient of",
                rtol=1e-7,
                hint="use centred differences (f(x+h) - f(x-h)) / (2h) with the h "
                "passed in, nudging one element of x itself at a time (x[ix] for ix in "
                "np.ndindex(x.shape)); x.ravel() or x.flatten() of a non-contiguous x "
                "is a copy, so nudging it leaves x alone.",
            ),
            "analytic": Rule(
                "agreement with the analytic gradient, for",
                kind="below",
                rtol=1e-7,
                hint="centred differences with h = 1e-5 in float64.",
                requires="grad",
            ),
        },
    )
)


def probe_numerical_gradient_array(student, rng, out):
    egrad = student.eval_numerical_gradient_array
    W = rng.standard_normal((5, 4))
    cases = {
        # name: (f, analytic d sum(f * df)/dx, x, df, h or None)
        "tanh(x @ W), x (3, 5)": (
            lambda x: np.tanh(x @ W),
            lambda x, df: (df * (1 - np.tanh(x @ W) ** 2)) @ W.T,
            rng.standard_normal((3, 5)),
            rng.standard_normal((3, 4)),
            None,
        ),
        "tanh(x @ W), x = a transposed (5, 3) array (not contiguous)": (
            lambda x: np.tanh(x @ W),
            lambda x, df: (df * (1 - np.tanh(x @ W) ** 2)) @ W.T,
            rng.standard_normal((5, 3)).T,
            rng.standard_normal((3, 4)),
            None,
        ),
        "f returning x itself, x (2, 3, 4)": (
            lambda x: x,
            lambda x, df: df,
            rng.standard_normal((2, 3, 4)),
            rng.standard_normal((2, 3, 4)),
            None,
        ),
        "x**3 with h=1e-2": (
            lambda x: x**3,
            lambda x, df: 3 * x**2 * df,
            rng.standard_normal((4, 2)),
            rng.standard_normal((4, 2)),
            1e-2,
        ),
    }
    for name, (f, analytic, x, df, h) in cases.items():
        if h is None:
            call = lambda x, h, f=f, df=df: egrad(f, x, df)
        else:
            call = lambda x, h, f=f, df=df: egrad(f, x, df, h)
        _record_checker(out, name, call, x, lambda x, df=df, a=analytic: a(x, df), h)


register(
    Check(
        name="eval_numerical_gradient_array",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_numerical_gradient_array,
        rules={
            "grad": Rule(
                "numerical gradient of",
                rtol=1e-7,
                hint="grad[i] = sum((f(x+h) - f(x-h)) * df) / (2h); copy f(x+h) before "
                "nudging x again, since f may return a view of x.",
            ),
            "analytic": Rule(
                "agreement with the analytic gradient, for",
                kind="below",
                rtol=1e-7,
                hint="weight each output by df, and sum.",
                requires="grad",
            ),
        },
    )
)


# ------------------------------------------------------------------- training

MLP_SIZES = (2, 8, 1)  # the notebook's network, on hidden data and weights
MLP_STEPS = 20
MLP_POINTS = 30
MLP_LEARNING_RATE = 0.5  # gentle: the curve stays a smooth function of the gradients
LOSS_BAND = 1e-6  # relative, at every step: correct engines differ only by rounding order


def probe_mlp_training(student, rng, out):
    X, y = two_moons(MLP_POINTS, noise=0.1, seed=int(rng.integers(1 << 30)))
    seed = int(rng.integers(1 << 30))

    def compute():
        model = MLP(student.Value, MLP_SIZES, seed=seed)
        losses, accuracies = train(model, X, y, steps=MLP_STEPS, learning_rate=MLP_LEARNING_RATE)
        return np.array(losses), accuracies[-1]

    out.record(["loss:curve", "accuracy:after the last step"], compute)


register(
    Check(
        name="mlp_training",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_mlp_training,
        rules={
            "loss": Rule(
                "training loss",
                rtol=LOSS_BAND,
                weight=2,
                hint="a gradient that is wrong somewhere in Value, even slightly.",
                picture="curve",
            ),
            "accuracy": Rule("training accuracy", rtol=1e-12, hint=""),
        },
    )
)


# ------------------------------------------------------------------- backprop by hand

BY_HAND_NAMES = ("s", "h", "z", "W2", "b2", "W1", "b1", "X")


def _grads_of(grads, names):
    """Each named gradient, or Broken if the dict lacks it."""
    if not isinstance(grads, dict):
        raise TypeError(f"grads is a {type(grads).__name__}, not a dict")
    return [grads[n] if n in grads else Broken(f"grads has no key {n!r}") for n in names]


def probe_backprop_by_hand(student, rng, out):
    # N, D, H, M all different, then square W1 and W2 (D = H = M): a transpose in the
    # wrong place that square shapes let through.
    for label, (N, D, H, M) in (
        ("N, D, H, M = 6, 5, 4, 3", (6, 5, 4, 3)),
        ("square W1, W2", (5, 4, 4, 4)),
    ):
        X, Y = rng.standard_normal((N, D)), rng.standard_normal((N, M))
        W1, b1 = rng.standard_normal((D, H)), rng.standard_normal(H)
        W2, b2 = rng.standard_normal((H, M)), rng.standard_normal(M)

        def compute(args=(X, W1, b1, W2, b2, Y)):
            loss, grads = student.backprop_by_hand(*[a.copy() for a in args])
            return [loss, *_grads_of(grads, BY_HAND_NAMES)]

        keys = [f"loss:{label}"] + [f"grad:d{n}, {label}" for n in BY_HAND_NAMES]
        out.record(keys, compute)


register(
    Check(
        name="by_hand_gradients",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_backprop_by_hand,
        rules={
            "loss": Rule("loss for", rtol=1e-10, hint="0.5 * sum((s - Y)**2) / N."),
            "grad": Rule(
                "gradient",
                rtol=1e-8,
                hint="derive each gradient from the one after it: ds = (s - Y) / N, "
                "dW2 = h.T @ ds, db2 = ds.sum(axis=0), dh = ds @ W2.T, dz = (1 - h**2) * dh, "
                "and so on; a gradient has its variable's shape.",
            ),
        },
    )
)

SOFTMAX_BY_HAND_NAMES = ("log_probs", "log_sum", "sum", "exp", "shifted", "S")


def probe_softmax_by_hand(student, rng, out):
    N, C = 7, 5
    cases = {
        "ordinary scores": 2.0 * rng.standard_normal((N, C)),
        "scores near 1e3": 600.0 * rng.standard_normal((N, C)),
    }
    for label, S in cases.items():
        y = rng.integers(0, C, N)

        def compute(S=S, y=y):
            loss, grads = student.softmax_ce_by_hand(S.copy(), y.copy())
            found = _grads_of(grads, SOFTMAX_BY_HAND_NAMES + ("max",))
            dmax = found[-1]
            # The shift's gradient is zero in exact arithmetic: its size, as measured.
            size = dmax if isinstance(dmax, Broken) else float(np.max(np.abs(dmax)))
            return [loss, *found[:-1], size]

        keys = [f"loss:{label}"] + [f"grad:d{n}, {label}" for n in SOFTMAX_BY_HAND_NAMES]
        out.record([*keys, f"shift:dmax, {label}"], compute)


register(
    Check(
        name="softmax_by_hand",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_softmax_by_hand,
        rules={
            "loss": Rule(
                "loss at",
                rtol=1e-10,
                hint="-mean of log_probs[rows, y], log_probs by log-sum-exp of the shifted scores.",
            ),
            "grad": Rule(
                "gradient",
                rtol=1e-8,
                hint="dlog_probs is -1/N at (i, y_i), 0 elsewhere; dlog_sum = -(row sums of "
                "dlog_probs); dsum = dlog_sum / sum; dexp = dsum broadcast over the row; "
                "dshifted = dlog_probs + exp * dsum, which collapses to (p - one_hot(y)) / N; "
                "dS = dshifted (the max's path adds nothing).",
            ),
            "shift": Rule(
                "largest |gradient| of the row maximum,",
                kind="below",
                rtol=1e-12,
                hint="dmax = -(row sums of dshifted), zero because each row of p - one_hot(y) "
                "sums to 0: shifting every score of a row by the same amount changes no p.",
            ),
        },
    )
)
