# %% [markdown]
# # 04 · Initialisation and optimisers
#
# Assignment 03 trained a network of two layers, and chose its weight scale and step size
# by trying. This one asks why those numbers matter, and what to do about it: how to start
# a deep network so that signals and gradients survive its depth, and how to step so that
# a badly scaled loss surface does not stall the descent.
#
# **The leaks shown here:** at depth, the scale of the initial weights decides whether
# anything trains at all; and the update rule, with each of its hyper-parameters, its bias
# correction, its weight decay and its schedule, decides where training goes.
#
# | Part | You write | Points |
# |---|---|---|
# | 0 · Your layers from 03 | nothing: they are carried forward from 03 | 0 |
# | 1 · Initialisation | `weight_init` | 2 |
# | 2 · A deep network | `FullyConnectedNet` | 4 |
# | 3 · Update rules | `sgd_momentum`, `rmsprop`, `adam`, `adamw` | 9 |
# | 4 · Ablations | nothing new: each leak, measured | 0 |
# | 5 · The shape of the loss | two predictions | 2 |
#
# Fill in every cell that says `YOUR CODE HERE`, run the "check it" cell after it, and press
# **Validate** before you submit. The cells titled "Hidden check" are graded later, on
# inputs you do not see; your feedback (or `course check`, if you learn on your own) says
# what failed and the likely mistake, never the expected values.

# %%
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from tqdm.auto import tqdm

from course.data import digits
from course.deepnet import layer_statistics
from course.gradcheck import gradient_error, rel_error
from course.landscape import Snapshots, flatten, interpolation, model_loss, path_landscape
from course.notebook import check_it, explore_plot
from course.plots import contour_paths, layer_histograms, loss_curve, plain_log_labels
from course.training import accuracy, fit

# %% [markdown]
# ## 0 · Your layers from 03
#
# `FullyConnectedNet` is built from your own `affine_forward`, `affine_backward`,
# `relu_forward`, `relu_backward` and `softmax_loss` from assignment 03, and the experiments
# train with your `sgd`: the cell below imports them from `my_03_multilayer.py` beside this
# notebook, which `course export` (run by `make lab` and `course check`) writes from the
# cells marked `#| export` of your 03 notebook. They are not graded again on their own; a
# hidden check of this notebook that fails because of one of them says so by name. Fixed
# something in 03? Save that notebook, then re-run this cell.

# %% nbgrader={"grade": false, "grade_id": "carried_from_03", "locked": true, "schema_version": 3, "solution": false}
# Your functions from 03 (work/03_multilayer). Fixed one there? Save 03, then re-run this cell.
from course.carry import carry  # imported here: this cell may be re-run alone

affine_forward, affine_backward, relu_forward, relu_backward, softmax_loss, sgd = carry(
    "03_multilayer", "affine_forward affine_backward relu_forward relu_backward softmax_loss sgd"
)

# %% [markdown]
# ## 1 · Initialisation
#
# A layer computes $z = x W$. If the $n_\text{in}$ inputs have variance $\text{Var}(x)$ and
# the weights are independent with variance $\sigma^2$, then
# $\text{Var}(z) = n_\text{in}\, \sigma^2\, \text{Var}(x)$. Stack layers and this factor
# multiplies: with $n_\text{in} \sigma^2 < 1$ the signal shrinks geometrically with depth,
# with $n_\text{in} \sigma^2 > 1$ it explodes. The backward pass multiplies gradients by
# the same weights, so they shrink or explode too.
#
# - **Xavier**, in this course's convention: $\sigma = \sqrt{1 / n_\text{in}}$ keeps the
#   forward variance for an activation that is linear near 0, such as tanh. That is LeCun's
#   form (LeCun et al., 1998; PyTorch's `fan_in` mode). Glorot and Bengio (2010) average
#   the two directions, $\sigma = \sqrt{2 / (n_\text{in} + n_\text{out})}$, to keep the
#   backward variance too; with equal fans the two agree. `weight_init` uses the fan_in form.
# - **He** (He et al., 2015): the variance that propagates is the next layer's
#   $\text{Var}(z') = n_\text{in}\, \sigma^2\, E[h^2]$, with the *second moment* of the
#   activations $h$, not their variance. For $h = \text{relu}(z)$ with $z$ symmetric,
#   $E[h^2] = \tfrac12 \text{Var}(z)$: ReLU halves the second moment (its variance,
#   about $0.34\, \text{Var}(z)$, is not what propagates; the cell below measures both).
#   $\sigma = \sqrt{2 / n_\text{in}}$ makes up for the half.

# %%
z_demo = np.random.default_rng(0).standard_normal(1_000_000)
h_demo = np.maximum(z_demo, 0)
print(f"Var(relu(z)) / Var(z) = {h_demo.var() / z_demo.var():.3f}")
print(
    f"E[relu(z)^2] / Var(z) = {np.mean(h_demo**2) / z_demo.var():.3f} (what He's factor 2 undoes)"
)

# %% [markdown]
# ### Exercise 1.1: `weight_init`
#
# Return a (fan_in, fan_out) matrix of normal draws with mean 0 and the scheme's standard
# deviation: `"xavier"`, `"he"`, or a number (that standard deviation). Draw from the
# generator `rng` you are given, never from NumPy's global one: the caller decides the
# randomness. An unknown scheme name is a `ValueError`.


# %% nbgrader={"grade": false, "grade_id": "weight_init_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def weight_init(fan_in, fan_out, scheme, rng):
    """A (fan_in, fan_out) weight matrix drawn from N(0, std**2) with rng.

    scheme: "xavier" (std sqrt(1 / fan_in)), "he" (std sqrt(2 / fan_in)) or a float std.
    """
    ### BEGIN SOLUTION
    if isinstance(scheme, str):
        stds = {"xavier": np.sqrt(1.0 / fan_in), "he": np.sqrt(2.0 / fan_in)}
        if scheme not in stds:
            raise ValueError(f"unknown scheme {scheme!r}: use 'xavier', 'he' or a number")
        std = stds[scheme]
    else:
        std = float(scheme)
    return rng.normal(0.0, std, size=(fan_in, fan_out))
    ### END SOLUTION


# %% [markdown]
# **Check it**: the sample's standard deviation against the scheme's, and the same seed
# giving the same matrix.

# %%
with check_it("Exercise 1.1"):
    for scheme, std in (("xavier", np.sqrt(1 / 400)), ("he", np.sqrt(2 / 400)), (0.05, 0.05)):
        W = weight_init(400, 300, scheme, np.random.default_rng(0))
        print(f"{scheme!s:>7}: shape {W.shape}, std {W.std():.4f} (expect {std:.4f})")
        assert W.shape == (400, 300), f"shape {W.shape}, not (400, 300)"
        assert abs(W.std() / std - 1) < 0.02, f"{scheme}: wrong standard deviation"
    same = (
        weight_init(5, 4, "he", np.random.default_rng(7)),
        weight_init(5, 4, "he", np.random.default_rng(7)),
    )
    assert np.array_equal(*same), "the same generator state must give the same weights"


# %% nbgrader={"grade": true, "grade_id": "weight_init", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): shapes, and the statistics of large draws for each scheme (mean,
# standard deviation and the normal shape); the generator passed in is the one used.
### BEGIN HIDDEN TESTS
from course.grading import check

check("weight_init", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Signals through depth
#
# Ten layers of 256 units, no biases, 500 random inputs: push them forward with weights
# from your `weight_init`, and a random gradient back. Watch the standard deviation of the
# activations (left) and of the weights' gradients (right), layer by layer.

# %%
X_probe = np.random.default_rng(0).standard_normal((500, 256))
schemes = {"0.01 (too small)": 0.01, "xavier": "xavier", "he": "he", "0.2 (too large)": 0.2}


def statistics_for(activation, scheme, depth=10, width=256, seed=0):
    rng = np.random.default_rng(seed)
    weights = [weight_init(width, width, scheme, rng) for _ in range(depth)]
    return layer_statistics(X_probe, weights, activation)


fig, axes = plt.subplots(2, 2, figsize=(11, 6.5), layout="constrained")
for row, activation in enumerate(("tanh", "relu")):
    for label, scheme in schemes.items():
        stats = statistics_for(activation, scheme)
        layers = np.arange(1, 11)
        axes[row, 0].semilogy(layers, stats["act_std"], marker="o", label=label)
        axes[row, 1].semilogy(layers, stats["grad_std"], marker="o", label=label)
    axes[row, 0].set(title=f"{activation}: activation std per layer", xlabel="layer")
    axes[row, 1].set(title=f"{activation}: weight-gradient std per layer", xlabel="layer")
axes[0, 0].legend(fontsize=8)
plt.show()

# %% [markdown]
# He holds ReLU steady; the others vanish or blow up within a few layers. Xavier does
# *not* quite hold tanh steady: tanh shrinks every input a little, so the activations'
# standard deviation still decays layer by layer (printed below: 0.63 at layer 1, 0.23 at
# layer 10); the gain $5/3$ that PyTorch recommends for tanh ($\sigma = \tfrac53
# \sqrt{1 / n_\text{in}}$) mostly makes up for it (0.76 to 0.65). The histograms say the
# same with shapes: tanh units with too large weights saturate at ±1 (where their gradient
# is 0), and with too small weights every unit collapses to 0.

# %%
for label, scheme in (("xavier", "xavier"), ("xavier x 5/3", 5 / 3 * np.sqrt(1 / 256))):
    act = statistics_for("tanh", scheme)["act_std"]
    print(f"tanh, {label}: activation std {act[0]:.2f} at layer 1, {act[-1]:.2f} at layer 10")

for scheme in ("xavier", 0.2, 0.01):
    stats = statistics_for("tanh", scheme)
    layer_histograms(stats["activations"], f"tanh, weights {scheme}: activations by layer")
plt.show()

# %% [markdown]
# Explore: depth, scheme and activation.


# %%
def explore_depth(depth=10, scheme="he", activation="relu"):
    stats = statistics_for(activation, scheme, depth=depth)
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")
    ax.semilogy(np.arange(1, depth + 1), stats["act_std"], marker="o", label="activations")
    ax.semilogy(np.arange(1, depth + 1), stats["grad_std"], marker="s", label="weight gradients")
    ax.set(xlabel="layer", ylabel="standard deviation", title=f"{activation}, {scheme}")
    plain_log_labels(ax)
    ax.legend()
    plt.show()


_ = explore_plot(
    explore_depth,
    depth=widgets.IntSlider(value=10, min=2, max=30),
    scheme=widgets.Dropdown(
        options=[("0.01", 0.01), ("xavier", "xavier"), ("he", "he"), ("0.2", 0.2)], value="he"
    ),
    activation=["relu", "tanh"],
)

# %% [markdown]
# ## 2 · A deep network
#
# `FullyConnectedNet` generalises `TwoLayerNet` to any number of hidden layers:
# {affine - relu} × (L - 1), then affine - softmax. Its parameters are `W1, b1, ..., WL,
# bL`, weights from $\mathcal{N}(0, \text{weight\_scale}^2)$ drawn with
# `np.random.default_rng(seed)` and biases 0, all of type `dtype` (float32 by default: half
# the memory and faster; gradient checks use float64). Regularisation is
# $\tfrac12 \lambda \sum_l \sum W_l^2$ over the weight matrices.
#
# Normalisation and dropout come in a later assignment: for now the constructor refuses them
# with a clear error (that part is written for you).
#
# ### Exercise 2.1: `FullyConnectedNet`


# %% nbgrader={"grade": false, "grade_id": "fully_connected_net_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
class FullyConnectedNet:
    """{affine - relu} x (L - 1) - affine - softmax, with L = len(hidden_dims) + 1."""

    def __init__(
        self,
        hidden_dims,
        input_dim,
        num_classes,
        dropout_keep_ratio=1,
        normalization=None,
        reg=0.0,
        weight_scale=1e-2,
        dtype=np.float32,
        seed=None,
    ):
        if normalization is not None:
            raise NotImplementedError(
                f"normalization={normalization!r}: normalisation comes later in the course; "
                "use normalization=None"
            )
        if dropout_keep_ratio != 1:
            raise NotImplementedError(
                f"dropout_keep_ratio={dropout_keep_ratio!r}: dropout comes later in the course; "
                "use dropout_keep_ratio=1"
            )
        self.reg = reg
        self.dtype = dtype
        self.num_layers = len(hidden_dims) + 1
        self.params = {}
        ### BEGIN SOLUTION
        rng = np.random.default_rng(seed)
        dims = [input_dim, *hidden_dims, num_classes]
        for layer in range(1, self.num_layers + 1):
            fan_in, fan_out = dims[layer - 1], dims[layer]
            self.params[f"W{layer}"] = (
                weight_scale * rng.standard_normal((fan_in, fan_out))
            ).astype(dtype)
            self.params[f"b{layer}"] = np.zeros(fan_out, dtype=dtype)
        ### END SOLUTION

    def loss(self, X, y=None):
        """Scores (N, C) if y is None, else (loss, grads) with grads keyed like params."""
        X = X.astype(self.dtype)
        ### BEGIN SOLUTION
        caches = []
        out = X
        for layer in range(1, self.num_layers):
            out, affine_cache = affine_forward(
                out, self.params[f"W{layer}"], self.params[f"b{layer}"]
            )
            out, relu_cache = relu_forward(out)
            caches.append((affine_cache, relu_cache))
        last = self.num_layers
        scores, last_cache = affine_forward(out, self.params[f"W{last}"], self.params[f"b{last}"])
        if y is None:
            return scores
        loss, dout = softmax_loss(scores, y)
        grads = {}
        dout, grads[f"W{last}"], grads[f"b{last}"] = affine_backward(dout, last_cache)
        for layer in range(self.num_layers - 1, 0, -1):
            affine_cache, relu_cache = caches[layer - 1]
            dout = relu_backward(dout, relu_cache)
            dout, grads[f"W{layer}"], grads[f"b{layer}"] = affine_backward(dout, affine_cache)
        for layer in range(1, self.num_layers + 1):
            W = self.params[f"W{layer}"]
            loss += 0.5 * self.reg * np.sum(W * W)
            grads[f"W{layer}"] = grads[f"W{layer}"] + self.reg * W
        return loss, grads
        ### END SOLUTION


# %% [markdown]
# **Check it**: the loss at initialisation, the refusals, and a gradient check in float64
# with three hidden layers of different widths.

# %%
with check_it("Exercise 2.1"):
    net = FullyConnectedNet([50, 40], 64, 10, weight_scale=1e-3, seed=0)
    X_check = np.random.default_rng(1).standard_normal((30, 64))
    y_check = np.random.default_rng(2).integers(0, 10, 30)
    print(f"loss at initialisation {net.loss(X_check, y_check)[0]:.4f} (log 10 = {np.log(10):.4f})")
    print("dtype of the parameters:", {p.dtype for p in net.params.values()})
    for bad in ({"normalization": "batchnorm"}, {"dropout_keep_ratio": 0.5}):
        try:
            FullyConnectedNet([10], 64, 10, **bad)
        except NotImplementedError as error:
            print("refused:", error)

    X_small, y_small = (
        np.random.default_rng(3).standard_normal((6, 5)),
        np.array([0, 1, 2, 1, 0, 2]),
    )
    for reg in (0.0, 0.5):
        small = FullyConnectedNet(
            [4, 7, 6], 5, 3, reg=reg, weight_scale=0.5, dtype=np.float64, seed=4
        )
        _, grads = small.loss(X_small, y_small)
        worst = 0.0
        for name in small.params:

            def f(v, name=name, net=small):
                saved, net.params[name] = net.params[name], v
                value = net.loss(X_small, y_small)[0]
                net.params[name] = saved
                return value

            worst = max(worst, gradient_error(f, small.params[name].copy(), grads[name]))
        print(f"reg = {reg}: worst relative error over {len(grads)} gradients {worst:.1e}")
        assert worst < 1e-6, f"a gradient is wrong (reg = {reg})"


# %% nbgrader={"grade": true, "grade_id": "fully_connected_net", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Hidden check (4 points): parameter names, shapes and dtypes; initial statistics and the
# seed; on hidden weights (float64), the scores, loss and every gradient for networks with
# zero, one and two hidden layers, with and without regularisation, and the gradients
# against centred differences of your own loss.
### BEGIN HIDDEN TESTS
from course.grading import check

check("fully_connected_net", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### The leak: at depth, the first step's scale decides
#
# A network of six hidden layers on the digits, trained the same way twice: weights at the
# default scale 0.01, and weights from He's rule (your `weight_init`), both with plain SGD
# (your `sgd` from 03, carried forward in part 0).

# %%
data = digits()
mean_image = data.X_train.mean(axis=0)
X_train, X_val, X_test = (X - mean_image for X in (data.X_train, data.X_val, data.X_test))
y_train, y_val, y_test = data.y_train, data.y_val, data.y_test


def deep_net(scheme, hidden_dims=(100,) * 6, seed=0, **kwargs):
    """A FullyConnectedNet whose weights are then redrawn with `weight_init(scheme)`."""
    model = FullyConnectedNet(list(hidden_dims), 64, 10, seed=seed, dtype=np.float64, **kwargs)
    rng = np.random.default_rng(seed)
    for layer in range(1, model.num_layers + 1):
        W = model.params[f"W{layer}"]
        model.params[f"W{layer}"] = weight_init(*W.shape, scheme, rng)
    return model


starts, trained = {}, {}  # kept for part 5: the loss between each start and its end
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for scheme in (1e-2, "he"):
    model = deep_net(scheme)
    starts[scheme] = {name: W.copy() for name, W in model.params.items()}
    hist = fit(model, sgd, X_train, y_train, X_val, y_val, epochs=8, config={"learning_rate": 0.05})
    trained[scheme] = model
    ax.plot(hist["loss"], label=f"weights {scheme}: validation accuracy {hist['val_acc'][-1]:.0%}")
ax.set(xlabel="step", ylabel="loss", title="Six hidden layers: the start decides whether it learns")
ax.legend()
plt.show()

# %% [markdown]
# With weights of 0.01 each hidden layer multiplies the second moment by
# $n_\text{in}\, \sigma^2 / 2$: $0.01^2 \cdot 100 / 2 = 0.005$ for the 100-wide layers
# (and $0.0032$ for the first, 64 inputs wide). Over six hidden layers that compounds to
# the ratio the cell below predicts and then measures on the digits. The gradients
# reaching the first layers are as small. The loss sits on a plateau (part 5 asks at what
# loss) and nothing trains.
# Same code, same data, same learning rate: only the first draw differs.

# %%
small = deep_net(1e-2)
h_small = X_train
for layer in range(1, small.num_layers):
    h_small = np.maximum(h_small @ small.params[f"W{layer}"] + small.params[f"b{layer}"], 0)
predicted = 0.01**2 * 64 / 2 * (0.01**2 * 100 / 2) ** 5
print(f"predicted second-moment ratio over six hidden layers: {predicted:.1e}")
print(f"measured second-moment ratio: {np.mean(h_small**2) / np.mean(X_train**2):.1e}")
print(f"measured variance ratio (last hidden layer / input): {h_small.var() / X_train.var():.1e}")

# %% [markdown]
# ### Symmetry: why the first draw must be random
#
# Start every weight of a layer at the same constant and every hidden unit of it computes
# the same function, receives the same gradient, and takes the same step: they stay
# identical forever, and a layer of 20 units works as one. Below, W1 and W2 start constant
# (W3 random, else every hidden gradient is exactly 0): after training, the 20 units of
# the first layer still have identical weights, although those weights did move.

# %%
twins = deep_net("he", hidden_dims=(20, 20))
for name in ("W1", "W2"):
    twins.params[name] = np.full_like(twins.params[name], 0.05)
_ = fit(twins, sgd, X_train, y_train, epochs=2, config={"learning_rate": 0.1})
W1_twins = twins.params["W1"]
print(
    "after 2 epochs, the largest difference between two first-layer units' weights: "
    f"{np.ptp(W1_twins, axis=1).max():.1e}"
)
print(f"the largest distance those weights moved from 0.05: {np.abs(W1_twins - 0.05).max():.1e}")

# %% [markdown]
# ## 3 · Update rules
#
# Every rule has the signature `rule(w, dw, config=None) -> (next_w, config)`. Defaults go
# into `config` with `config.setdefault`, and so does the state a rule carries from one
# step to the next (a velocity, running averages, a step count): the training loop passes
# each parameter its own `config` back at the next step. Plain SGD (from 03, defined
# above) is the baseline.

# %% [markdown]
# ### Exercise 3.1: `sgd_momentum`
#
# A heavy ball: the velocity accumulates gradients and decays by `momentum` each step,
# $v \leftarrow \mu v - \eta\, dw$, $w \leftarrow w + v$. Along a direction where the
# gradient keeps its sign, steps grow up to $1 / (1 - \mu)$ times; across a narrow valley,
# where it flips, they cancel. Keys: `learning_rate` (1e-2), `momentum` (0.9), `velocity`
# (zeros like w at first).
#
# This is CS231n's convention (Sutskever et al., 2013). PyTorch's `SGD` keeps
# $v \leftarrow \mu v + dw$ and steps $w \leftarrow w - \eta v$: the same steps from zero
# velocity at a fixed rate, but its velocity is $-v / \eta$ in this notebook's terms, so the
# two disagree once the rate changes or a velocity is handed over. Use this one: it is the API.


# %% nbgrader={"grade": false, "grade_id": "sgd_momentum_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def sgd_momentum(w, dw, config=None):
    """SGD with momentum. Returns (next_w, config)."""
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    ### BEGIN SOLUTION
    v = config.get("velocity", np.zeros_like(w))
    v = config["momentum"] * v - config["learning_rate"] * dw
    next_w = w + v
    config["velocity"] = v
    ### END SOLUTION
    return next_w, config


# %% [markdown]
# ### Exercise 3.2: `rmsprop`
#
# Divide each coordinate's step by a running root mean square of its gradients, so that
# steep and flat directions advance at similar rates:
# $c \leftarrow \rho c + (1 - \rho)\, dw^2$,
# $w \leftarrow w - \eta\, dw / (\sqrt{c} + \epsilon)$. Keys: `learning_rate` (1e-2),
# `decay_rate` (0.99), `epsilon` (1e-8), `cache` (zeros at first).


# %% nbgrader={"grade": false, "grade_id": "rmsprop_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def rmsprop(w, dw, config=None):
    """RMSProp. Returns (next_w, config)."""
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    ### BEGIN SOLUTION
    cache = config.get("cache", np.zeros_like(w))
    cache = config["decay_rate"] * cache + (1 - config["decay_rate"]) * dw**2
    next_w = w - config["learning_rate"] * dw / (np.sqrt(cache) + config["epsilon"])
    config["cache"] = cache
    ### END SOLUTION
    return next_w, config


# %% [markdown]
# ### Exercise 3.3: `adam`
#
# Momentum and RMSProp together, with **bias correction**: $m$ and $v$ start at 0, so in
# the first steps they underestimate the gradient's mean and square; dividing by
# $1 - \beta^t$ undoes that.
#
# $$t \leftarrow t + 1, \quad m \leftarrow \beta_1 m + (1 - \beta_1) dw, \quad
# v \leftarrow \beta_2 v + (1 - \beta_2) dw^2,$$
# $$\hat m = \frac{m}{1 - \beta_1^t}, \quad \hat v = \frac{v}{1 - \beta_2^t}, \quad
# w \leftarrow w - \eta\, \frac{\hat m}{\sqrt{\hat v} + \epsilon}.$$
#
# Keys: `learning_rate` (1e-3), `beta1` (0.9), `beta2` (0.999), `epsilon` (1e-8), `m`,
# `v` (zeros at first) and `t` (0 at first; incremented *before* it is used).


# %% nbgrader={"grade": false, "grade_id": "adam_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def adam(w, dw, config=None):
    """Adam. Returns (next_w, config)."""
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-3)
    config.setdefault("beta1", 0.9)
    config.setdefault("beta2", 0.999)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    config.setdefault("t", 0)
    ### BEGIN SOLUTION
    config["t"] += 1
    t, beta1, beta2 = config["t"], config["beta1"], config["beta2"]
    config["m"] = beta1 * config["m"] + (1 - beta1) * dw
    config["v"] = beta2 * config["v"] + (1 - beta2) * dw**2
    m_hat = config["m"] / (1 - beta1**t)
    v_hat = config["v"] / (1 - beta2**t)
    next_w = w - config["learning_rate"] * m_hat / (np.sqrt(v_hat) + config["epsilon"])
    ### END SOLUTION
    return next_w, config


# %% [markdown]
# ### Exercise 3.4: `adamw`
#
# Adam with **decoupled** weight decay (Loshchilov and Hutter, 2019): the decay is not
# added to the gradient, where Adam's normalisation would rescale it coordinate by
# coordinate, but applied to the weights directly. This course writes it in **PyTorch's
# convention**, the decay multiplied by the learning rate:
#
# $$w \leftarrow w - \eta \left(\frac{\hat m}{\sqrt{\hat v} + \epsilon} +
# \lambda_\text{wd}\, w\right).$$
#
# The paper's Algorithm 2 writes $w \leftarrow w - \eta_t \left(\alpha \frac{\hat m}
# {\sqrt{\hat v} + \epsilon} + \lambda w\right)$, where $\eta_t$ is a schedule multiplier
# (1 without a schedule) and $\alpha$ the step size: there the decay does not scale with
# $\alpha$, so the same $\lambda$ is a far stronger decay. PyTorch folds it into the learning
# rate, which makes $\lambda$ and the rate interact; this notebook's `adamw` follows PyTorch.
#
# Keys: those of `adam`, plus `weight_decay` (1e-2).


# %% nbgrader={"grade": false, "grade_id": "adamw_solution", "locked": false, "schema_version": 3, "solution": true}
#| export
def adamw(w, dw, config=None):
    """AdamW. Returns (next_w, config)."""
    if config is None:
        config = {}
    config.setdefault("weight_decay", 1e-2)
    ### BEGIN SOLUTION
    config.setdefault("learning_rate", 1e-3)
    config.setdefault("beta1", 0.9)
    config.setdefault("beta2", 0.999)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    config.setdefault("t", 0)
    config["t"] += 1
    t, beta1, beta2 = config["t"], config["beta1"], config["beta2"]
    config["m"] = beta1 * config["m"] + (1 - beta1) * dw
    config["v"] = beta2 * config["v"] + (1 - beta2) * dw**2
    m_hat = config["m"] / (1 - beta1**t)
    v_hat = config["v"] / (1 - beta2**t)
    step = m_hat / (np.sqrt(v_hat) + config["epsilon"]) + config["weight_decay"] * w
    next_w = w - config["learning_rate"] * step
    ### END SOLUTION
    return next_w, config


# %% [markdown]
# **Check it** on a case worked out by hand: one step from $w = 1$ with $dw = 2$ and the
# defaults. Momentum: $v = -0.02$, so $w = 0.98$. RMSProp: $c = 0.04$, step
# $0.01 \cdot 2 / 0.2 = 0.1$. Adam's first step is $\eta \cdot \text{sign}(dw)$ (bias
# correction makes $\hat m = dw$, $\hat v = dw^2$), so $w = 0.999$; AdamW also decays by
# $\eta \lambda_\text{wd} w = 10^{-5}$. Then the state each rule must keep.

# %%
# One check per rule: a rule not written yet does not hide the others.
w, dw = np.array([1.0]), np.array([2.0])
first_steps = {
    "Exercise 3.1": (sgd_momentum, 0.98),
    "Exercise 3.2": (rmsprop, 0.9),
    "Exercise 3.3": (adam, 0.999),
    "Exercise 3.4": (adamw, 0.99899),
}
for exercise, (rule, expected) in first_steps.items():
    with check_it(exercise):
        next_w, config = rule(w.copy(), dw, None)
        print(f"{rule.__name__:>13}: next w {next_w[0]:.8f} (expect {expected})")
        print(f"{'':>13}  config keys {sorted(config)}")
        assert abs(next_w[0] - expected) < 1e-7, f"{rule.__name__}'s first step is wrong"
        if rule is adam:
            assert config["t"] == 1, "t counts the steps taken"
        if rule is sgd_momentum:
            _, config = sgd_momentum(w.copy(), dw, config)
            velocity = config["velocity"][0]
            assert abs(velocity - (0.9 * -0.02 - 0.02)) < 1e-12, "the velocity carries over"


# %% nbgrader={"grade": true, "grade_id": "sgd_momentum", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): four consecutive steps from hidden states, with the defaults and
# with given hyper-parameters and state, the state kept in config; and the loss curve of a
# small fixed problem trained with your rule.
### BEGIN HIDDEN TESTS
from course.grading import check

check("sgd_momentum", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "rmsprop", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): as for sgd_momentum.
### BEGIN HIDDEN TESTS
from course.grading import check

check("rmsprop", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "adam", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Hidden check (3 points): as for sgd_momentum, including the first steps, where bias
# correction matters most.
### BEGIN HIDDEN TESTS
from course.grading import check

check("adam", globals())
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "adamw", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): as for sgd_momentum, with and without weight decay.
### BEGIN HIDDEN TESTS
from course.grading import check

check("adamw", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### Trajectories on an ill-conditioned surface
#
# $f(w) = \tfrac12 (w_1^2 + 20\, w_2^2)$: twenty times steeper across than along. A step
# size safe for the steep direction crawls along the flat one. Each rule starts at
# $(-3, 1.5)$ and takes 60 steps.


# %%
def bowl(w1, w2):
    return 0.5 * (w1**2 + 20.0 * w2**2)


def bowl_gradient(w):
    return np.array([w[0], 20.0 * w[1]])


def trajectory(rule, config, steps=60, start=(-3.0, 1.5)):
    w, path = np.array(start), [np.array(start)]
    config = dict(config)
    for _ in range(steps):
        w, config = rule(w, bowl_gradient(w), config)
        path.append(w)
    return np.array(path)


paths = {
    "sgd, lr 0.09": trajectory(sgd, {"learning_rate": 0.09}),
    "momentum, lr 0.02": trajectory(sgd_momentum, {"learning_rate": 0.02}),
    "rmsprop, lr 0.1": trajectory(rmsprop, {"learning_rate": 0.1}),
    "adam, lr 0.3": trajectory(adam, {"learning_rate": 0.3}),
}
contour_paths(bowl, paths, "60 steps on an ill-conditioned bowl")
plt.show()


# %% [markdown]
# Explore: the learning rate, momentum and Adam's betas.


# %%
def explore_rules(log10_learning_rate=-1.0, momentum=0.9, beta1=0.9, beta2=0.999):
    lr = 10.0**log10_learning_rate
    explored = {
        f"sgd, lr {lr:.3g}": trajectory(sgd, {"learning_rate": lr}),
        f"momentum {momentum:.2f}": trajectory(
            sgd_momentum, {"learning_rate": lr, "momentum": momentum}
        ),
        f"adam, betas ({beta1:.2f}, {beta2:.4f})": trajectory(
            adam, {"learning_rate": lr, "beta1": beta1, "beta2": beta2}
        ),
    }
    contour_paths(bowl, explored, "Your settings")
    plt.show()


_ = explore_plot(
    explore_rules,
    log10_learning_rate=widgets.FloatSlider(
        value=-1.0,
        min=-3,
        max=0,
        step=0.1,
        description="log10(lr)",
        style={"description_width": "initial"},
    ),
    momentum=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01),
    beta1=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01),
    beta2=widgets.FloatSlider(value=0.999, min=0.9, max=0.9999, step=0.0001, readout_format=".4f"),
)

# %% [markdown]
# ### The same network under each rule
#
# Three hidden layers of 100 on the digits, He initialisation, 10 epochs, one seed. The
# rates are each rule's usual default (0.05 for SGD, 0.01 with momentum, 1e-3 for the
# adaptive rules), **not tuned per rule**: the curves compare rules at customary settings,
# not at their best, and one seed shows no spread. Ranking rules fairly needs a sweep of
# the learning rate for each, over several seeds. `adamw`'s curve, dashed, lies on `adam`'s:
# its default decay of $10^{-2}$ times a rate of $10^{-3}$ shrinks each weight by $10^{-5}$
# a step, too little to show in 10 epochs (the ablation below gives the decay its weight).

# %%
rules = {
    "sgd": (sgd, {"learning_rate": 0.05}),
    "sgd_momentum": (sgd_momentum, {"learning_rate": 0.01}),
    "rmsprop": (rmsprop, {"learning_rate": 1e-3}),
    "adam": (adam, {"learning_rate": 1e-3}),
    "adamw": (adamw, {"learning_rate": 1e-3}),
}
descents = {}  # each rule's network and its weights at every epoch, for part 5
fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
for name, (rule, config) in tqdm(rules.items(), desc="rules"):
    model = deep_net("he", hidden_dims=(100, 100, 100))
    snapshots = Snapshots(model)
    hist = fit(
        model, rule, X_train, y_train, X_val, y_val, epochs=10, config=config, progress=snapshots
    )
    descents[name] = (model, snapshots.path)
    label = f"{name}: validation {hist['val_acc'][-1]:.1%}"
    if name == "adamw":  # its decay (1e-2 x lr per step) is too small to part it from adam
        ax.plot(hist["loss"], label=f"{label} (dashed: on top of adam)", lw=1.5, ls="--")
    else:
        ax.plot(hist["loss"], label=label, lw=1)
ax.set(xlabel="step", ylabel="loss", yscale="log", title="One network, five update rules")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# ## 4 · Ablations: each leak, measured
#
# ### Adam without bias correction
#
# Your `adam` increments `t` before using it, so a wrapper that resets `t` to a huge
# number before each call turns the correction off ($1 - \beta^t = 1$). With $m$ and $v$
# starting at zero, $v$ grows much more slowly than $m$ ($1 - \beta_2 = 0.001$ against
# $1 - \beta_1 = 0.1$), so the first steps are several times too long. On the bowl the
# first uncorrected steps overshoot; the ratio of step sizes, for a constant gradient, is
# $(1 - \beta_1^t) / \sqrt{1 - \beta_2^t}$:


# %%
def adam_without_bias_correction(w, dw, config=None):
    config = {} if config is None else config
    config["t"] = 10**9  # your adam adds 1, and 1 - beta ** t is then 1
    return adam(w, dw, config)


t = np.arange(1, 2001)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
ax1.semilogx(t, (1 - 0.9**t) / np.sqrt(1 - 0.999**t))
ax1.axhline(1.0, color="gray", ls="--")
ax1.set(
    xlabel="step t",
    ylabel="uncorrected / corrected step",
    title="Without correction: steps too long early",
)
contour_paths(
    bowl,
    {
        "adam, lr 0.3": trajectory(adam, {"learning_rate": 0.3}, steps=25),
        "no bias correction": trajectory(
            adam_without_bias_correction, {"learning_rate": 0.3}, steps=25
        ),
    },
    "First 25 steps",
    ax=ax2,
)
plt.show()

# %% [markdown]
# ### L2 in the gradient versus decoupled weight decay
#
# With SGD, adding $\lambda w$ to the gradient and shrinking the weights by $\eta \lambda w$
# are the same thing. With Adam they are not: the L2 term is divided by $\sqrt{\hat v}$, so
# a weight with large gradients is barely decayed while a weight with small gradients is
# decayed hard. Decoupled decay shrinks every weight at the same rate, by a factor
# $1 - \eta \lambda$ a step. The same nominal $\lambda$ is therefore two different
# strengths: compare the weights' sizes, and the shrink that decoupled decay alone applies
# over the run (printed), before reading anything into the accuracies. Three seeds each,
# mean and spread (min to max):


# %%
def adam_with_l2(w, dw, config=None):
    config = {} if config is None else config
    return adam(w, dw + config.get("weight_decay", 1e-2) * w, config)


decay_epochs, decay_lr, decay_seeds = 4, 2e-3, (0, 1, 2)
decay_arms = {"Adam, no decay": (adam, 0.0), "Adam + L2 in the gradient": (adam_with_l2, 0.1)}
decay_arms["AdamW (decoupled)"] = (adamw, 0.1)
steps_run = decay_epochs * -(-len(X_train) // 100)  # fit's batches of 100
print(
    f"decoupled shrink over the run: (1 - {decay_lr:g} * 0.1)^{steps_run} = "
    f"{(1 - decay_lr * 0.1) ** steps_run:.3f}"
)
for name, (rule, wd) in tqdm(decay_arms.items(), desc="decay"):
    accs, norms = [], []
    for seed in decay_seeds:
        model = deep_net("he", hidden_dims=(100, 100), seed=seed)
        config = {"learning_rate": decay_lr, "weight_decay": wd}
        hist = fit(
            model,
            rule,
            X_train,
            y_train,
            X_val,
            y_val,
            epochs=decay_epochs,
            config=config,
            seed=seed,
        )
        accs.append(hist["val_acc"][-1])
        norms.append(np.linalg.norm(model.params["W2"]))
    print(
        f"{name:>26}: validation {np.mean(accs):.1%} ({min(accs):.1%} to {max(accs):.1%}), "
        f"|W2| {np.mean(norms):.2f} ({min(norms):.2f} to {max(norms):.2f})"
    )

# %% [markdown]
# Read the table, not the formula. At this learning rate the decoupled shrink over the
# whole run is the factor printed first, close to 1: "AdamW" here is plain Adam, and its
# row matches the no-decay row within the seeds' spread. L2 in the gradient, divided by
# $\sqrt{\hat v}$, is a much stronger decay at the same nominal $\lambda$ (see $|W_2|$).
# Neither is evidence that decay helps on this problem: comparing decays needs each
# $\lambda$ swept, for each way of applying it.
#
# ### Warm-up and a cosine schedule
#
# A large learning rate is most dangerous at the start, when Adam's statistics are
# young and the weights are random; late in training, a smaller one settles into a
# minimum. A linear **warm-up** addresses the first, a **cosine decay** the second. Four
# hidden layers, Adam at a peak learning rate of 0.05, each schedule on three seeds: which
# half does the work is read off the table, not assumed.


# %%
def warmup_cosine(step, total, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * peak * (1 + np.cos(np.pi * min(1.0, progress)))


epochs, batch, peak = 4, 100, 5e-2
total = epochs * -(-len(X_train) // batch)
warm = total // 10
schedules = {
    "constant": lambda s: peak,
    "warm-up only": lambda s: peak * min(1.0, (s + 1) / warm),
    "cosine only": lambda s: warmup_cosine(s, total, peak, 0),
    "warm-up + cosine": lambda s: warmup_cosine(s, total, peak, warm),
}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained")
for name, schedule in tqdm(schedules.items(), desc="schedules"):
    accs, finals = [], []
    for seed in (0, 1, 2):
        model = deep_net("he", hidden_dims=(100,) * 4, seed=seed)
        hist = fit(
            model,
            adam,
            X_train,
            y_train,
            X_val,
            y_val,
            epochs=epochs,
            batch_size=batch,
            schedule=schedule,
        )
        accs.append(hist["val_acc"][-1])
        finals.append(np.mean(hist["loss"][-20:]))
    ax1.plot(hist["loss"], label=f"{name} (seed 2)", lw=1)
    ax2.plot([schedule(s) for s in range(total)], label=name)
    print(
        f"{name:>17}: validation {np.mean(accs):.1%} ({min(accs):.1%} to {max(accs):.1%}), "
        f"final loss {np.mean(finals):.3f} ({min(finals):.3f} to {max(finals):.3f})"
    )
ax1.set(xlabel="step", ylabel="loss", yscale="log", title="Adam at a high learning rate")
ax2.set(xlabel="step", ylabel="learning rate", title="The schedules")
ax1.legend(fontsize=8)
plt.show()

# %% [markdown]
# Over three seeds the table says which half does the work: compare "warm-up only" with
# "constant" (the warm-up removes the early spike, little more) and "cosine only" with
# "constant" (the decay is what lowers the final loss). One seed could have said
# otherwise: the spreads are wide.

# %% [markdown]
# ### The update-to-weight ratio
#
# A diagnostic that needs no validation set: how much each step changes each weight
# matrix, relative to its size. For SGD, around $10^{-3}$ is the rule of thumb (CS231n's);
# $10^{-1}$ means the weights are thrown around, $10^{-5}$ that they barely move. Under
# Adam the ratio mostly restates the learning rate: each coordinate moves by about $\eta$
# whatever its gradient, so the ratio follows $\eta / \text{RMS}(W)$ (both printed below
# for each run; within a factor of about 2 at the two smaller rates), and tells less
# about health than it does for SGD.

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2), layout="constrained", sharey=True)
for ax, lr in zip(axes, (1e-5, 1e-3, 1e-1), strict=True):
    model = deep_net("he", hidden_dims=(100, 100))
    hist = fit(
        model, adam, X_train, y_train, epochs=3, config={"learning_rate": lr}, track_updates=True
    )
    for name, ratios in hist["update_ratio"].items():
        ax.semilogy(ratios, label=name, lw=1)
    ax.axhline(1e-3, color="gray", ls="--")
    ax.set(xlabel="step", title=f"Adam, lr {lr:g}: final loss {hist['loss'][-1]:.2f}")
    rms = np.sqrt(np.mean(model.params["W2"] ** 2))
    final = hist["update_ratio"]["W2"][-1]
    print(f"Adam, lr {lr:g}: W2's last update ratio {final:.1e}, lr / RMS(W2) {lr / rms:.1e}")
axes[0].set_ylabel("|update| / |W|")
axes[0].legend()
plt.show()

# %% [markdown]
# ### The epsilon leak: dead units
#
# A ReLU unit that fires for no example has a gradient of exactly 0 for its weights, at
# every step. Adam's $m$ and $v$ for those weights stay 0, and the update is
# $\hat m / (\sqrt{\hat v} + \epsilon) = 0 / \epsilon = 0$. Without $\epsilon$ it is
# $0 / 0$: `nan`, and the next forward pass carries that `nan` into every score.

# %%
w_dead = np.ones((3, 2))
dw_dead = np.array([[0.5, 0.0], [-1.0, 0.0], [2.0, 0.0]])  # the second unit is dead
for eps in (1e-8, 0.0):
    with np.errstate(invalid="ignore"):
        next_w, _ = adam(w_dead.copy(), dw_dead, {"epsilon": eps})
        scores_after = np.maximum(np.ones((4, 3)) @ next_w, 0)
    print(
        f"epsilon {eps:g}: the dead unit's weights after one step {next_w[:, 1]}, "
        f"nan scores after it {int(np.isnan(scores_after).sum())} of {scores_after.size}"
    )

# %% [markdown]
# ## 5 · The shape of the loss
#
# Parts 2 and 3 watched the loss over time. This part looks at the surface the steps cross,
# with `course.landscape`: the loss on the straight line from a start to where training
# ended (Goodfellow, Vinyals and Saxe 2015), and a training path on the plane of its own two
# principal directions (Li, Xu, Taylor, Studer and Goldstein 2018, section 7). Two
# predictions first (2 points), then the measurements.
#
# 1. `predicted_plateau_loss(num_classes)`: a network whose weights are so small that every
#    score is 0 (to the digits printed): its softmax loss, averaged over the batch, with
#    `num_classes` classes. Below: the 10 digits, from part 2's start of 0.01.
# 2. `predicted_adam_first_step(learning_rate, num_params)`: Adam's first update (t = 1,
#    from m = v = 0) of `num_params` parameters, each of whose gradients is far larger than
#    $\epsilon$ (take $\epsilon$ as 0): the length of the whole step, the Euclidean norm of
#    the new weights minus the old, all parameters together. Below: part 2's two starts, at
#    Adam's default rate of $10^{-3}$.


# %% nbgrader={"grade": false, "grade_id": "landscape_predictions_solution", "locked": false, "schema_version": 3, "solution": true}
def predicted_plateau_loss(num_classes):
    """The softmax loss, averaged over the batch, when every score is 0."""
    ### BEGIN SOLUTION
    return np.log(num_classes)
    ### END SOLUTION


def predicted_adam_first_step(learning_rate, num_params):
    """The norm of Adam's first step over num_params parameters, epsilon taken as 0."""
    ### BEGIN SOLUTION
    return learning_rate * np.sqrt(num_params)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "landscape_predictions", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Hidden check (2 points): each prediction within 1%, on settings you do not see.
### BEGIN HIDDEN TESTS
from course.grading import check

check("landscape_predictions", globals())
### END HIDDEN TESTS

# %% [markdown]
# ### A plateau at the start
#
# Part 2's two networks of six hidden layers, each drawn on the line from its start
# ($a = 0$) to its weights after 8 epochs of SGD ($a = 1$), and half as far again on either
# side. A line is one direction out of as many as the network has parameters (printed): it
# shows whether the start and the end are joined by a descent, not the path training took.

# %%
fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for scheme, start in starts.items():
    loss = model_loss(trained[scheme], X_train, y_train)
    line = interpolation(loss, start, trained[scheme].params)
    ax.plot(line.alphas, line.losses, marker=".", label=f"weights {scheme}")
    lowest = int(np.argmin(line.losses))
    print(
        f"weights {scheme}: loss {loss(start):.4f} at the start, "
        f"{loss(trained[scheme].params):.4f} after training; lowest on the line "
        f"{line.losses[lowest]:.4f}, at a = {line.alphas[lowest]:.2f}"
    )
print(f"you predicted {predicted_plateau_loss(10):.4f} on the plateau")
print(f"one line through {flatten(start).size} parameters")
ax.axvline(0, color="gray", lw=0.8)
ax.axvline(1, color="gray", lw=0.8)
ax.set(
    xlabel="a: (1 - a) start + a trained",
    ylabel="training loss",
    title="From the start to the trained weights: a plateau, or a descent",
)
ax.legend()
plt.show()

# %% [markdown]
# At 0.01 every score is tiny, so the loss sits at your prediction 1 all along the line:
# eight epochs of SGD did not leave the plateau. (In the last digit: the output biases can
# learn how often each digit occurs, which lowers the plateau to the entropy of the labels,
# a hair below $\log 10$.) From He's start the same line falls to the trained weights and
# beyond them, to its lowest point past $a = 1$ (printed): eight epochs stopped short of the
# bottom of this line.
#
# ### Steps on a plateau
#
# SGD's step is the rate times the gradient, so on a plateau it is as flat as the plateau.
# Adam divides each gradient by its own running size: its first step is as long on a
# plateau as on a slope, if each gradient is far larger than $\epsilon$. Measured at part
# 2's two starts, on the whole training set: SGD's first step (rate 0.05, as in part 2) and
# Adam's (rate $10^{-3}$), beside your prediction 2 for the parameters whose gradient is not
# exactly 0 (a ReLU that fires for no example, or a pixel that is 0 in every image,
# passes no gradient to those weights).

# %%
for scheme in starts:
    model = deep_net(scheme)  # part 2's start again: the same seed
    _, grads = model.loss(X_train, y_train)
    gradient = flatten(grads)
    moves = {n: adam(W, grads[n], {"learning_rate": 1e-3})[0] - W for n, W in model.params.items()}
    adam_step = np.linalg.norm(flatten(moves))
    moving = int(np.count_nonzero(gradient))
    below = np.mean(np.abs(gradient[gradient != 0]) < 1e-8)
    weights = np.concatenate([grads[n].ravel() for n in grads if n.startswith("W")])
    predicted = predicted_adam_first_step(1e-3, moving)
    print(
        f"weights {scheme}: SGD's first step {0.05 * np.linalg.norm(gradient):.2e}; Adam's "
        f"{adam_step:.4f}, you predicted {predicted:.4f} for its {moving} parameters with a "
        f"gradient (measured / predicted {adam_step / predicted:.3f}); {below:.1%} of those "
        f"gradients are below epsilon (1e-8), the median |dW| of the weight matrices is "
        f"{np.median(np.abs(weights)):.1e}"
    )

# %% [markdown]
# From He's start Adam's step is your prediction 2 within a thousandth (the ratio printed:
# $\epsilon$ shortens each step a little). At 0.01 most gradients are below $\epsilon$,
# and there $\epsilon$, not the gradient, sets the step: $\hat m / (\sqrt{\hat v} +
# \epsilon)$ is far below 1. Adam's first step is then shorter than predicted, though
# still far longer than SGD's: $\epsilon$ leaks into the escape from a plateau, as it did
# into dead units in part 4.
#
# ### Two paths across one network's landscape
#
# Part 3 trained one network (three hidden layers, He's start) with each rule for 10
# epochs and kept its weights at every epoch. Below, SGD's path and Adam's, each on the
# plane of its own two principal directions, centred on its trained weights (at (0, 0)),
# with the training loss over that plane and along the path. What these pictures cannot
# show: each plane is one of countless planes through the trained weights, the one that
# holds as much of that path as two directions can (the share is in each title); what the
# path does outside it is not drawn; and the two planes, centred on two different
# endpoints, are two different slices, so their contours are not comparable point for
# point. The axes' scale is the path's own extent.

# %%
for name in ("sgd", "adam"):
    model, path = descents[name]
    trajectory, _, _ = path_landscape(model_loss(model, X_train, y_train), path, resolution=21)
    steps = np.diff(np.stack([flatten(p) for p in path]), axis=0)
    print(
        f"{name}: {trajectory.explained_variance.sum():.1%} of the path's variance on its plane; "
        f"it ended {np.linalg.norm(flatten(path[-1]) - flatten(path[0])):.2f} from its start, "
        f"after {np.linalg.norm(steps, axis=1).sum():.2f} of epoch-to-epoch steps"
    )
plt.show()

# %% [markdown]
# Both paths lie almost wholly in their planes (the shares printed), so what a plane can
# show of them, it shows; the share is the whole path's, and its last steps, the shortest,
# near the trained weights, can lie further out of the plane than it suggests. Compare how far each went from its start, and how its path
# bends: the update rule, not only the network, decides which part of the landscape
# training visits.

# %% [markdown]
# ## What to take away
#
# - Initialise for the activation: He for ReLU holds the activations steady. For tanh,
#   Xavier's $\sqrt{1 / n_\text{in}}$ still lets them shrink layer by layer (printed in
#   part 1: the standard deviation at layer 1 against layer 10); PyTorch's gain $5/3$ holds
#   them. At depth, a scale off by a factor of a few compounds into a network that cannot
#   learn.
# - An update rule is a set of hyper-parameters and state, and every one of them leaks into
#   the loss: momentum's valley crossing, RMSProp's per-coordinate scale, Adam's bias
#   correction, where weight decay enters, how the learning rate moves over time.
# - Watch the update-to-weight ratio while training: about $10^{-3}$ for SGD; under Adam
#   it mostly restates $\eta / \text{RMS}(W)$.
# - Too small a start is a plateau at $\log C$ (part 5): SGD's step is as small as its
#   slope, and Adam's first step, $\eta \sqrt{n}$ where gradients dwarf $\epsilon$, is
#   set by $\epsilon$ where they do not. A slice of the loss is one line or plane out of
#   as many dimensions as there are parameters: it shows a path, not the whole surface.
# - Start from random weights (a constant start keeps units identical), and keep Adam's
#   $\epsilon$: a unit whose gradient is exactly 0 is $0/0$ without it.
