# %% [markdown]
# # 01 · Backprop by hand
#
# Everything in a neural network reaches the loss through a gradient. Before any network,
# this assignment builds the machine that computes gradients, and the instrument that tells
# whether they are right.
#
# **The leak shown here:** numerics and bookkeeping decide whether a gradient is right.
# A node whose gradient is overwritten instead of accumulated, a graph visited in the wrong
# order, a finite-difference step that is too small for float32: each gives a gradient that
# looks plausible, and each changes where training goes.
#
# | Part | You write | Points |
# |---|---|---|
# | 1 · A scalar autograd engine | `Value`: operators, functions, `backward()` | 11 |
# | 2 · Numerical gradients | `eval_numerical_gradient`, `eval_numerical_gradient_array` | 6 |
# | 3 · Backprop through a vectorised expression | `backprop_by_hand`, `softmax_ce_by_hand` | 5 |
# | 4 · A tiny MLP on your engine | nothing new: your `Value` is graded by its loss curve | 2 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import two_moons
from course.gradcheck import compare_table, rel_error
from course.mlp import MLP, train
from course.notebook import add_to_class, check_it, expect, show_source
from course.plots import decision_boundary, error_against_step, loss_curve

# %% [markdown]
# ## 1 · Computational graphs and the chain rule
#
# Write a computation as a graph: leaves are inputs, every other node applies one simple
# operation to its children. For $L = (a b + c)\,d$:
#
# $$e = a b, \qquad f = e + c, \qquad L = f d.$$
#
# Each node knows its **local derivative**: $\partial e / \partial a = b$,
# $\partial f / \partial e = 1$, $\partial L / \partial f = d$. The **chain rule** multiplies
# local derivatives along the path from the output back to a leaf:
#
# $$\frac{\partial L}{\partial a} = \frac{\partial L}{\partial f}\,
# \frac{\partial f}{\partial e}\,\frac{\partial e}{\partial a} = d \cdot 1 \cdot b.$$
#
# Backpropagation does this for every node at once, walking the graph backwards from the
# output: each node receives $\partial L / \partial \text{node}$ (its *upstream* gradient)
# and passes upstream × local derivative to each child. Here it is by hand, with numbers:

# %%
a, b, c, d = 2.0, -3.0, 10.0, -2.0
e = a * b
f = e + c
L = f * d
dL_dL = 1.0
dL_df = dL_dL * d
dL_dd = dL_dL * f
dL_de = dL_df * 1.0
dL_dc = dL_df * 1.0
dL_da = dL_de * b
dL_db = dL_de * a
print(f"L = {L}; dL/da = {dL_da}, dL/db = {dL_db}, dL/dc = {dL_dc}, dL/dd = {dL_dd}")

# %% [markdown]
# ### Exercise 1.1: a scalar node, `Value` (operators)
#
# A `Value` wraps one float (`.data`), remembers its children and the operation that made
# it, and holds `.grad`, the derivative of the final output with respect to it (0.0 until
# `backward()` runs). Each operator returns a new `Value` and gives it a `_backward`
# closure that adds the node's contribution to its children's `.grad`:
# `child.grad += local_derivative * out.grad`.
#
# **Add, do not assign**: a node used twice (as `a` in `a * a`) receives a gradient from
# each use, and the two must be summed. Children are kept in a tuple, not a set, so that
# the order of the sums is the same on every run.
#
# Write `__add__`, `__mul__` and `__pow__` (by an int or float exponent only).


# %% nbgrader={"grade": false, "grade_id": "value_core", "locked": false, "schema_version": 3, "solution": true}
class Value:
    """A scalar node of a computational graph, with its gradient."""

    def __init__(self, data, _children=(), _op=""):
        self.data = float(data)
        self.grad = 0.0
        self._backward = lambda: None  # adds this node's contribution to its children's grads
        self._prev = tuple(_children)
        self._op = _op

    def __repr__(self):
        return f"Value(data={self.data:.6g}, grad={self.grad:.6g})"

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        ### BEGIN SOLUTION
        out = Value(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out
        ### END SOLUTION

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        ### BEGIN SOLUTION
        out = Value(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out
        ### END SOLUTION

    def __pow__(self, exponent):
        assert isinstance(exponent, int | float), "only int or float exponents"
        ### BEGIN SOLUTION
        out = Value(self.data**exponent, (self,), f"**{exponent}")

        def _backward():
            self.grad += exponent * self.data ** (exponent - 1) * out.grad

        out._backward = _backward
        return out
        ### END SOLUTION


# %% [markdown]
# ### Exercise 1.2: the other operators
#
# Subtraction, negation and division need no new derivatives: write them with the three
# operators above (`a - b` is `a + (-b)`, `a / b` is `a * b**-1`). The *reflected* forms
# make `2 * v`, `1 - v` and `1 / v` work: Python calls `v.__rmul__(2)` when `int.__mul__`
# gives up. Mind the order of the operands in `__rsub__` and `__rtruediv__`.


# %% nbgrader={"grade": false, "grade_id": "value_more_ops", "locked": false, "schema_version": 3, "solution": true}
@add_to_class(Value)
def __neg__(self):  # -self
    ### BEGIN SOLUTION
    return self * -1
    ### END SOLUTION


@add_to_class(Value)
def __sub__(self, other):  # self - other
    ### BEGIN SOLUTION
    return self + (-other)
    ### END SOLUTION


@add_to_class(Value)
def __truediv__(self, other):  # self / other
    ### BEGIN SOLUTION
    other = other if isinstance(other, Value) else Value(other)
    return self * other**-1
    ### END SOLUTION


@add_to_class(Value)
def __radd__(self, other):  # other + self
    ### BEGIN SOLUTION
    return self + other
    ### END SOLUTION


@add_to_class(Value)
def __rsub__(self, other):  # other - self
    ### BEGIN SOLUTION
    return (-self) + other
    ### END SOLUTION


@add_to_class(Value)
def __rmul__(self, other):  # other * self
    ### BEGIN SOLUTION
    return self * other
    ### END SOLUTION


@add_to_class(Value)
def __rtruediv__(self, other):  # other / self
    ### BEGIN SOLUTION
    return self**-1 * other
    ### END SOLUTION


# %% [markdown]
# **Check it.** Every line should say `ok`; a `WRONG` line fails the cell (and Validate).

# %%
with check_it("Exercises 1.1 and 1.2"):
    x, y = Value(3.0), Value(-2.0)
    expect(
        {
            "x + y": (x + y).data == 1.0,
            "x * y": (x * y).data == -6.0,
            "x ** 2": (x**2).data == 9.0,
            "x / y": (x / y).data == -1.5,
            "1 - x": (1 - x).data == -2.0,
            "2 / y": (2 / y).data == -1.0,
            "3 * x": isinstance(3 * x, Value) and (3 * x).data == 9.0,
        }
    )


# %% [markdown]
# ### Exercise 1.3: functions
#
# Each function needs its forward value and its local derivative, best written with the
# forward value `t` you already computed: $\tanh' = 1 - t^2$, $\sigma' = s (1 - s)$,
# $\exp' = \exp$, $\log'(x) = 1 / x$, and ReLU's derivative is 1 where $x > 0$, else 0.
#
# Numerics first: `math.exp(-x)` overflows for $x < -709$, so compute the sigmoid of a
# negative $x$ as $e^{x} / (1 + e^{x})$, which never overflows.


# %% nbgrader={"grade": false, "grade_id": "value_functions_solution", "locked": false, "schema_version": 3, "solution": true}
@add_to_class(Value)
def exp(self):
    ### BEGIN SOLUTION
    out = Value(math.exp(self.data), (self,), "exp")

    def _backward():
        self.grad += out.data * out.grad

    out._backward = _backward
    return out
    ### END SOLUTION


@add_to_class(Value)
def log(self):
    ### BEGIN SOLUTION
    out = Value(math.log(self.data), (self,), "log")

    def _backward():
        self.grad += out.grad / self.data

    out._backward = _backward
    return out
    ### END SOLUTION


@add_to_class(Value)
def tanh(self):
    ### BEGIN SOLUTION
    out = Value(math.tanh(self.data), (self,), "tanh")

    def _backward():
        self.grad += (1.0 - out.data**2) * out.grad

    out._backward = _backward
    return out
    ### END SOLUTION


@add_to_class(Value)
def relu(self):
    ### BEGIN SOLUTION
    out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

    def _backward():
        self.grad += (1.0 if self.data > 0 else 0.0) * out.grad

    out._backward = _backward
    return out
    ### END SOLUTION


@add_to_class(Value)
def sigmoid(self):
    ### BEGIN SOLUTION
    if self.data >= 0:
        s = 1.0 / (1.0 + math.exp(-self.data))
    else:
        z = math.exp(self.data)
        s = z / (1.0 + z)
    out = Value(s, (self,), "sigmoid")

    def _backward():
        self.grad += s * (1.0 - s) * out.grad

    out._backward = _backward
    return out
    ### END SOLUTION


# %% [markdown]
# **Check it.** Forward values against `math`, including a sigmoid far in both tails
# (its value at -1000 is exactly 0.0: $e^{-1000}$ underflows).

# %%
with check_it("Exercise 1.3"):
    x = Value(0.5)
    expect(
        {
            "exp": math.isclose(x.exp().data, math.exp(0.5)),
            "log": math.isclose(x.log().data, math.log(0.5)),
            "tanh": math.isclose(x.tanh().data, math.tanh(0.5)),
            "relu": Value(-1.0).relu().data == 0.0 and x.relu().data == 0.5,
            "sigmoid": math.isclose(x.sigmoid().data, 1 / (1 + math.exp(-0.5))),
            "sigmoid(-1000) is exactly 0.0": Value(-1000.0).sigmoid().data == 0.0,
            "sigmoid(1000) is exactly 1.0": Value(1000.0).sigmoid().data == 1.0,
            "tanh(+-1000) is +-1.0": Value(1000.0).tanh().data
            == -Value(-1000.0).tanh().data
            == 1.0,
        }
    )
# exp(-1000) is below the smallest positive float64 (about 5e-324), so sigmoid(-1000) is
# exactly 0.0, not merely tiny; what matters is that it is computed without an error.
print("smallest positive float64:", 5e-324, " smallest normal:", np.finfo(np.float64).tiny)


# %% [markdown]
# ### Exercise 1.4: `backward()`: topological order and accumulation
#
# `out.backward()` sets `out.grad = 1.0` (the derivative of the output with respect to
# itself), then calls `_backward` of every node **after** every node that uses it has
# called its own: only then has the node received all of its upstream gradient. That order
# is a reverse *topological order* of the graph. Build it by a depth-first search that
# appends a node after all its children, visiting each node once:
#
# ```
# visit(node): if node not yet visited: mark it; visit each child; append node
# ```
#
# Then walk the list backwards. (Two classic bugs: calling `_backward` recursively, child by
# child, which runs a shared node before all its users have reported; and visiting a node
# twice, which adds its gradient twice.)


# %% nbgrader={"grade": false, "grade_id": "value_backward_solution", "locked": false, "schema_version": 3, "solution": true}
@add_to_class(Value)
def backward(self):
    """Fill in .grad of every node this one depends on, seeding this node with 1.0."""
    ### BEGIN SOLUTION
    order, visited = [], set()

    def visit(node):
        if node not in visited:
            visited.add(node)
            for child in node._prev:
                visit(child)
            order.append(node)

    visit(self)
    self.grad = 1.0
    for node in reversed(order):
        node._backward()
    ### END SOLUTION


# %% [markdown]
# **Check it.** $f = a b + b^2 + \tanh(a)$ uses `b` twice, so $\partial f/\partial b = a + 2b$
# only if both uses are added; $\partial f / \partial a = b + 1 - \tanh^2 a$.

# %%
with check_it("Exercise 1.4"):
    a, b = Value(0.7), Value(-1.3)
    f = a * b + b**2 + a.tanh()
    f.backward()
    expected_a, expected_b = b.data + 1 - math.tanh(a.data) ** 2, a.data + 2 * b.data
    print(f"df/da = {a.grad:.6f}, expected {expected_a:.6f}")
    print(f"df/db = {b.grad:.6f}, expected {expected_b:.6f}")
    expect(
        {
            "df/da": math.isclose(a.grad, expected_a, rel_tol=1e-9),
            "df/db (b is used twice: both uses added)": math.isclose(
                b.grad, expected_b, rel_tol=1e-9
            ),
        }
    )


# %% [markdown]
# ### Hidden checks of the engine (11 points)
#
# Each check builds expressions on inputs drawn by the grader, calls `backward()`, and
# compares forward values and gradients with the reference engine; it also compares your
# gradients with centred differences of *your own* forward pass.

# %% nbgrader={"grade": true, "grade_id": "value_ops", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): + - * / ** and unary minus, with plain numbers on either side:
# forward values, gradients, result types.
### BEGIN HIDDEN TESTS
from course.grading import check

check("value_ops", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "value_functions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): exp, log, tanh, relu and sigmoid at negative and positive
# inputs: forward values and local derivatives.
### BEGIN HIDDEN TESTS
from course.grading import check

check("value_functions", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "value_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): backward() through composite expressions (a neuron, a
# logistic loss, micrograd's test expressions), against reference and numerical gradients.
### BEGIN HIDDEN TESTS
from course.grading import check

check("value_backward", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "value_accumulation", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): nodes reused in diamonds and chains (accumulation and reverse
# topological order), the output seeded with 1.0, nodes outside the graph untouched.
### BEGIN HIDDEN TESTS
from course.grading import check

check("value_accumulation", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · Numerical gradients: the instrument
#
# An analytic gradient is only as good as the check that confirms it. The centred
# difference
#
# $$\frac{\partial f}{\partial x_i} \approx \frac{f(x + h e_i) - f(x - h e_i)}{2h}$$
#
# has truncation error $O(h^2)$ (the one-sided difference has $O(h)$). Compare two
# gradients with the **relative error**
# $\max_i |a_i - b_i| / \max(10^{-8}, |a_i| + |b_i|)$: in float64, $10^{-7}$ or less is
# a pass, $10^{-2}$ or more is a bug.
#
# ### Exercise 2.1: `eval_numerical_gradient(f, x, h=1e-5)`
#
# `f` maps an array to a scalar. Nudge one element of `x` **in place** at a time, evaluate
# `f`, and put the element back **exactly** (save the old value and assign it back:
# `x[i] += h; x[i] -= h` does not always give the old value back in floating point).
# Callers often pass an `f` that ignores its argument and reads `x` from outside, so
# nudging `x` itself, not a copy, is what makes it work. `np.ndindex(x.shape)` walks every
# index of an array of any shape.


# %% nbgrader={"grade": false, "grade_id": "eval_numerical_gradient_solution", "locked": false, "schema_version": 3, "solution": true}
def eval_numerical_gradient(f, x, h=1e-5):
    """Centred-difference gradient of a scalar function f at x.

    f: callable, array shaped like x -> float.
    x: float array of any shape; modified during the call and restored exactly.
    Returns grad, a float array shaped like x.
    """
    ### BEGIN SOLUTION
    grad = np.zeros(x.shape, dtype=np.float64)
    for ix in np.ndindex(x.shape):
        old = x[ix]
        x[ix] = old + h
        f_plus = f(x)
        x[ix] = old - h
        f_minus = f(x)
        x[ix] = old
        grad[ix] = (f_plus - f_minus) / (2 * h)
    return grad
    ### END SOLUTION


# %% [markdown]
# **Check it.** For $f(x) = \sum x^2$ the gradient is $2x$; expect a relative error
# around $10^{-10}$ and `x` unchanged.

# %%
with check_it("Exercise 2.1"):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3))
    x_before = x.copy()
    grad = eval_numerical_gradient(lambda x: np.sum(x**2), x)
    print("relative error:", rel_error(grad, 2 * x))
    expect(
        {
            "relative error below 1e-7": rel_error(grad, 2 * x) < 1e-7,
            "x restored exactly": np.array_equal(x, x_before),
        }
    )


# %% nbgrader={"grade": true, "grade_id": "eval_numerical_gradient", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): gradients of hidden scalar functions of 2-D and 3-D arrays,
# with the default h and with h = 1e-2; x restored exactly.
### BEGIN HIDDEN TESTS
from course.grading import check

check("eval_numerical_gradient", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2.2: `eval_numerical_gradient_array(f, x, df, h=1e-5)`
#
# Layers map arrays to arrays. Given the upstream gradient `df` (shaped like `f(x)`), the
# gradient with respect to `x` is that of the scalar $\sum f(x) \odot df$:
#
# $$\text{grad}_i \approx \sum \frac{(f(x + h e_i) - f(x - h e_i)) \odot df}{2h}.$$
#
# Careful: `f` may return a view of `x` (`lambda x: x` does), so keep a **copy** of
# `f(x + h e_i)` before you nudge `x` again.


# %% nbgrader={"grade": false, "grade_id": "eval_numerical_gradient_array_solution", "locked": false, "schema_version": 3, "solution": true}
def eval_numerical_gradient_array(f, x, df, h=1e-5):
    """Centred-difference gradient of sum(f(x) * df) with respect to x.

    f: callable, array shaped like x -> array shaped like df.
    x: float array of any shape; modified during the call and restored exactly.
    df: upstream gradient, shaped like f(x).
    Returns grad, a float array shaped like x.
    """
    ### BEGIN SOLUTION
    grad = np.zeros(x.shape, dtype=np.float64)
    for ix in np.ndindex(x.shape):
        old = x[ix]
        x[ix] = old + h
        f_plus = np.array(f(x), copy=True)
        x[ix] = old - h
        f_minus = np.array(f(x), copy=True)
        x[ix] = old
        grad[ix] = np.sum((f_plus - f_minus) * df) / (2 * h)
    return grad
    ### END SOLUTION


# %% [markdown]
# **Check it.** For $f(x) = x W$ the gradient of $\sum f(x) \odot df$ is $df\,W^\top$.

# %%
with check_it("Exercise 2.2"):
    x = rng.standard_normal((5, 4))
    W = rng.standard_normal((4, 3))
    df = rng.standard_normal((5, 3))
    x_before = x.copy()
    grad = eval_numerical_gradient_array(lambda x: x @ W, x, df)
    print("relative error:", rel_error(grad, df @ W.T))
    expect(
        {
            "relative error below 1e-7": rel_error(grad, df @ W.T) < 1e-7,
            "x restored exactly": np.array_equal(x, x_before),
        }
    )


# %% nbgrader={"grade": true, "grade_id": "eval_numerical_gradient_array", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): gradients of hidden array-valued functions against random
# upstream gradients, including an f that returns a view of x; x restored exactly.
### BEGIN HIDDEN TESTS
from course.grading import check

check("eval_numerical_gradient_array", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Why float64, and why h = 1e-5
#
# Two errors pull in opposite directions. Truncation error falls with $h$ (as $h^2$ for
# centred differences). Rounding error grows as $h$ shrinks: $f(x+h) - f(x-h)$ subtracts two
# nearly equal numbers, each carrying a rounding error near machine epsilon $\epsilon$
# times $|f|$, and dividing by $2h$ amplifies it to about $\epsilon |f| / h$. The total is
# smallest near $h \approx \epsilon^{1/3}$: about $10^{-5}$ in float64
# ($\epsilon \approx 2 \cdot 10^{-16}$), about $5 \cdot 10^{-3}$ in float32
# ($\epsilon \approx 10^{-7}$), where the best relative error is only about $10^{-5}$:
# a correct gradient would *fail* a $10^{-7}$ check. Measure it with your checker:


# %%
def error_at(h, dtype):
    """Relative error of your numerical gradient of sum(tanh(x) * w) at one x, one h."""
    x = np.linspace(-1.5, 1.5, 6).astype(dtype)
    w = np.linspace(0.5, 2.0, 6).astype(dtype)
    numeric = eval_numerical_gradient(lambda x: np.sum(np.tanh(x) * w), x, h=dtype(h))
    exact = w.astype(np.float64) * (1 - np.tanh(x.astype(np.float64)) ** 2)
    return rel_error(numeric, exact)


hs = np.logspace(-12, 0, 25)
errors = {
    str(np.dtype(t)): np.array([error_at(h, t) for h in hs]) for t in (np.float64, np.float32)
}
error_against_step(hs, errors)
plt.show()
for name, errs in errors.items():
    print(
        f"{name}: best relative error {errs.min():.1e} at h = {hs[errs.argmin()]:.0e}; "
        f"at h = 1e-5: {errs[np.argmin(abs(hs - 1e-5))]:.1e}"
    )

# %% [markdown]
# Drag the slider to feel the trade-off: the same correct gradient passes or fails the
# check depending on $h$ and the precision of the arithmetic.

# %%
import ipywidgets as widgets


def explore_step(log10_h=-5.0, dtype="float64"):
    h = 10.0**log10_h
    err = error_at(h, np.dtype(dtype).type)
    verdict = "passes" if err < 1e-7 else "fails"
    print(f"h = {h:.1e}, {dtype}: relative error {err:.1e}, the 1e-7 check {verdict}")


_ = widgets.interact(
    explore_step,
    log10_h=widgets.FloatSlider(
        value=-5,
        min=-12,
        max=0,
        step=0.5,
        description="log10(h)",
        style={"description_width": "initial"},
    ),
    dtype=widgets.Dropdown(options=["float64", "float32"], description="precision"),
)

# %% [markdown]
# ### Kinks
#
# ReLU has no derivative at 0. If $|x| < h$, the centred difference straddles the kink and
# averages the two slopes: the numerical gradient of `relu` at $x = 10^{-7}$ is about 0.5,
# while backprop says 1. A gradient check of a ReLU network can fail although the code is
# right; check at points away from kinks, or on few data points, where crossing one is rare.

# %%
x = np.array([1e-7, 0.5, -0.5])
numeric = eval_numerical_gradient(lambda x: np.sum(np.maximum(x, 0)), x)
print("numerical:", numeric, " analytic:", (x > 0).astype(float))
print("relative error:", rel_error(numeric, (x > 0).astype(float)))

# %% [markdown]
# ## 3 · Backprop through a vectorised expression
#
# The same chain rule, one array at a time. For a batch $X$ (N, D):
#
# $$z = X W_1 + b_1, \quad h = \tanh z, \quad s = h W_2 + b_2, \quad
# L = \frac{1}{2N} \sum (s - Y)^2.$$
#
# Derive each gradient from the one after it, and let shapes guide you: a gradient has the
# shape of its variable, so `dW2` (H, M) can only be `h.T @ ds`. A bias added to every row
# gets the sum of the rows' gradients. Return every intermediate gradient, so that each is
# checked on its own: a table per variable pins a bug to the line that made it.


# %% nbgrader={"grade": false, "grade_id": "backprop_by_hand", "locked": false, "schema_version": 3, "solution": true}
def backprop_by_hand(X, W1, b1, W2, b2, Y):
    """Forward and backward pass of the two-layer regression above.

    X: (N, D), W1: (D, H), b1: (H,), W2: (H, M), b2: (M,), Y: (N, M).
    Returns (loss, grads): grads maps "s", "h", "z", "W2", "b2", "W1", "b1", "X" to the
    gradient of the loss with respect to each, shaped like it.
    """
    ### BEGIN SOLUTION
    N = X.shape[0]
    z = X @ W1 + b1
    h = np.tanh(z)
    s = h @ W2 + b2
    loss = 0.5 * np.sum((s - Y) ** 2) / N
    ds = (s - Y) / N
    dW2 = h.T @ ds
    db2 = ds.sum(axis=0)
    dh = ds @ W2.T
    dz = (1 - h**2) * dh
    dW1 = X.T @ dz
    db1 = dz.sum(axis=0)
    dX = dz @ W1.T
    grads = {"s": ds, "h": dh, "z": dz, "W2": dW2, "b2": db2, "W1": dW1, "b1": db1, "X": dX}
    return loss, grads
    ### END SOLUTION


# %% [markdown]
# **Check it.** Each gradient against a numerical gradient of the loss computed from that
# variable onwards. Shapes differ on purpose (N=5, D=4, H=3, M=2) so that a missing
# transpose shows. Every row should be `close`.

# %%
with check_it("Part 3, backprop_by_hand"):
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    W1, b1 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    W2, b2 = rng.standard_normal((3, 2)), rng.standard_normal(2)

    z = X @ W1 + b1
    h = np.tanh(z)
    s = h @ W2 + b2

    def loss_from_s(s):
        return 0.5 * np.sum((s - Y) ** 2) / len(Y)

    def loss_from_h(h):
        return loss_from_s(h @ W2 + b2)

    def loss_from_z(z):
        return loss_from_h(np.tanh(z))

    tails = {
        "s": (loss_from_s, s),
        "h": (loss_from_h, h),
        "z": (loss_from_z, z),
        "W2": (lambda W: loss_from_s(h @ W + b2), W2),
        "b2": (lambda b: loss_from_s(h @ W2 + b), b2),
        "W1": (lambda W: loss_from_z(X @ W + b1), W1),
        "b1": (lambda b: loss_from_z(X @ W1 + b), b1),
        "X": (lambda x: loss_from_z(x @ W1 + b1), X),
    }
    numeric = {
        name: eval_numerical_gradient(tail, value.copy()) for name, (tail, value) in tails.items()
    }
    loss, grads = backprop_by_hand(X, W1, b1, W2, b2, Y)
    rows = compare_table(grads, numeric)
    expect({f"d{row['name']} close": row["close"] for row in rows})


# %% nbgrader={"grade": true, "grade_id": "by_hand_gradients", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): the loss and every intermediate gradient, each on its own, on
# hidden inputs with N, D, H, M all different and with square W1 and W2.
### BEGIN HIDDEN TESTS
from course.grading import check

check("by_hand_gradients", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Softmax cross-entropy, by hand
#
# The loss every classifier in this course ends with, one step at a time, for scores
# $S$ (N, C) and labels $y$:
#
# $$m_i = \max_k S_{ik}, \quad \text{shifted} = S - m, \quad \text{exp} = e^\text{shifted},
# \quad \text{sum}_i = \textstyle\sum_k \text{exp}_{ik}, \quad
# \text{log\_sum} = \log \text{sum},$$
# $$\text{log\_probs} = \text{shifted} - \text{log\_sum}, \qquad
# L = -\frac{1}{N} \sum_i \text{log\_probs}_{i, y_i}.$$
#
# Backward, from the end: the **index** step sends $-1/N$ to each $(i, y_i)$ and 0
# elsewhere. `log_sum` was subtracted from every entry of its row, so it collects minus
# that row's sum, $1/N$. The **log** divides by `sum`; the **sum** copies its gradient to
# every entry of the row; the **exp** multiplies by `exp`. `shifted` gets two
# contributions, directly and through `exp`:
# $$d\,\text{shifted} = d\,\text{log\_probs} + \text{exp} \cdot \frac{1}{N\,\text{sum}}
# = \frac{p - \text{one\_hot}(y)}{N}.$$
# **The shift has zero gradient**: $m_i$ was subtracted from every entry of row $i$, so
# $dm_i = -\sum_k d\,\text{shifted}_{ik} = -\frac{1}{N}\left(\sum_k p_{ik} - 1\right) = 0$.
# Shifting a row by any constant changes no probability, which is why the shift is free
# (and why, in exact arithmetic, `np.max`'s lack of a smooth derivative never matters).
#
# Return the loss and a dict of the gradients of `log_probs`, `log_sum`, `sum`, `exp`,
# `shifted`, `max` and `S`, each shaped like its variable (`max`, `sum` and `log_sum` are
# (N, 1), kept with `keepdims=True`).


# %% nbgrader={"grade": false, "grade_id": "softmax_ce_by_hand_solution", "locked": false, "schema_version": 3, "solution": true}
def softmax_ce_by_hand(S, y):
    """Mean softmax cross-entropy of scores S (N, C) for labels y (N,), and by-hand
    gradients of every intermediate: keys "log_probs", "log_sum", "sum", "exp",
    "shifted", "max", "S". Returns (loss, grads)."""
    ### BEGIN SOLUTION
    N = S.shape[0]
    rows = np.arange(N)
    m = S.max(axis=1, keepdims=True)
    shifted = S - m
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)
    log_sum = np.log(total)
    log_probs = shifted - log_sum
    loss = -log_probs[rows, y].mean()
    dlog_probs = np.zeros_like(S)
    dlog_probs[rows, y] = -1.0 / N
    dlog_sum = -dlog_probs.sum(axis=1, keepdims=True)
    dsum = dlog_sum / total
    dexp = np.broadcast_to(dsum, S.shape).copy()
    dshifted = dlog_probs + e * dexp
    dmax = -dshifted.sum(axis=1, keepdims=True)
    dS = dshifted.copy()
    dS[rows, S.argmax(axis=1)] += dmax[:, 0]
    grads = {
        "log_probs": dlog_probs,
        "log_sum": dlog_sum,
        "sum": dsum,
        "exp": dexp,
        "shifted": dshifted,
        "max": dmax,
        "S": dS,
    }
    return loss, grads
    ### END SOLUTION


# %% [markdown]
# **Check it.** Each gradient against a numerical gradient of the loss from that variable
# onwards; `dS` against $(p - \text{one\_hot}(y))/N$; and the size of `dmax`, zero up to
# rounding.

# %%
with check_it("Part 3, softmax_ce_by_hand"):
    S_check = np.random.default_rng(4).standard_normal((6, 4))
    y_check = np.array([0, 3, 1, 1, 2, 0])
    rows_check = np.arange(len(y_check))
    m_check = S_check.max(axis=1, keepdims=True)
    sh_check = S_check - m_check
    e_check = np.exp(sh_check)
    t_check = e_check.sum(axis=1, keepdims=True)

    def ce_from_log_probs(lp):
        return -lp[rows_check, y_check].mean()

    def ce_from_shifted(sh):
        return ce_from_log_probs(sh - np.log(np.exp(sh).sum(1, keepdims=True)))

    ce_tails = {
        "log_probs": (ce_from_log_probs, sh_check - np.log(t_check)),
        "log_sum": (lambda ls: ce_from_log_probs(sh_check - ls), np.log(t_check)),
        "sum": (lambda t: ce_from_log_probs(sh_check - np.log(t)), t_check),
        "exp": (lambda e: ce_from_log_probs(sh_check - np.log(e.sum(1, keepdims=True))), e_check),
        "shifted": (ce_from_shifted, sh_check),
        "S": (ce_from_shifted, S_check),
    }
    ce_numeric = {k: eval_numerical_gradient(f, v.copy()) for k, (f, v) in ce_tails.items()}
    ce_loss, ce_grads = softmax_ce_by_hand(S_check, y_check)
    ce_rows = compare_table({k: ce_grads[k] for k in ce_tails}, ce_numeric)
    p_check = e_check / t_check
    one_hot = np.eye(4)[y_check]
    dS_error = rel_error(ce_grads["S"], (p_check - one_hot) / 6)
    largest_dmax = np.abs(ce_grads["max"]).max()
    print(f"dS against (p - one_hot(y)) / N: {dS_error:.1e}")
    print(f"largest |dmax|: {largest_dmax:.1e} (zero up to rounding)")
    expect(
        {
            **{f"d{row['name']} close": row["close"] for row in ce_rows},
            "dS is (p - one_hot(y)) / N": dS_error < 1e-7,
            "dmax is zero up to rounding": largest_dmax < 1e-12,
        }
    )

# %% nbgrader={"grade": true, "grade_id": "softmax_by_hand", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): the loss and each intermediate gradient on hidden scores, at
# ordinary scores and near 1e3, and the size of the max's gradient.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax_by_hand", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · A tiny MLP on your engine
#
# `course.mlp.MLP` is micrograd's multilayer perceptron: tanh hidden layers and one linear
# output score, built entirely from `Value` operations, so every gradient it uses comes
# from your engine. It trains on two interleaved moons with labels $\pm 1$ and the margin
# loss $\text{relu}(1 - y\,\text{score})$, averaged, plus a little L2. Here is all of it:

# %%
show_source(MLP)

# %%
X, y = two_moons(50, noise=0.1, seed=1)
model = MLP(Value, (2, 8, 1), seed=0)
losses, accuracies = train(model, X, y, steps=80, learning_rate=2.0, progress=tqdm)
print(f"final loss {losses[-1]:.3f}, training accuracy {accuracies[-1]:.0%}")

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
loss_curve(losses, title="Margin loss: a plateau, then a fall (jolts: a large step)", ax=ax1)
decision_boundary(model.predict, X, y, title="Decision boundary: the moons, separated", ax=ax2)
plt.show()

# %% nbgrader={"grade": true, "grade_id": "mlp_training", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): the MLP above, on hidden data and weights, trained on your
# Value; its loss curve must stay within 1e-6 (relative) of the reference at every step.
### BEGIN HIDDEN TESTS
from course.grading import check

check("mlp_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## The leak, shown: one line of bookkeeping
#
# Training resets every `.grad` to 0 before `backward()`, because your `_backward`
# closures *add*. Forget that one line and each step's gradient also carries every earlier
# step's: a "momentum" nobody asked for. Nothing crashes; the loss curve just goes
# somewhere else.

# %%
forgetful = MLP(Value, (2, 8, 1), seed=0)  # the same start as `model` above
forgetful_losses, _ = train(
    forgetful, X, y, steps=80, learning_rate=2.0, zero_grad=False, progress=tqdm
)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(losses, label="grads reset each step")
ax.plot(forgetful_losses, label="grads never reset")
ax.set(
    xlabel="step",
    ylabel="margin loss",
    title="Forgetting to zero the gradients changes the whole curve",
)
ax.legend()
plt.show()

# %% [markdown]
# ## What to take away
#
# - A gradient is right only if the bookkeeping is: every use of a node adds to its
#   gradient, every node runs after all its users, the output is seeded with 1.
# - A gradient check is itself numerics: centred differences, float64, $h \approx 10^{-5}$,
#   relative error, and points away from kinks.
# - From assignment 02 on, `course.gradcheck.gradient_error` runs such a check for you: it
#   says how far a gradient is from centred differences (it does not hand out the
#   numerical gradient itself: that is graded here).
