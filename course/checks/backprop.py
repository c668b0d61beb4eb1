"""Hidden checks of assignment 01, "Backprop by hand" (API: shared API.md, section 01)."""

import numpy as np

from course.checks.common import (
    as_given,
    away_from_zero,
    clear_of_kinks,
    flat,
    left_as_given,
    self_check_rule,
    training_curve_rule,
)
from course.data import two_moons
from course.grader.model import Assignment, Broken, Check, Rule, register
from course.grader.probe import inside_nudged
from course.mlp import MLP, train

ASSIGNMENT = Assignment(
    id="01_backprop",
    notebook="backprop",
    title="01 Backprop by hand",
    builds="a scalar autograd engine (`Value`), numerical gradient checkers",
    leak="numerics and bookkeeping decide whether a gradient is right",
    slow_cells=frozenset({"mlp_training"}),
)
NOTEBOOK = ASSIGNMENT.key


def _forward(V, values, build):
    """build(*Values) on fresh leaves; the output node, checked to be a Value with a float."""
    leaves = [V(x) for x in values]
    node = build(*leaves)
    if not isinstance(node, V):
        raise TypeError(f"the result is a {type(node).__name__}, not a Value")
    if not isinstance(node.data, float):
        raise TypeError(f".data is a {type(node.data).__name__}, not a float")
    return leaves, node


SELF_CHECK_STEP = 1e-6


def _record_expression(out, V, name, points, build, self_check=True, forward_apart=False):
    """Record, at each input point, the forward value and the gradients after backward(),
    and (optionally) the student's own forward values at inputs nudged by +-h, from which the
    grader computes centred differences.

    points: list of input vectors; several points share one key, so an implementation that
    is right only where the answer is 0 (ReLU at a negative input) earns nothing.
    forward_apart: observe the forward value without calling backward(), for a check that
    grades the operators themselves: with backward() unwritten (Exercise 1.4) their values
    are still judged, and a wrong one is said to be the forward's, not the chain rule's.
    """
    keys = [f"data:{name}", f"grad:{name}"] + ([f"selfcheck:{name}"] if self_check else [])
    if forward_apart:
        out.record(keys.pop(0), lambda: np.array([_forward(V, v, build)[1].data for v in points]))

    def compute():
        datas, grads, plus, minus = [], [], [], []
        for values in points:
            leaves, node = _forward(V, values, build)
            node.backward()
            datas.append(node.data)
            grads.append([leaf.grad for leaf in leaves])
            if self_check:
                for i in range(len(values)):
                    up, down = list(values), list(values)
                    up[i] += SELF_CHECK_STEP
                    down[i] -= SELF_CHECK_STEP
                    plus.append(_forward(V, up, build)[1].data)
                    minus.append(_forward(V, down, build)[1].data)
        results = ([] if forward_apart else [np.array(datas)]) + [np.array(grads)]
        if self_check:
            # Observations only: the grader differences them (course.checks.common).
            results.append(np.stack([np.array(grads, dtype=np.float64).ravel(), plus, minus]))
        return results

    out.record(keys, compute)


# ------------------------------------------------------------------- Value: operators

# What each of value_ops' expressions runs (Check.builds_on), the most basic first: a later
# check that fails because of one of them names it rather than blaming backward().
VALUE_OPERATORS = {
    "a + b": "Value.__add__",
    "a + k": "Value.__add__",
    "a * b": "Value.__mul__",
    "a * k": "Value.__mul__",
    "a ** n": "Value.__pow__",
    "c ** p": "Value.__pow__",
    "a ** -2": "Value.__pow__",
    "-a": "Value.__neg__",
    "a - b": "Value.__sub__",
    "a - k": "Value.__sub__",
    "a / b": "Value.__truediv__",
    "a / k": "Value.__truediv__",
    "k + a": "Value.__radd__",
    "k * a": "Value.__rmul__",
    "k - a": "Value.__rsub__",
    "k / a": "Value.__rtruediv__",
}
VALUE_FUNCTIONS = {f: f"Value.{f}" for f in ("exp", "log", "tanh", "relu", "sigmoid")}


def probe_value_ops(student, rng, out):
    """Value's operators (+, -, *, /, **, with a plain number on either side) on drawn operands:
    each expression's value, its inputs' gradients, and (walking the graph itself) their
    gradients when the output's grad is not 1: the chain rule."""
    V = student.Value
    a, b = away_from_zero(rng), away_from_zero(rng)
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
        _record_expression(out, V, name, [values], build, self_check=False, forward_apart=True)
    # The chain rule. backward() seeds the output with 1.0, where a _backward that forgets to
    # multiply by out.grad is still right; here the output's grad is g, and the check walks
    # the graph itself (through the given _prev and _backward): only the operators are
    # judged, not backward() (drawn last: the inputs above stay those of earlier seeds).
    g = float(rng.uniform(1.5, 3.0))
    for name, (values, build) in expressions.items():
        out.record(
            f"scaled:{name}", lambda values=values, build=build: _chained(V, values, build, g)
        )


def _chained(V, values, build, g):
    """The leaves' grads after the output's grad is set to g and every node's _backward runs
    once, in reverse topological order (the check's own walk, not the student's backward)."""
    leaves, node = _forward(V, values, build)
    order, seen = [], set()

    def visit(n):
        if id(n) not in seen:
            seen.add(id(n))
            for child in n._prev:
                visit(child)
            order.append(n)

    visit(node)
    node.grad = g
    for n in reversed(order):
        n._backward()
    return [leaf.grad for leaf in leaves]


# The likely mistake of an operator's gradients while its forward value is wrong as well: they
# follow from the forward (a swapped __rsub__ builds a - k, whose gradient has the other sign),
# so its _backward and the chain rule are not what to fix.
OPERATOR_FORWARD_FIRST = (
    'the forward value of this expression fails too (the "forward value of" line): fix the '
    "forward first, e.g. the operand order of a reflected form (__rsub__ is other - self); "
    "the gradients follow from it."
)

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
                requires="data",  # a constant gradient (a + b) is guessable
                hint_unless=(("data", OPERATOR_FORWARD_FIRST),),
            ),
            # "scaled", not "chain": a report lists a check's lines by key, so the forward
            # value's lines ("data") come first, as its hint says.
            "scaled": Rule(
                "gradients, when the output's grad is not 1, of",
                rtol=1e-9,
                hint="each _backward multiplies the local derivative by out.grad (the "
                "chain rule), e.g. self.grad += other.data * out.grad.",
                requires="data",
                hint_unless=(("data", OPERATOR_FORWARD_FIRST),),
            ),
        },
    )
)


# ------------------------------------------------------------------- Value: functions


def probe_value_functions(student, rng, out):
    """Value's exp, log, tanh, relu and sigmoid at drawn points of either sign, and far out
    (exp of about 800 overflows): each value and its gradient."""
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
    # The numerics the notebook teaches first: exp of about 800 overflows a float64
    # (math.exp raises), so a sigmoid or tanh written through exp of the wrong sign fails
    # at -far or +far. Those points share the key of the ordinary ones (their values, 0 and
    # +-1, are known in advance; credited only with the others, which are not).
    far = float(rng.uniform(750.0, 900.0))  # exp(-far) underflows to exactly 0.0
    for fname, build in functions.items():
        if fname == "log":
            name, points = "log(x) at two x > 0", [[pos], [pos + 1.0]]
        elif fname in ("tanh", "sigmoid"):
            name = f"{fname}(x) at an x < 0, an x > 0, and x near -800 and +800"
            points = [[neg], [pos], [-far], [far]]
        else:
            name, points = f"{fname}(x) at an x < 0 and an x > 0", [[neg], [pos]]
        _record_expression(out, V, name, points, build, self_check=False)


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
                "near +-800, where exp of a large positive number overflows: sigmoid's "
                "stable form uses exp(-|x|), tanh's math.tanh).",
            ),
            "grad": Rule(
                "derivative of",
                rtol=1e-9,
                hint="the local derivative, e.g. tanh' = 1 - tanh**2, "
                "sigmoid' = s * (1 - s), relu' = 1 where x > 0 else 0.",
                requires="data",  # a constant gradient (a + b) is guessable
            ),
        },
    )
)


# ------------------------------------------------------------------- Value: backward


def probe_value_backward(student, rng, out):
    """backward() through micrograd's own examples and a few composite expressions (a tanh
    neuron, a logistic loss): the output, every input's gradient, and the forward values at
    nudged inputs for the grader's centred differences."""
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

        def draw(arity=arity):
            return [away_from_zero(rng, low=0.5, high=1.5) for _ in range(arity)]

        # Example 2 ends in 10 / e**2: where e comes near 0, the centred differences of
        # the self-check measure rounding (4 draws in 3000 failed a right backward).
        if name == "micrograd example 2":
            values = clear_of_kinks(draw, lambda v: abs(_micrograd_2_e(*v)), gap=0.1)
        else:
            values = draw()
        _record_expression(out, V, name, [values], build)


def _micrograd_2_e(a: float, b: float) -> float:
    """micrograd example 2's e, in plain floats (trusted code, not the student's Value)."""
    c = 2 * (a + b) + 1
    c = 2 * c + 1 - a
    d = a * b + b**3
    d = 3 * d + max(b + a, 0.0)
    d = 4 * d + max(b - a, 0.0)
    return c - d


register(
    Check(
        name="value_backward",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_value_backward,
        builds_on={"value_ops": VALUE_OPERATORS, "value_functions": VALUE_FUNCTIONS},
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
                requires="data",  # a constant gradient (a + b) is guessable
            ),
            "selfcheck": self_check_rule(
                "backward()",
                "forward",
                rtol=1e-5,
                hint="some _backward disagrees with its own forward computation.",
                requires="data",
                h=SELF_CHECK_STEP,
            ),
        },
    )
)


# ------------------------------------------------------------------- accumulation and order


def probe_value_accumulation(student, rng, out):
    """backward() through graphs that use a node more than once (a + a, a * a * a, a diamond):
    the gradients, which only accumulating (+=) in reverse topological order gets right."""
    V = student.Value
    a0 = away_from_zero(rng, low=0.3, high=1.2)

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

    out.record("seed:backward()", seeded)
    out.record("leaf:backward()", unrelated_leaf)


register(
    Check(
        name="value_accumulation",
        notebook=NOTEBOOK,
        points=3,
        probe=probe_value_accumulation,
        # Its expressions use Value + Value or a number, Value * Value or a number, tanh, exp.
        builds_on={
            "value_ops": {k: VALUE_OPERATORS[k] for k in ("a + b", "a + k", "a * b", "a * k")},
            "value_functions": {f: VALUE_FUNCTIONS[f] for f in ("tanh", "exp")},
        },
        rules={
            "data": Rule("forward value of", rtol=1e-10, hint=""),
            "grad": Rule(
                "gradient of",
                rtol=1e-7,
                hint="a node used more than once must accumulate (+=) the gradient of "
                "every use, and backward() must visit a node only after every node "
                "that uses it (reverse topological order, each node once).",
                requires="data",  # a constant gradient (a + b) is guessable
            ),
            "selfcheck": self_check_rule(
                "backward()",
                "forward",
                rtol=1e-5,
                hint="accumulation or visiting order.",
                requires="data",
                h=SELF_CHECK_STEP,
            ),
            # 1.0, a guessable number: credited only with the leaf's, which depends on a.
            "seed": Rule(
                "output grad after",
                rtol=1e-12,
                hint="backward() seeds the output's grad with 1.0.",
                requires="leaf",
            ),
            "leaf": Rule(
                "grads of a Value outside the graph and of one inside, after",
                rtol=1e-12,
                hint="backward() touches only nodes that the output depends on.",
            ),
        },
    )
)


# ------------------------------------------------------------------- numerical gradients


def _record_checker(out, name, call, x):
    """Record what a student's gradient checker gives on x, and x itself after the call (the
    grader wants it bit for bit as it was right before). call(x) runs the student's checker.

    Nothing trusted is computed here, in the kernel, where the student's checker runs: code
    that climbs the call stack reads every local of the probe (round 5 of the attacks read
    an analytic gradient there). Every case is a function whose centred differences differ
    from its derivative by more than the tolerance (sin(k x) with k of a few hundred loses
    (k h)^2 / 6 to truncation: 2.7e-6 relative at k = 400, h = 1e-5), so a checker that
    returns a derivative instead of differences fails every case.
    """

    def compute():
        before = flat(x)
        grad = call(x)
        return grad, as_given(before, flat(x))

    out.record([f"grad:{name}", f"restored:{name}"], compute)


RESTORED = Rule(
    "x after the call, for",
    kind="true",
    measure=left_as_given,  # bit for bit, against the same process's snapshot
    weight=0,  # worth nothing alone; the gradient is credited only with it
    hint="save each old element and assign it back (x[i] += h, then x[i] -= h, leaves "
    "rounding residue).",
)


def _case(f):
    """f, answering NaN when the grader's `nudged` calls it (a checker that borrows the
    grader's nudging instead of nudging x itself)."""

    def case(x):
        value = f(x)
        return np.full(np.shape(value), np.nan) if inside_nudged() else value

    return case


def _frequency(rng) -> float:
    """A frequency at which centred differences with h = 1e-5 are visibly not the
    derivative (relative truncation (k h)^2 / 6 between 1.5e-6 and 6e-6, the tolerance
    1e-7), while their rounding stays near 1e-12."""
    return float(rng.uniform(300.0, 600.0))


def probe_numerical_gradient(student, rng, out):
    """eval_numerical_gradient's results for drawn functions of arrays of several shapes (and a
    given h), and x itself after the call, which the checker must leave as it was given."""
    egrad = student.eval_numerical_gradient
    w, k = rng.standard_normal((4, 3)), _frequency(rng)
    cases = {
        # name: (f, x, h or None for the default)
        "sum(w * sin(k x)), x (4, 3)": (
            lambda x: np.sum(w * np.sin(k * x)),
            rng.standard_normal((4, 3)),
            None,
        ),
        "sum(sin(k x)), x (2, 3, 4)": (
            lambda x: np.sum(np.sin(k * x)),
            rng.standard_normal((2, 3, 4)),
            None,
        ),
        "sum(w * sin(k x)), x = a transposed (3, 4) array (not contiguous)": (
            lambda x: np.sum(w * np.sin(k * x)),
            rng.standard_normal((3, 4)).T,
            None,
        ),
        "sum(x**3) with h=1e-2": (lambda x: np.sum(x**3), rng.standard_normal((3, 2)), 1e-2),
    }
    # f reads x itself, not its argument, as the notebook's `lambda _: loss(...)` do: the
    # differences come only from nudging x in place (a checker nudging a copy gets zeros).
    outside = rng.standard_normal((3, 4))
    cases["sum(w.T * sin(k x)) of x itself, f ignoring its argument"] = (
        lambda _: np.sum(w.T * np.sin(k * outside)),
        outside,
        None,
    )
    for name, (f, x, h) in cases.items():
        f = _case(f)
        call = (lambda x, f=f: egrad(f, x)) if h is None else (lambda x, f=f, h=h: egrad(f, x, h))
        _record_checker(out, name, call, x)


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
                requires="restored",
            ),
            "restored": RESTORED,
        },
    )
)


def probe_numerical_gradient_array(student, rng, out):
    """eval_numerical_gradient_array's results for drawn array functions and upstream gradients
    (a non-contiguous x among them), and x itself after the call."""
    egrad = student.eval_numerical_gradient_array
    W, k = rng.standard_normal((5, 4)), _frequency(rng)
    buffer = np.empty((2, 3, 4))
    cases = {
        # name: (f, x, df, h or None)
        "sin(k x @ W), x (3, 5)": (
            lambda x: np.sin(k * (x @ W)),
            rng.standard_normal((3, 5)),
            rng.standard_normal((3, 4)),
            None,
        ),
        "sin(k x @ W), x = a transposed (5, 3) array (not contiguous)": (
            lambda x: np.sin(k * (x @ W)),
            rng.standard_normal((5, 3)).T,
            rng.standard_normal((3, 4)),
            None,
        ),
        # f writes every result into the same array (as f returning a view of x does): a
        # checker must copy f(x+h) before it calls f again.
        "sin(k x) written into one buffer f reuses, x (2, 3, 4)": (
            lambda x: np.sin(k * x, out=buffer),
            rng.standard_normal((2, 3, 4)),
            rng.standard_normal((2, 3, 4)),
            None,
        ),
        "x**3 with h=1e-2": (
            lambda x: x**3,
            rng.standard_normal((4, 2)),
            rng.standard_normal((4, 2)),
            1e-2,
        ),
    }
    outside = rng.standard_normal((4, 5))  # read by f itself, as above
    cases["sin(k x @ W) of x itself, f ignoring its argument"] = (
        lambda _: np.sin(k * (outside @ W)),
        outside,
        rng.standard_normal((4, 4)),
        None,
    )
    for name, (f, x, df, h) in cases.items():
        f = _case(f)
        if h is None:
            call = lambda x, f=f, df=df: egrad(f, x, df)
        else:
            call = lambda x, f=f, df=df, h=h: egrad(f, x, df, h)
        _record_checker(out, name, call, x)


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
                "calling f again, since f may return an array it changes later (a view of "
                "x, or a buffer it reuses).",
                requires="restored",
            ),
            "restored": RESTORED,
        },
    )
)


# ------------------------------------------------------------------- training

MLP_SIZES = (2, 8, 1)  # the notebook's network, on hidden data and weights
MLP_STEPS = 20
MLP_POINTS = 30
MLP_LEARNING_RATE = 0.5  # gentle: the curve stays a smooth function of the gradients
# Measured (`course bench --bands`, 3 seeds): correct engines depart by up to 2.1e-16, the
# closest mutant (tanh derivative 1 - t) by 8.8e-3.
LOSS_BAND = 1e-6  # relative, at every step


def probe_mlp_training(student, rng, out):
    """The loss curve and final accuracy of a small MLP of the learner's Value, trained by the
    course's trusted loop on hidden two-moons data: a slightly wrong gradient bends the curve."""
    X, y = two_moons(MLP_POINTS, noise=0.1, seed=int(rng.integers(1 << 30)))
    seed = int(rng.integers(1 << 30))

    def compute():
        model = MLP(student.Value, MLP_SIZES, seed=seed)
        losses, accuracies = train(model, X, y, steps=MLP_STEPS, learning_rate=MLP_LEARNING_RATE)
        return np.array(losses), accuracies[-1]

    out.record(["loss:", "accuracy:"], compute)


register(
    Check(
        name="mlp_training",
        notebook=NOTEBOOK,
        points=2,
        probe=probe_mlp_training,
        # course.mlp's MLP: +, *, ** and reflected forms, tanh, relu, and backward().
        builds_on={
            "value_ops": VALUE_OPERATORS,
            "value_functions": {f: VALUE_FUNCTIONS[f] for f in ("tanh", "relu")},
            "value_backward": "Value.backward",
            "value_accumulation": "Value.backward (a node used more than once)",
        },
        rules={
            "loss": training_curve_rule(
                LOSS_BAND, "a gradient that is wrong somewhere in Value, even slightly.", weight=2
            ),
            # A guessable number (1.0 on an easy problem): credited only with the curve.
            "accuracy": Rule(
                "training accuracy after the last step", rtol=1e-12, hint="", requires="loss"
            ),
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


def _by_hand_sizes(rng) -> dict:
    """{label: (N, D, H, M)} from the seed: all different, then square W1 and W2
    (D = H = M), where a transpose in the wrong place keeps the shapes right."""
    N, D, H, M = (int(v) for v in rng.choice(np.arange(2, 10), 4, replace=False))
    k = int(rng.integers(3, 8))
    return {
        "N, D, H, M all different": (N, D, H, M),
        "square W1 and W2": (int(rng.choice([n for n in range(3, 10) if n != k])), k, k, k),
    }


def probe_backprop_by_hand(student, rng, out):
    """backprop_by_hand's loss and gradients for a two-layer network at drawn sizes, on copies
    of the inputs."""
    for label, (N, D, H, M) in _by_hand_sizes(rng).items():
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
    """softmax_ce_by_hand's loss and staged gradients at ordinary scores and at scores near 1e3,
    sizes drawn from the seed (dmax raw: the grader measures its size)."""
    # Sizes from the seed (what is 1/N in every entry is credited only with the loss).
    N, C = int(rng.integers(6, 30)), int(rng.integers(3, 9))
    cases = {
        "ordinary scores": 2.0 * rng.standard_normal((N, C)),
        "scores near 1e3": 600.0 * rng.standard_normal((N, C)),
    }
    for label, S in cases.items():
        y = rng.integers(0, C, N)

        def compute(S=S, y=y):
            loss, grads = student.softmax_ce_by_hand(S.copy(), y.copy())
            # dmax raw: the grader measures its size (zero in exact arithmetic).
            return [loss, *_grads_of(grads, (*SOFTMAX_BY_HAND_NAMES, "max"))]

        keys = [f"loss:{label}"] + [
            f"{KNOWN[n]}:{label}" if n in known_once_n_is(label) else f"grad:d{n}, {label}"
            for n in SOFTMAX_BY_HAND_NAMES
        ]
        out.record([*keys, f"shift:{label}"], compute)


KNOWN = {"log_sum": "logsum", "sum": "sum", "exp": "exp"}  # their rules, which need the loss


def known_once_n_is(label: str) -> tuple[str, ...]:
    """The gradients that are 1/N in every entry (to rounding), so guessable from the sizes
    alone: dlog_sum always; dsum and dexp too near 1e3, where each row's sum of exp is 1
    (a replay of the public references earned them on 3% of secret seeds)."""
    return ("log_sum", "sum", "exp") if "1e3" in label else ("log_sum",)


def largest_magnitude(got, want) -> float:
    """measure: the largest |element| of the student's array (of a gradient that is zero in
    exact arithmetic); NaN or an empty array fails."""
    got = np.asarray(got, dtype=np.float64)
    if got.size == 0:
        return float("inf")
    largest = float(np.max(np.abs(got)))
    return largest if np.isfinite(largest) else float("inf")


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
            # 1/N in every entry, known once N is: credited only with the loss.
            "logsum": Rule(
                "gradient dlog_sum at",
                rtol=1e-8,
                hint="dlog_sum = -(row sums of dlog_probs), shaped (N, 1).",
                requires="loss",
            ),
            "sum": Rule(
                "gradient dsum at",
                rtol=1e-8,
                hint="dsum = dlog_sum / sum, shaped (N, 1).",
                requires="loss",
            ),
            "exp": Rule(
                "gradient dexp at",
                rtol=1e-8,
                hint="dexp = dsum broadcast over the row, shaped (N, C).",
                requires="loss",
            ),
            "shift": Rule(
                "largest |gradient| of the row maximum (dmax), at",
                kind="below",
                rtol=1e-12,
                requires="loss",  # 0 is easy to send: credited only with the loss
                measure=largest_magnitude,
                hint="dmax = -(row sums of dshifted), zero because each row of p - one_hot(y) "
                "sums to 0: shifting every score of a row by the same amount changes no p.",
            ),
        },
    )
)
