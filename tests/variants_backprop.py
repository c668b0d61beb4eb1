"""Student variants of assignment 01 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, Mutant, m

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"

MUTANTS = [
    # Value: operators
    m(
        "add overwrites instead of accumulating",
        "value_core",
        {"value_accumulation", "mlp_training"},
        (
            "self.grad += out.grad\n            other.grad += out.grad",
            "self.grad = out.grad\n            other.grad = out.grad",
        ),
    ),
    m(
        "mul gradient uses its own data",
        "value_core",
        {"value_ops", "value_backward", "mlp_training"},
        ("self.grad += other.data * out.grad", "self.grad += self.data * out.grad"),
    ),
    m(
        "mul gradient not chained with out.grad",
        "value_core",
        {"value_backward"},
        ("other.grad += self.data * out.grad", "other.grad += self.data"),
    ),
    m(
        "pow derivative keeps the exponent",
        "value_core",
        {"value_ops"},
        (
            "exponent * self.data ** (exponent - 1) * out.grad",
            "exponent * self.data**exponent * out.grad",
        ),
    ),
    m(
        "rsub swaps its operands",
        "value_more_ops",
        {"value_ops"},
        ("return (-self) + other", "return self - other"),
    ),
    m(
        "rtruediv swaps its operands",
        "value_more_ops",
        {"value_ops"},
        ("return self**-1 * other", "return self / other"),
    ),
    m(
        "sub adds",
        "value_more_ops",
        {"value_ops", "value_backward"},
        ("return self + (-other)", "return self + other"),
    ),
    # Value: functions
    m(
        "tanh derivative 1 - t",
        "value_functions_solution",
        {"value_functions", "mlp_training"},
        ("(1.0 - out.data**2) * out.grad", "(1.0 - out.data) * out.grad"),
    ),
    m(
        "sigmoid derivative s",
        "value_functions_solution",
        {"value_functions"},
        ("s * (1.0 - s) * out.grad", "s * out.grad"),
    ),
    m(
        "relu passes gradient everywhere",
        "value_functions_solution",
        {"value_functions"},
        ("(1.0 if self.data > 0 else 0.0) * out.grad", "out.grad"),
    ),
    m(
        "exp derivative uses its input",
        "value_functions_solution",
        {"value_functions"},
        ("self.grad += out.data * out.grad", "self.grad += self.data * out.grad"),
    ),
    m(
        "log derivative divides by its output",
        "value_functions_solution",
        {"value_functions"},
        ("out.grad / self.data", "out.grad / out.data"),
    ),
    m(
        "naive sigmoid overflows far left",
        "value_functions_solution",
        {"value_functions"},
        # math.exp(800) raises OverflowError: the probe meets sigmoid at -800.
        (
            "    if self.data >= 0:\n        s = 1.0 / (1.0 + math.exp(-self.data))\n    else:\n"
            "        z = math.exp(self.data)\n        s = z / (1.0 + z)",
            "    s = 1.0 / (1.0 + math.exp(-self.data))",
        ),
    ),
    m(
        "tanh through exp(2x) overflows far right",
        "value_functions_solution",
        {"value_functions"},
        (
            'out = Value(math.tanh(self.data), (self,), "tanh")',
            'e = math.exp(2 * self.data)\n    out = Value((e - 1) / (e + 1), (self,), "tanh")',
        ),
    ),
    m(
        "sigmoid through numpy's exp, nan far left",
        "value_functions_solution",
        {"value_functions"},
        # np.exp(800) is inf with a warning: 1 / (1 + inf) is 0.0, but the derivative
        # written as exp(-x) / (1 + exp(-x))**2 is inf / inf = nan.
        (
            "    if self.data >= 0:\n        s = 1.0 / (1.0 + math.exp(-self.data))\n    else:\n"
            "        z = math.exp(self.data)\n        s = z / (1.0 + z)",
            "    s = float(1.0 / (1.0 + np.exp(-self.data)))",
        ),
        (
            "self.grad += s * (1.0 - s) * out.grad",
            "e = np.exp(-self.data)\n        self.grad += float(e / (1.0 + e) ** 2) * out.grad",
        ),
    ),
    # Value: backward
    m(
        "backward recursion instead of topological order",
        "value_backward_solution",
        {"value_accumulation", "value_backward"},
        (
            "    order, visited = [], set()\n\n    def visit(node):\n"
            "        if node not in visited:\n"
            "            visited.add(node)\n            for child in node._prev:\n"
            "                visit(child)\n            order.append(node)\n\n    visit(self)\n"
            "    self.grad = 1.0\n    for node in reversed(order):\n        node._backward()",
            "    self.grad = 1.0\n\n    def propagate(node):\n        node._backward()\n"
            "        for child in node._prev:\n            propagate(child)\n\n    propagate(self)",
        ),
    ),
    m(
        "topological sort without a visited set",
        "value_backward_solution",
        {"value_accumulation"},
        (
            "        if node not in visited:\n            visited.add(node)\n            for child",
            "        if True:\n            for child",
        ),
    ),
    m(
        "backward forgets the seed",
        "value_backward_solution",
        {"value_ops", "value_functions", "value_backward", "value_accumulation", "mlp_training"},
        ("    self.grad = 1.0\n", ""),
    ),
    m(
        "backward in forward order",
        "value_backward_solution",
        {"value_backward", "value_accumulation"},
        ("for node in reversed(order):", "for node in order:"),
    ),
    # eval_numerical_gradient
    m(
        "forward difference",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        ("x[ix] = old - h\n        f_minus", "x[ix] = old\n        f_minus"),
        ("(f_plus - f_minus) / (2 * h)", "(f_plus - f_minus) / h"),
    ),
    m(
        "ignores the h passed in",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        (
            "    grad = np.zeros(x.shape, dtype=np.float64)\n",
            "    grad = np.zeros(x.shape, dtype=np.float64)\n    h = 1e-5\n",
        ),
    ),
    m(
        "nudges and restores x by arithmetic",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        (
            "        x[ix] = old + h\n        f_plus = f(x)\n        x[ix] = old - h\n"
            "        f_minus = f(x)\n        x[ix] = old\n",
            "        x[ix] += h\n        f_plus = f(x)\n        x[ix] -= 2 * h\n"
            "        f_minus = f(x)\n        x[ix] += h\n",
        ),
    ),
    m(
        "divides by h, not 2h",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        ("(f_plus - f_minus) / (2 * h)", "(f_plus - f_minus) / h"),
    ),
    m(
        "returns a flat gradient",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        ("    return grad", "    return grad.ravel()"),
    ),
    m(
        "nudges x.ravel(), a copy when x is not contiguous",
        "eval_numerical_gradient_solution",
        {"eval_numerical_gradient"},
        (
            "    for ix in np.ndindex(x.shape):\n        old = x[ix]\n        x[ix] = old + h\n"
            "        f_plus = f(x)\n        x[ix] = old - h\n        f_minus = f(x)\n"
            "        x[ix] = old\n        grad[ix] = (f_plus - f_minus) / (2 * h)",
            "    flat, g = x.ravel(), grad.ravel()\n    for i in range(flat.size):\n"
            "        old = flat[i]\n        flat[i] = old + h\n        f_plus = f(x)\n"
            "        flat[i] = old - h\n        f_minus = f(x)\n        flat[i] = old\n"
            "        g[i] = (f_plus - f_minus) / (2 * h)",
        ),
    ),
    # eval_numerical_gradient_array
    m(
        "array version nudges x.ravel(), a copy when x is not contiguous",
        "eval_numerical_gradient_array_solution",
        {"eval_numerical_gradient_array"},
        (
            "    for ix in np.ndindex(x.shape):\n        old = x[ix]\n        x[ix] = old + h\n"
            "        f_plus = np.array(f(x), copy=True)\n        x[ix] = old - h\n"
            "        f_minus = np.array(f(x), copy=True)\n        x[ix] = old\n"
            "        grad[ix] =",
            "    flat, g = x.ravel(), grad.ravel()\n    for i in range(flat.size):\n"
            "        old = flat[i]\n        flat[i] = old + h\n"
            "        f_plus = np.array(f(x), copy=True)\n        flat[i] = old - h\n"
            "        f_minus = np.array(f(x), copy=True)\n        flat[i] = old\n"
            "        g[i] =",
        ),
    ),
    m(
        "ignores the upstream gradient",
        "eval_numerical_gradient_array_solution",
        {"eval_numerical_gradient_array"},
        ("np.sum((f_plus - f_minus) * df)", "np.sum(f_plus - f_minus)"),
    ),
    m(
        "keeps a view of f(x + h)",
        "eval_numerical_gradient_array_solution",
        {"eval_numerical_gradient_array"},
        ("f_plus = np.array(f(x), copy=True)", "f_plus = f(x)"),
        ("f_minus = np.array(f(x), copy=True)", "f_minus = f(x)"),
    ),
    m(
        "forward difference, array version",
        "eval_numerical_gradient_array_solution",
        {"eval_numerical_gradient_array"},
        ("x[ix] = old - h\n        f_minus", "x[ix] = old\n        f_minus"),
        ("/ (2 * h)", "/ h"),
    ),
    m(
        "mean instead of sum",
        "eval_numerical_gradient_array_solution",
        {"eval_numerical_gradient_array"},
        ("np.sum((f_plus - f_minus) * df)", "np.mean((f_plus - f_minus) * df)"),
    ),
]

PUSH_MARKED_BACKWARD = """\
@add_to_class(Value)
def backward(self):
    # Iterative DFS that marks a node when it is pushed, not when it is expanded: a node
    # reached again through a later path is never moved, so the order is not topological.
    order, seen, stack = [], {id(self)}, [(self, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        stack.append((node, True))
        for child in node._prev:
            if id(child) not in seen:
                seen.add(id(child))
                stack.append((child, False))
    self.grad = 1.0
    for node in reversed(order):
        node._backward()
"""

MUTANTS.append(
    Mutant(
        "iterative DFS that marks nodes when pushed",
        "value_backward_solution",
        (),
        frozenset({"value_backward"}),
        code=PUSH_MARKED_BACKWARD,
    )
)

# Mutants that the checks, by design, do not catch (see each one's comment).
EXPECTED_SURVIVORS: set[str] = set()


ITERATIVE_BACKWARD = """\
@add_to_class(Value)
def backward(self):
    # Depth-first post-order with an explicit stack: no recursion limit on deep graphs.
    order, visited, stack = [], set(), [(self, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            order.append(node)
        elif id(node) not in visited:
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in node._prev if id(child) not in visited)
    self.grad = 1.0
    for node in reversed(order):
        node._backward()
"""

KAHN_BACKWARD = """\
@add_to_class(Value)
def backward(self):
    # Kahn's algorithm: a node runs once every node that uses it has run.
    users, nodes, frontier = {}, {}, [self]
    while frontier:
        node = frontier.pop()
        if id(node) in nodes:
            continue
        nodes[id(node)] = node
        for child in node._prev:
            users[id(child)] = users.get(id(child), 0) + 1
            frontier.append(child)
    self.grad = 1.0
    ready = [self]
    while ready:
        node = ready.pop()
        node._backward()
        for child in node._prev:
            users[id(child)] -= 1
            if users[id(child)] == 0:
                ready.append(child)
"""

MICROGRAD_CORE = '''\
class Value:
    """micrograd's layout: children in a set, a plain-number fast path in each operator."""

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += 1.0 * out.grad
            other.grad += 1.0 * out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += out.grad * other.data
            other.grad += out.grad * self.data

        out._backward = _backward
        return out

    def __pow__(self, k):
        out = Value(math.pow(self.data, k), (self,), "pow")

        def _backward():
            self.grad += k * math.pow(self.data, k - 1) * out.grad

        out._backward = _backward
        return out
'''

DIRECT_OPS = """\
def _lift(v):
    return v if isinstance(v, Value) else Value(v)


def _binary(a, b, data, da, db, op):
    # A node with its own local derivatives da, db (no composition of other operators).
    out = Value(data, (a, b), op)

    def _backward():
        a.grad += da * out.grad
        b.grad += db * out.grad

    out._backward = _backward
    return out


@add_to_class(Value)
def __neg__(self):
    out = Value(-self.data, (self,), "neg")

    def _backward():
        self.grad -= out.grad

    out._backward = _backward
    return out


@add_to_class(Value)
def __sub__(self, other):
    other = _lift(other)
    return _binary(self, other, self.data - other.data, 1.0, -1.0, "-")


@add_to_class(Value)
def __truediv__(self, other):
    other = _lift(other)
    return _binary(self, other, self.data / other.data, 1.0 / other.data,
                   -self.data / other.data**2, "/")


@add_to_class(Value)
def __radd__(self, other):
    return _lift(other) + self


@add_to_class(Value)
def __rsub__(self, other):
    return _lift(other) - self


@add_to_class(Value)
def __rmul__(self, other):
    return _lift(other) * self


@add_to_class(Value)
def __rtruediv__(self, other):
    return _lift(other) / self
"""

FUNCTIONS_BY_IDENTITIES = """\
def _unary(x, data, local, op):
    out = Value(data, (x,), op)

    def _backward():
        x.grad += local(out.data) * out.grad

    out._backward = _backward
    return out


@add_to_class(Value)
def exp(self):
    return _unary(self, math.exp(self.data), lambda e: e, "exp")


@add_to_class(Value)
def log(self):
    x = self.data
    return _unary(self, math.log(x), lambda _: 1.0 / x, "log")


@add_to_class(Value)
def tanh(self):
    # tanh(x) = 2 sigmoid(2x) - 1, from one exponential of a non-positive number.
    e = math.exp(-2.0 * abs(self.data))
    t = math.copysign((1.0 - e) / (1.0 + e), self.data)
    return _unary(self, t, lambda t: 1.0 - t * t, "tanh")


@add_to_class(Value)
def relu(self):
    x = self.data
    return _unary(self, max(0.0, x), lambda _: float(x > 0), "relu")


@add_to_class(Value)
def sigmoid(self):
    # sigmoid(x) = (1 + tanh(x / 2)) / 2: stable at both ends.
    s = 0.5 * (1.0 + math.tanh(0.5 * self.data))
    return _unary(self, s, lambda s: s * (1.0 - s), "sigmoid")
"""

NDITER_GRADIENT = '''\
def eval_numerical_gradient(f, x, h=1e-5):
    """CS231n's checker: np.nditer over x, writing through it."""
    grad = np.zeros_like(x, dtype=float)
    it = np.nditer(x, flags=["multi_index"], op_flags=[["readwrite"]])
    while not it.finished:
        ix = it.multi_index
        oldval = x[ix]
        x[ix] = oldval + h
        fxph = f(x)
        x[ix] = oldval - h
        fxmh = f(x)
        x[ix] = oldval
        grad[ix] = (fxph - fxmh) / (2 * h)
        it.iternext()
    return grad
'''

# np.array(x, copy=True) keeps x's memory order (order="K"): for x = W.T the copy is
# Fortran-ordered, its reshape(-1) is another copy, and nudging it changes nothing.
COPY_GRADIENT_KEEPING_ORDER = '''\
def eval_numerical_gradient(f, x, h=1e-5):
    """Never touches x: nudges a private copy, through a flat view of it."""
    work = np.array(x, dtype=float, copy=True)
    flat = work.reshape(-1)
    grad = np.empty(work.size)
    for i in range(work.size):
        keep = flat[i]
        flat[i] = keep + h
        up = float(f(work))
        flat[i] = keep - h
        down = float(f(work))
        flat[i] = keep
        grad[i] = (up - down) / (2 * h)
    return grad.reshape(x.shape)
'''

MUTANTS.append(
    Mutant(
        "a private copy in x's memory order, nudged through reshape(-1)",
        "eval_numerical_gradient_solution",
        (),
        frozenset({"eval_numerical_gradient"}),
        code=COPY_GRADIENT_KEEPING_ORDER,
    )
)

COPY_GRADIENT = '''\
def eval_numerical_gradient(f, x, h=1e-5):
    """Never touches x: nudges a private C-ordered copy, through a flat view of it."""
    work = np.array(x, dtype=float, order="C", copy=True)
    flat = work.reshape(-1)
    grad = np.empty(work.size)
    for i in range(work.size):
        keep = flat[i]
        flat[i] = keep + h
        up = float(f(work))
        flat[i] = keep - h
        down = float(f(work))
        flat[i] = keep
        grad[i] = (up - down) / (2 * h)
    return grad.reshape(x.shape)
'''

# Wrong by Exercise 2.1's words: an f that reads x from outside (as the notebook's later
# `lambda _: ...` do) sees no nudge, and gets zeros.
MUTANTS.append(
    Mutant(
        "a private C-ordered copy, nudged (f that reads x itself sees nothing)",
        "eval_numerical_gradient_solution",
        (),
        frozenset({"eval_numerical_gradient"}),
        code=COPY_GRADIENT,
    )
)

UNRAVEL_GRADIENT = '''\
def eval_numerical_gradient(f, x, h=1e-5):
    """x itself, nudged in place, element by flat index (any memory order)."""
    grad = np.empty(x.shape)
    for i in range(x.size):
        ix = np.unravel_index(i, x.shape)
        saved = x[ix]
        x[ix] = saved + h
        up = f(x)
        x[ix] = saved - h
        down = f(x)
        x[ix] = saved
        grad[ix] = (up - down) / (2 * h)
    return grad
'''

NDITER_GRADIENT_ARRAY = '''\
def eval_numerical_gradient_array(f, x, df, h=1e-5):
    """CS231n's array checker."""
    grad = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"], op_flags=[["readwrite"]])
    while not it.finished:
        ix = it.multi_index
        oldval = x[ix]
        x[ix] = oldval + h
        pos = f(x).copy()
        x[ix] = oldval - h
        neg = f(x).copy()
        x[ix] = oldval
        grad[ix] = np.sum((pos - neg) * df) / (2 * h)
        it.iternext()
    return grad
'''

PROJECTED_GRADIENT_ARRAY = '''\
def eval_numerical_gradient_array(f, x, df, h=1e-5):
    """Projects f onto df at once, so no array output is kept across nudges."""
    def g(z):
        return float(np.sum(f(z) * df))

    grad = np.zeros(x.shape)
    for ix in np.ndindex(*x.shape):
        saved = x[ix]
        x[ix] = saved + h
        gp = g(x)
        x[ix] = saved - h
        gm = g(x)
        x[ix] = saved
        grad[ix] = (gp - gm) / (2 * h)
    return grad
'''

ALTERNATES = [
    Alternate("iterative depth-first backward", {"value_backward_solution": ITERATIVE_BACKWARD}),
    Alternate("Kahn's algorithm backward", {"value_backward_solution": KAHN_BACKWARD}),
    Alternate("micrograd core with set children", {"value_core": MICROGRAD_CORE}),
    Alternate("operators with their own derivatives", {"value_more_ops": DIRECT_OPS}),
    Alternate(
        "functions through identities", {"value_functions_solution": FUNCTIONS_BY_IDENTITIES}
    ),
    Alternate("nditer numerical gradient", {"eval_numerical_gradient_solution": NDITER_GRADIENT}),
    Alternate(
        "unravelled-index numerical gradient",
        {"eval_numerical_gradient_solution": UNRAVEL_GRADIENT},
    ),
    Alternate(
        "nditer array gradient", {"eval_numerical_gradient_array_solution": NDITER_GRADIENT_ARRAY}
    ),
    Alternate(
        "projected array gradient",
        {"eval_numerical_gradient_array_solution": PROJECTED_GRADIENT_ARRAY},
    ),
]

# Each graded function, and the solution cells that define it.
GRADED_FUNCTIONS = {
    "Value": {
        "value_core",
        "value_more_ops",
        "value_functions_solution",
        "value_backward_solution",
    },
    "eval_numerical_gradient": {"eval_numerical_gradient_solution"},
    "eval_numerical_gradient_array": {"eval_numerical_gradient_array_solution"},
}

# ------------------------------------------------------------------- by hand
BY_HAND, SOFTMAX_BY_HAND = "backprop_by_hand", "softmax_ce_by_hand_solution"

MUTANTS += [
    m(
        "by hand: dW2 as ds.T @ h, transposed back only when the shapes disagree",
        BY_HAND,
        {"by_hand_gradients"},
        ("dW2 = h.T @ ds", "dW2 = ds.T @ h\n    if dW2.shape != W2.shape:\n        dW2 = dW2.T"),
    ),
    m(
        "by hand: tanh derivative 1 - z**2",
        BY_HAND,
        {"by_hand_gradients"},
        ("dz = (1 - h**2) * dh", "dz = (1 - z**2) * dh"),
    ),
    m(
        "by hand: ds not divided by N",
        BY_HAND,
        {"by_hand_gradients"},
        ("ds = (s - Y) / N", "ds = s - Y"),
    ),
    m(
        "by hand: db1 is dz's mean",
        BY_HAND,
        {"by_hand_gradients"},
        ("db1 = dz.sum(axis=0)", "db1 = dz.mean(axis=0)"),
    ),
    m(
        "softmax by hand: log_sum's gradient with the wrong sign",
        SOFTMAX_BY_HAND,
        {"softmax_by_hand"},
        (
            "dlog_sum = -dlog_probs.sum(axis=1, keepdims=True)",
            "dlog_sum = dlog_probs.sum(axis=1, keepdims=True)",
        ),
    ),
    m(
        "softmax by hand: shifted's direct path forgotten",
        SOFTMAX_BY_HAND,
        {"softmax_by_hand"},
        ("dshifted = dlog_probs + e * dexp", "dshifted = e * dexp"),
    ),
    m(
        "softmax by hand: no shift (overflows near 1e3)",
        SOFTMAX_BY_HAND,
        {"softmax_by_hand"},
        ("m = S.max(axis=1, keepdims=True)", "m = np.zeros((S.shape[0], 1))"),
    ),
    m(
        "softmax by hand: the max's gradient taken as dS's row sums",
        SOFTMAX_BY_HAND,
        {"softmax_by_hand"},
        (
            "dmax = -dshifted.sum(axis=1, keepdims=True)",
            "dmax = -np.abs(dshifted).sum(axis=1, keepdims=True)",
        ),
    ),
]

BY_HAND_SEQUENTIAL = '''\
def backprop_by_hand(X, W1, b1, W2, b2, Y):
    """np.dot and einsum, the gradients filled in as they come."""
    N = len(X)
    h = np.tanh(np.dot(X, W1) + b1)
    s = np.dot(h, W2) + b2
    grads = {"s": (s - Y) / N}
    grads["W2"] = np.einsum("nh,nm->hm", h, grads["s"])
    grads["b2"] = np.einsum("nm->m", grads["s"])
    grads["h"] = np.dot(grads["s"], W2.T)
    grads["z"] = grads["h"] * (1.0 - h * h)
    grads["W1"] = np.dot(X.T, grads["z"])
    grads["b1"] = grads["z"].sum(0)
    grads["X"] = np.dot(grads["z"], W1.T)
    return 0.5 * np.sum(np.square(s - Y)) / N, grads
'''

BY_HAND_COSH = '''\
def backprop_by_hand(X, W1, b1, W2, b2, Y):
    """tanh's derivative as 1 / cosh(z)**2, and the loss as a mean over rows."""
    z = X @ W1 + b1
    h = np.tanh(z)
    s = h @ W2 + b2
    r = s - Y
    ds = r / X.shape[0]
    dh = ds @ W2.T
    dz = dh / np.cosh(z) ** 2
    return 0.5 * np.mean(np.sum(r * r, axis=1)), {
        "s": ds, "h": dh, "z": dz, "W2": h.T @ ds, "b2": ds.sum(0),
        "W1": X.T @ dz, "b1": dz.sum(0), "X": dz @ W1.T,
    }
'''

SOFTMAX_BY_HAND_DIRECT = '''\
def softmax_ce_by_hand(S, y):
    """Every gradient written from p directly; the max's path left out (it is zero)."""
    N, C = S.shape
    rows = np.arange(N)
    m = np.max(S, axis=1, keepdims=True)
    e = np.exp(S - m)
    total = np.sum(e, axis=1, keepdims=True)
    p = e / total
    one_hot = np.zeros((N, C))
    one_hot[rows, y] = 1.0
    log_probs = S - m - np.log(total)
    dS = (p - one_hot) / N
    return -np.mean(log_probs[rows, y]), {
        "log_probs": -one_hot / N,
        "log_sum": np.full((N, 1), 1.0 / N),
        "sum": 1.0 / (N * total),
        "exp": np.repeat(1.0 / (N * total), C, axis=1),
        "shifted": dS,
        "max": -dS.sum(axis=1, keepdims=True),
        "S": dS,
    }
'''

SOFTMAX_BY_HAND_LOGADDEXP = '''\
def softmax_ce_by_hand(S, y):
    """log_sum through np.logaddexp.reduce; gradients by the chain rule, step by step."""
    N = len(S)
    m = S.max(axis=1, keepdims=True)
    shifted = S - m
    log_sum = np.logaddexp.reduce(shifted, axis=1, keepdims=True)
    total = np.exp(log_sum)
    e = np.exp(shifted)
    log_probs = shifted - log_sum
    d_lp = np.zeros(S.shape)
    np.put_along_axis(d_lp, y[:, None], -1.0 / N, axis=1)
    d_ls = -np.sum(d_lp, axis=1, keepdims=True)
    d_sum = d_ls / total
    d_exp = d_sum * np.ones_like(S)
    d_sh = d_lp + d_exp * e
    d_m = -np.sum(d_sh, axis=1, keepdims=True)
    loss = -np.take_along_axis(log_probs, y[:, None], axis=1).mean()
    return loss, {"log_probs": d_lp, "log_sum": d_ls, "sum": d_sum, "exp": d_exp,
                  "shifted": d_sh, "max": d_m, "S": d_sh}
'''

ALTERNATES += [
    Alternate("by hand with np.dot and einsum", {BY_HAND: BY_HAND_SEQUENTIAL}),
    Alternate("by hand with cosh", {BY_HAND: BY_HAND_COSH}),
    Alternate("softmax by hand from p directly", {SOFTMAX_BY_HAND: SOFTMAX_BY_HAND_DIRECT}),
    Alternate("softmax by hand with logaddexp", {SOFTMAX_BY_HAND: SOFTMAX_BY_HAND_LOGADDEXP}),
]

GRADED_FUNCTIONS["backprop_by_hand"] = {BY_HAND}
GRADED_FUNCTIONS["softmax_ce_by_hand"] = {SOFTMAX_BY_HAND}
