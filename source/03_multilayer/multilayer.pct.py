# %% [markdown]
# # 03 · Multilayer networks
#
# A linear classifier draws one template per class. Put a nonlinearity between two linear
# maps and the network can carve the input space into any shape it needs. This
# assignment builds that network from **layers**, each a pair of functions:
#
# - `X_forward(inputs) -> (out, cache)`: compute the output, keep what the backward pass
#   will need;
# - `X_backward(dout, cache) -> grads`: given the gradient of the loss with respect to the
#   output, return the gradients with respect to the inputs.
#
# Layers compose: a network's backward pass is its layers' backward passes in reverse.
#
# **The leak shown here:** the initial weight scale and the step size. The same network,
# the same data, the same loss: started a little too small it barely moves, stepped a
# little too far its ReLUs die and never come back.
#
# | Part | You write | Points |
# |---|---|---|
# | 1 · Layers | `affine_forward`, `affine_backward`, `relu_forward`, `relu_backward` | 7 |
# | 2 · Losses on scores | `softmax_loss`, `svm_loss` | 4 |
# | 3 · A two-layer network | `TwoLayerNet` | 4 |
# | 4 · Training | `sgd`, and the network's loss curve | 4 |
# | 5 · What the start costs | two predictions | 2 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import digits, spirals
from course.gradcheck import gradient_error, rel_error
from course.notebook import check_it, explore_plot, show_source
from course.plots import decision_regions, loss_curve
from course.training import accuracy, fit

# %% [markdown]
# ## 1 · Layers
#
# ### Exercise 1.1: the affine layer, forward
#
# An affine (fully connected) layer maps each example to $x W + b$. Inputs often arrive
# with more than two dimensions (a batch of images is (N, 8, 8), later (N, C, H, W)):
# flatten each example into one row first, so that x becomes (N, D) with D the product
# of the other dimensions, then apply the map. The cache keeps the inputs.


# %% nbgrader={"grade": false, "grade_id": "affine_forward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def affine_forward(x, w, b):
    """x: (N, d_1, ..., d_k); w: (D, M) with D = d_1 * ... * d_k; b: (M,).

    Returns (out, cache): out (N, M), and whatever affine_backward needs.
    """
    ### BEGIN SOLUTION
    out = x.reshape(x.shape[0], -1) @ w + b
    cache = (x, w, b)
    ### END SOLUTION
    return out, cache


# %% [markdown]
# **Check it** on numbers small enough to work out by hand: two examples of shape (2, 2),
# so D = 4, and M = 3 outputs.

# %%
with check_it("Exercise 1.1"):
    x = np.arange(8.0).reshape(2, 2, 2)
    w = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 2.0]])
    b = np.array([0.5, -0.5, 0.0])
    out, _ = affine_forward(x, w, b)
    print(out)
    expected = np.array([[2.5, 2.5, 8.0], [10.5, 10.5, 16.0]])
    assert out.shape == (2, 3), f"out has shape {out.shape}, not (2, 3)"
    assert rel_error(out, expected) < 1e-12, "affine_forward's out is wrong"


# %% nbgrader={"grade": true, "grade_id": "affine_forward", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): the output on hidden 2-D and 4-D inputs (N, D and M different).
### BEGIN HIDDEN TESTS
from course.grading import check

check("affine_forward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.2: the affine layer, backward
#
# With $\text{out} = \hat{x} W + b$ ($\hat{x}$ the flattened x) and upstream gradient
# `dout` (N, M): $d\hat{x} = \text{dout}\, W^\top$ (reshaped back to x's shape),
# $dW = \hat{x}^\top \text{dout}$, $db = \sum_n \text{dout}_n$. Let shapes guide you: each
# gradient has the shape of its variable.


# %% nbgrader={"grade": false, "grade_id": "affine_backward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def affine_backward(dout, cache):
    """dout: (N, M); cache: from affine_forward. Returns (dx, dw, db), shaped like x, w, b."""
    ### BEGIN SOLUTION
    x, w, b = cache
    dx = (dout @ w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T @ dout
    db = dout.sum(axis=0)
    ### END SOLUTION
    return dx, dw, db


# %% [markdown]
# **Check it** against centred differences, with N, D and M all different and a 3-D x,
# so that a missing reshape or transpose shows.

# %%
with check_it("Exercise 1.2"):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 2, 3))
    w, b = rng.standard_normal((6, 5)), rng.standard_normal(5)
    dout = rng.standard_normal((4, 5))
    out, cache = affine_forward(x, w, b)
    dx, dw, db = affine_backward(dout, cache)
    inputs = {"x": x, "w": w, "b": b}
    for name, value, grad in (("dx", x, dx), ("dw", w, dw), ("db", b, db)):

        def f(v, name=name):
            return affine_forward(**{**inputs, name[1:]: v})[0]

        error = gradient_error(f, value.copy(), grad, dout)
        print(f"{name}: relative error {error:.1e}")
        assert grad.shape == value.shape, f"{name} has shape {grad.shape}"
        assert error < 1e-7, f"{name} is wrong"


# %% nbgrader={"grade": true, "grade_id": "affine_backward", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): dx, dw and db on hidden inputs, one of them 4-D, each against
# the reference and against centred differences of your own affine_forward.
### BEGIN HIDDEN TESTS
from course.grading import check

check("affine_backward", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 1.3: ReLU, forward and backward
#
# $\text{relu}(x) = \max(0, x)$, elementwise, for x of any shape. Its local derivative is
# 1 where $x > 0$ and 0 elsewhere, so the backward pass lets the upstream gradient through
# where the input was positive and blocks it elsewhere. A unit whose input is negative for
# every example passes no gradient at all: it is **dead**, and gradient descent cannot
# revive it. Keep that in mind for part 5.


# %% nbgrader={"grade": false, "grade_id": "relu_forward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def relu_forward(x):
    """x: any shape. Returns (out, cache), out shaped like x."""
    ### BEGIN SOLUTION
    out = np.maximum(0.0, x)
    cache = x
    ### END SOLUTION
    return out, cache


# %% nbgrader={"grade": false, "grade_id": "relu_backward_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def relu_backward(dout, cache):
    """dout: shaped like relu_forward's output. Returns dx, shaped like x."""
    ### BEGIN SOLUTION
    x = cache
    dx = dout * (x > 0)
    ### END SOLUTION
    return dx


# %% [markdown]
# **Check it** against centred differences, at inputs at least 0.1 away from ReLU's kink
# at 0 (where centred differences average the two slopes; see 01).

# %%
with check_it("Exercise 1.3"):
    x = rng.uniform(0.1, 1.0, (3, 4, 2)) * rng.choice([-1.0, 1.0], (3, 4, 2))
    dout = rng.standard_normal(x.shape)
    out, cache = relu_forward(x)
    dx = relu_backward(dout, cache)
    error = gradient_error(lambda v: relu_forward(v)[0], x.copy(), dx, dout)
    print(f"relu: {np.mean(out == 0):.0%} of outputs are 0")
    print(f"relative error of dx: {error:.1e}")
    assert out.shape == x.shape, "relu_forward changes the shape"
    assert error < 1e-9, "relu_backward's dx is wrong"


# %% nbgrader={"grade": true, "grade_id": "relu", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): relu_forward and relu_backward on hidden 2-D and 3-D inputs.
### BEGIN HIDDEN TESTS
from course.grading import check

check("relu", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 2 · Losses on scores
#
# Assignment 02 computed the scores inside the loss ($X W$). From now on a loss takes the
# scores `x` (N, C) directly and returns `(loss, dx)`: the last layer's output is its input,
# and `dx` starts the backward pass. No regularisation here: the network adds its own.
#
# ### Exercise 2.1: `softmax_loss` and `svm_loss`
#
# The same mathematics as in 02, vectorised, and the same numerics: `softmax_loss` must stay
# finite and accurate for scores of magnitude 1000 (log-sum-exp, each row shifted by its own
# maximum).


# %% nbgrader={"grade": false, "grade_id": "softmax_loss_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def softmax_loss(x, y):
    """x: (N, C) scores; y: (N,) labels in [0, C).

    Returns (loss, dx): the mean cross-entropy, and its gradient with respect to x.
    """
    ### BEGIN SOLUTION
    num_train = x.shape[0]
    rows = np.arange(num_train)
    shifted = x - x.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[rows, y].mean()
    dx = np.exp(log_probs)
    dx[rows, y] -= 1.0
    dx /= num_train
    ### END SOLUTION
    return loss, dx


# %% nbgrader={"grade": false, "grade_id": "svm_loss_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def svm_loss(x, y):
    """x: (N, C) scores; y: (N,) labels in [0, C).

    Returns (loss, dx): the mean multiclass hinge loss (margin 1), and its gradient.
    """
    ### BEGIN SOLUTION
    num_train = x.shape[0]
    rows = np.arange(num_train)
    margins = np.maximum(0.0, x - x[rows, y][:, None] + 1.0)
    margins[rows, y] = 0.0
    loss = margins.sum() / num_train
    dx = (margins > 0).astype(x.dtype)
    dx[rows, y] = -dx.sum(axis=1)
    dx /= num_train
    ### END SOLUTION
    return loss, dx


# %% [markdown]
# **Check it.** At scores near 0 the losses are about $\log C$ and $C - 1$; gradients
# against centred differences; and the large-score example from 02: scores
# $(1000, 0, -1000)$, label 2, softmax loss 2000, gradient $(1, 0, -1)$.

# %%
with check_it("Exercise 2.1"):
    C = 10
    y = rng.integers(0, C, 50)
    print(
        f"softmax at scores near 0: {softmax_loss(1e-3 * rng.standard_normal((50, C)), y)[0]:.3f}"
        f" (log C = {np.log(C):.3f})"
    )
    print(
        f"SVM at scores near 0:     {svm_loss(1e-3 * rng.standard_normal((50, C)), y)[0]:.3f}"
        f" (C - 1 = {C - 1})"
    )

    scores, labels = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    for name, loss_fn in (("softmax_loss", softmax_loss), ("svm_loss", svm_loss)):
        _, dx = loss_fn(scores, labels)
        error = gradient_error(lambda s, f=loss_fn: f(s, labels)[0], scores.copy(), dx)
        print(f"{name}: relative error of dx {error:.1e}")
        assert error < 1e-7, f"{name}'s dx is wrong"

    loss, dx = softmax_loss(np.array([[1000.0, 0.0, -1000.0]]), np.array([2]))
    print(f"softmax_loss at scores of 1000: loss {float(loss)!r} (2000 is right), dx {dx}")
    assert abs(float(loss) - 2000.0) < 1e-9, "softmax_loss is wrong at scores of 1000"
    assert rel_error(dx, np.array([[1.0, 0.0, -1.0]])) < 1e-9, (
        "softmax_loss's dx is wrong at scores of 1000"
    )


# %% nbgrader={"grade": true, "grade_id": "softmax_loss", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): loss and dx on hidden scores, ordinary and near 1e3 (rows with
# very different ranges), and dx against centred differences of your own loss.
### BEGIN HIDDEN TESTS
from course.grading import check

check("softmax_loss", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "svm_loss", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): as for softmax_loss.
### BEGIN HIDDEN TESTS
from course.grading import check

check("svm_loss", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 3 · A two-layer network
#
# affine → ReLU → affine → softmax loss:
#
# $$h = \text{relu}(X W_1 + b_1), \qquad s = h W_2 + b_2, \qquad
# L = \text{softmax\_loss}(s, y) + \tfrac{1}{2} \lambda \left(\textstyle\sum W_1^2 +
# \sum W_2^2\right).$$
#
# The regulariser carries a $\tfrac12$ here (so its gradient is just $\lambda W$) and
# covers the weight matrices only: penalising biases buys nothing, since a bias does not
# multiply the input. Weights start from $\mathcal{N}(0, \sigma^2)$ with
# $\sigma$ = `weight_scale`, drawn with NumPy's global generator (seed it with
# `np.random.seed` for a repeatable start); biases start at 0.
#
# ### Exercise 3.1: `TwoLayerNet`
#
# `.params` maps `"W1"`, `"b1"`, `"W2"`, `"b2"` to arrays. `.loss(X)` returns the scores;
# `.loss(X, y)` returns the loss and a dictionary of gradients with the same keys. Use your
# layers: the forward pass is affine, relu, affine; the backward pass is their backward
# passes in reverse order, each fed the cache its forward made.


# %% nbgrader={"grade": false, "grade_id": "two_layer_net_solution", "locked": false, "schema_version": 3, "solution": true}
class TwoLayerNet:
    """affine - relu - affine - softmax, with L2 regularisation of the weight matrices."""

    def __init__(self, input_dim, hidden_dim, num_classes, weight_scale=1e-3, reg=0.0):
        self.reg = reg
        ### BEGIN SOLUTION
        self.params = {
            "W1": weight_scale * np.random.randn(input_dim, hidden_dim),
            "b1": np.zeros(hidden_dim),
            "W2": weight_scale * np.random.randn(hidden_dim, num_classes),
            "b2": np.zeros(num_classes),
        }
        ### END SOLUTION

    def loss(self, X, y=None):
        """X: (N, d_1, ..., d_k). Scores (N, C) if y is None, else (loss, grads)."""
        ### BEGIN SOLUTION
        W1, b1, W2, b2 = (self.params[k] for k in ("W1", "b1", "W2", "b2"))
        a, affine1_cache = affine_forward(X, W1, b1)
        hidden, relu_cache = relu_forward(a)
        scores, affine2_cache = affine_forward(hidden, W2, b2)
        if y is None:
            return scores
        loss, dscores = softmax_loss(scores, y)
        loss += 0.5 * self.reg * (np.sum(W1 * W1) + np.sum(W2 * W2))
        dhidden, dW2, db2 = affine_backward(dscores, affine2_cache)
        da = relu_backward(dhidden, relu_cache)
        _, dW1, db1 = affine_backward(da, affine1_cache)
        grads = {"W1": dW1 + self.reg * W1, "b1": db1, "W2": dW2 + self.reg * W2, "b2": db2}
        return loss, grads
        ### END SOLUTION


# %% [markdown]
# **Check it**, as a practitioner checks a new network before training it:
#
# 1. the loss at initialisation, with small weights, is about $\log C$;
# 2. regularisation raises it, by $\tfrac12 \lambda \sum W^2$;
# 3. every gradient agrees with centred differences, on a small network with all sizes
#    different (N=5, D=6, H=7, C=4).

# %%
with check_it("Exercise 3.1"):
    np.random.seed(0)
    data = digits()
    mean_image = data.X_train.mean(axis=0)
    X_train, X_val, X_test = (X - mean_image for X in (data.X_train, data.X_val, data.X_test))
    y_train, y_val, y_test = data.y_train, data.y_val, data.y_test

    net = TwoLayerNet(64, 50, 10, weight_scale=1e-3)
    loss0, _ = net.loss(X_train[:200], y_train[:200])
    print(f"loss at initialisation: {loss0:.4f} (log 10 = {np.log(10):.4f})")
    assert abs(loss0 - np.log(10)) < 0.05, "the loss at initialisation should be near log 10"
    for reg in (0.0, 1.0):
        np.random.seed(0)
        net = TwoLayerNet(64, 50, 10, weight_scale=0.1, reg=reg)
        print(
            f"weight scale 0.1, reg = {reg}: loss {net.loss(X_train[:200], y_train[:200])[0]:.4f}"
        )

    np.random.seed(1)
    X_small, y_small = np.random.randn(5, 6), np.random.randint(0, 4, 5)
    for reg in (0.0, 0.7):
        small = TwoLayerNet(6, 7, 4, weight_scale=0.5, reg=reg)
        small.params["b1"] = np.random.randn(7)  # non-zero biases, so that their gradients show
        _, grads = small.loss(X_small, y_small)
        for name in ("W1", "b1", "W2", "b2"):

            def f(v, name=name, net=small):
                saved = net.params[name]
                net.params[name] = v
                value = net.loss(X_small, y_small)[0]
                net.params[name] = saved
                return value

            error = gradient_error(f, small.params[name].copy(), grads[name])
            print(f"reg = {reg}: {name} relative error {error:.1e}")
            assert error < 1e-6, f"the gradient of {name} is wrong (reg = {reg})"


# %% nbgrader={"grade": true, "grade_id": "two_layer_net", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): parameter shapes and initial statistics (weights with standard
# deviation weight_scale, biases zero); on hidden weights and inputs, the scores, the loss
# and every gradient with and without regularisation, and the gradients against centred
# differences of your own loss.
### BEGIN HIDDEN TESTS
from course.grading import check

check("two_layer_net", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · Training
#
# ### Exercise 4.1: the update rule `sgd`
#
# Every update rule has the form `rule(w, dw, config) -> (next_w, config)`: `config` holds
# the rule's hyper-parameters and, for the rules of assignment 04, state carried from step
# to step. Fill in defaults with `config.setdefault`. Plain SGD steps against the gradient:
# $w \leftarrow w - \eta\, dw$, with $\eta$ = `config["learning_rate"]`, 1e-2 by default.


# %% nbgrader={"grade": false, "grade_id": "sgd_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def sgd(w, dw, config=None):
    """One step of stochastic gradient descent. Returns (next_w, config)."""
    if config is None:
        config = {}
    ### BEGIN SOLUTION
    config.setdefault("learning_rate", 1e-2)
    next_w = w - config["learning_rate"] * dw
    ### END SOLUTION
    return next_w, config


# %% nbgrader={"grade": true, "grade_id": "sgd", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Hidden check (1 point): several steps with the default and a given learning rate.
### BEGIN HIDDEN TESTS
from course.grading import check

check("sgd", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The training loop
#
# `course.training.fit` runs minibatch training: shuffle, step through the batches, update
# each parameter with the rule (each with its own `config`), and record the loss at every
# step and the accuracy after every epoch. A progress bar (tqdm) shows the epochs go by.

# %%
show_source(fit)

# %% [markdown]
# **Sanity check first: overfit a tiny batch.** A network with enough capacity must drive
# the loss on 20 examples to about zero. If it cannot, there is a bug, and no amount of
# data will hide it.

# %%
np.random.seed(0)
tiny = TwoLayerNet(64, 100, 10, weight_scale=0.1)
history = fit(
    tiny,
    sgd,
    X_train[:20],
    y_train[:20],
    epochs=200,
    batch_size=20,
    config={"learning_rate": 0.5},
)
print(
    f"tiny batch: loss {history['loss'][0]:.3f} -> {history['loss'][-1]:.4f}, "
    f"training accuracy {history['train_acc'][-1]:.0%}"
)
assert history["loss"][-1] < 0.01 and history["train_acc"][-1] == 1.0, (
    "Exercise 4.1: the tiny batch is not learned (check sgd, then TwoLayerNet)"
)

# %% [markdown]
# **Now the whole training set.** 30 epochs of batches of 100, learning rate 0.5, a
# little regularisation.

# %%
np.random.seed(0)
net = TwoLayerNet(64, 100, 10, weight_scale=0.1, reg=1e-3)
history = fit(
    net,
    sgd,
    X_train,
    y_train,
    X_val,
    y_val,
    epochs=30,
    batch_size=100,
    config={"learning_rate": 0.5},
    progress=tqdm,
)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
loss_curve(history["loss"], title="Minibatch loss: noisy, falling", ax=ax1)
ax2.plot(history["train_acc"], label="train")
ax2.plot(history["val_acc"], label="validation")
ax2.set(xlabel="epoch", ylabel="accuracy", title="Accuracy: the gap is overfitting")
ax2.legend()
plt.show()
test_accuracy = accuracy(net.loss(X_test), y_test)
print(f"validation accuracy {history['val_acc'][-1]:.3f}; test accuracy {test_accuracy:.3f}")
assert test_accuracy >= 0.95, "a correct network reaches 95% on the test digits"

# %% nbgrader={"grade": true, "grade_id": "two_layer_training", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): your TwoLayerNet with your sgd, from a fixed hidden start on
# hidden data, trained for a fixed number of full-batch steps: its loss curve must stay
# within 1e-6 (relative) of the reference at every step, and its final training accuracy
# must match.
### BEGIN HIDDEN TESTS
from course.grading import check

check("two_layer_training", globals())
### END HIDDEN TESTS

# %% [markdown]
# ## 5 · What the hidden layer buys, and what the start costs
#
# Three spiral arms wound around each other: no straight cut separates them, so a
# network with a single hidden unit (hardly more than linear) gets about half of the
# points right. A hidden layer of 100 ReLUs bends the boundary around the arms.

# %%
X_spiral, y_spiral = spirals(100, classes=3, seed=0)


def train_on_spirals(hidden_dim=100, learning_rate=1.0, weight_scale=0.1, steps=1000, seed=0):
    """Full-batch training on the spirals; returns the network and its history."""
    np.random.seed(seed)
    model = TwoLayerNet(2, hidden_dim, 3, weight_scale=weight_scale, reg=1e-3)
    hist = fit(
        model,
        sgd,
        X_spiral,
        y_spiral,
        epochs=steps,
        batch_size=len(X_spiral),
        config={"learning_rate": learning_rate},
    )
    return model, hist


linear_like, _ = train_on_spirals(hidden_dim=1)  # one hidden unit: barely more than linear
spiral_net, spiral_history = train_on_spirals()
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
for ax, model, title in (
    (axes[0], linear_like, "One hidden unit: straight cuts"),
    (axes[1], spiral_net, "100 hidden ReLUs: the arms separated"),
):
    acc = accuracy(model.loss(X_spiral), y_spiral)
    decision_regions(
        lambda P, m=model: np.argmax(m.loss(P), axis=1),
        X_spiral,
        y_spiral,
        title=f"{title} ({acc:.0%})",
        ax=ax,
    )
plt.show()

# %% [markdown]
# ### Predict, then measure (2 points)
#
# Two predictions to write down **before** running the experiments below, each as a
# function of the factor, so that the hidden check can ask it about factors you do not
# see (each answer accepted within 2%). Take a `TwoLayerNet` with small weights (scale
# $\sigma$ in both layers, biases 0) and divide $\sigma$ by a factor $a$, with the same
# draws otherwise:
#
# 1. `predicted_score_ratio(a)`: the scores at initialisation at $\sigma / a$, as a
#    fraction of the scores at $\sigma$ (their size, say their norm)?
# 2. `predicted_gradient_ratio(a)`: the gradient of $W_1$ at $\sigma / a$, as a fraction
#    of the gradient at $\sigma$?
#
# Measured next with your `TwoLayerNet` on the digits, $\sigma = 10^{-3}$ and $a = 10$.


# %% nbgrader={"grade": false, "grade_id": "predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_score_ratio(a):
    """|scores| at initialisation, weight scale sigma / a over sigma."""
    ### BEGIN SOLUTION
    return 1 / a**2
    ### END SOLUTION


def predicted_gradient_ratio(a):
    """|dW1| at initialisation, weight scale sigma / a over sigma."""
    ### BEGIN SOLUTION
    return 1 / a
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "multilayer_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within its band, for hidden factors.
### BEGIN HIDDEN TESTS
from course.grading import check

check("multilayer_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# Measured: the same draws (seeds 0, 1 and 2) at $\sigma = 10^{-3}$ and $10^{-4}$, on
# 200 training digits, with your network's scores and gradients:

# %%
shrinks = []
for seed in (0, 1, 2):
    measured = {}
    for scale in (1e-3, 1e-4):
        np.random.seed(seed)
        net = TwoLayerNet(64, 100, 10, weight_scale=scale)
        scores = net.loss(X_train[:200])
        _, grads = net.loss(X_train[:200], y_train[:200])
        measured[scale] = (np.linalg.norm(scores), np.linalg.norm(grads["W1"]))
    shrinks.append(np.array(measured[1e-4]) / np.array(measured[1e-3]))
shrinks = np.array(shrinks)
print(
    f"|scores| at 1e-4 / at 1e-3: {shrinks[:, 0].mean():.5f} ± {shrinks[:, 0].std():.5f}",
    f"(you predicted {predicted_score_ratio(10):.5f});",
    f"|dW1|: {shrinks[:, 1].mean():.4f} ± {shrinks[:, 1].std():.4f}",
    f"(you predicted {predicted_gradient_ratio(10):.4f})",
)

# %% [markdown]
# The gradient shrinks with the weights, and the scores shrink faster still: from a
# small start, each step is small, and it grows only as fast as the weights do. That is
# the slow start measured next.
#
# ### The leak: weight scale and step size
#
# A ReLU unit is **dead** when its input is negative for every example: it outputs 0, its
# gradient is 0, and no step of its own can bring it back: in the first layer, whose
# inputs are fixed data, it stays dead for good; in a later layer it can revive only if
# the layers below it change what it sees. Too large a learning rate throws units
# there in one step; too small a weight scale makes every signal, and every gradient,
# tiny. Same network, same data, same loss, same number of steps:


# %%
def dead_fraction(model, X):
    """The share of hidden units that output 0 for every row of X."""
    hidden = np.maximum(0.0, X @ model.params["W1"] + model.params["b1"])
    return float(np.mean(np.all(hidden == 0, axis=0)))


settings = {
    "weight scale 1e-3, lr 1": dict(weight_scale=1e-3, learning_rate=1.0),
    "weight scale 0.1, lr 1": dict(weight_scale=0.1, learning_rate=1.0),
    "weight scale 0.1, lr 30": dict(weight_scale=0.1, learning_rate=30.0),
}
fig, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
for label, kwargs in settings.items():
    model, hist = train_on_spirals(steps=300, **kwargs)
    dead = dead_fraction(model, X_spiral)
    ax.plot(hist["loss"], label=f"{label}: {dead:.0%} dead ReLUs")
ax.set(xlabel="step", ylabel="loss", yscale="log", title="Same network, different start and step")
ax.legend()
plt.show()

# %% [markdown]
# Explore it yourself: vary the hidden size, the learning rate and the weight scale, and
# watch the loss curve and the share of dead units.

# %%
import ipywidgets as widgets


def explore(hidden_dim=50, log10_learning_rate=0.0, log10_weight_scale=-1.0):
    model, hist = train_on_spirals(
        hidden_dim, 10.0**log10_learning_rate, 10.0**log10_weight_scale, steps=300
    )
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    loss_curve(hist["loss"], title="Loss on the spirals", ax=ax)
    plt.show()
    print(
        f"final loss {hist['loss'][-1]:.3f}, training accuracy {hist['train_acc'][-1]:.0%}, "
        f"dead ReLUs {dead_fraction(model, X_spiral):.0%}"
    )


_ = explore_plot(
    explore,
    hidden_dim=widgets.IntSlider(value=50, min=2, max=200, step=2),
    log10_learning_rate=widgets.FloatSlider(value=0.0, min=-3, max=2, step=0.25),
    log10_weight_scale=widgets.FloatSlider(value=-1.0, min=-4, max=1, step=0.25),
)

# %% [markdown]
# ## What to take away
#
# - A layer is a forward that caches and a backward that uses the cache; a network is
#   layers composed, and its gradient check is the layers' gradient checks composed.
# - Before training: the loss at initialisation, a gradient check, and overfitting a tiny
#   batch. Each catches a different class of bug in seconds.
# - The weight scale and the learning rate are part of the model: too small and nothing
#   moves, too large and units die. Assignment 04 makes the start principled (Xavier, He)
#   and the step adaptive (momentum, RMSProp, Adam).
