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
# | 0 · Your layers from 03 | paste them (checked through the network) | 0 |
# | 1 · Initialisation | `weight_init` | 2 |
# | 2 · A deep network | `FullyConnectedNet` | 4 |
# | 3 · Update rules | `sgd_momentum`, `rmsprop`, `adam`, `adamw` | 9 |
# | 4 · Ablations | nothing new: each leak, measured | 0 |
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
from course.gradcheck import numerical_gradient, rel_error
from course.plots import contour_paths, layer_histograms, loss_curve
from course.training import accuracy, fit

# %% [markdown]
# ## 0 · Your layers from 03
#
# Paste your `affine_forward`, `affine_backward`, `relu_forward`, `relu_backward` and
# `softmax_loss` from assignment 03 here (the API is the same). They are not graded again
# on their own, but `FullyConnectedNet` is built from them.


# %% nbgrader={"grade": false, "grade_id": "layers_from_03", "locked": false, "schema_version": 3, "solution": true}
### BEGIN SOLUTION
def affine_forward(x, w, b):
    return x.reshape(x.shape[0], -1) @ w + b, (x, w, b)


def affine_backward(dout, cache):
    x, w, b = cache
    return (dout @ w.T).reshape(x.shape), x.reshape(x.shape[0], -1).T @ dout, dout.sum(axis=0)


def relu_forward(x):
    return np.maximum(0, x), x


def relu_backward(dout, cache):
    return dout * (cache > 0)


def softmax_loss(x, y):
    rows = np.arange(x.shape[0])
    shifted = x - x.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    dx = np.exp(log_probs)
    dx[rows, y] -= 1
    return -log_probs[rows, y].mean(), dx / x.shape[0]


### END SOLUTION

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
# - **He** (He et al., 2015): ReLU zeroes half of its inputs and so halves the variance;
#   $\sigma = \sqrt{2 / n_\text{in}}$ makes up for it.
#
# ### Exercise 1.1: `weight_init`
#
# Return a (fan_in, fan_out) matrix of normal draws with mean 0 and the scheme's standard
# deviation: `"xavier"`, `"he"`, or a number (that standard deviation). Draw from the
# generator `rng` you are given, never from NumPy's global one: the caller decides the
# randomness. An unknown scheme name is a `ValueError`.


# %% nbgrader={"grade": false, "grade_id": "weight_init_solution", "locked": false, "schema_version": 3, "solution": true}
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
for scheme, std in (("xavier", np.sqrt(1 / 400)), ("he", np.sqrt(2 / 400)), (0.05, 0.05)):
    W = weight_init(400, 300, scheme, np.random.default_rng(0))
    print(f"{scheme!s:>7}: shape {W.shape}, std {W.std():.4f} (expect {std:.4f})")
    assert W.shape == (400, 300) and abs(W.std() / std - 1) < 0.02
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
# Xavier holds tanh steady and He holds ReLU steady; the others vanish or blow up within a
# few layers. The histograms say the same with shapes: tanh units with too large weights
# saturate at ±1 (where their gradient is 0), and with too small weights every unit
# collapses to 0.

# %%
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
    ax.legend()
    plt.show()


_ = widgets.interact(
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
# Normalisation and dropout come in assignment 05: for now the constructor refuses them
# with a clear error (that part is written for you).
#
# ### Exercise 2.1: `FullyConnectedNet`


# %% nbgrader={"grade": false, "grade_id": "fully_connected_net_solution", "locked": false, "schema_version": 3, "solution": true}
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
                f"normalization={normalization!r}: normalisation arrives in assignment 05; "
                "use normalization=None"
            )
        if dropout_keep_ratio != 1:
            raise NotImplementedError(
                f"dropout_keep_ratio={dropout_keep_ratio!r}: dropout arrives in assignment 05; "
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

X_small, y_small = np.random.default_rng(3).standard_normal((6, 5)), np.array([0, 1, 2, 1, 0, 2])
for reg in (0.0, 0.5):
    small = FullyConnectedNet([4, 7, 6], 5, 3, reg=reg, weight_scale=0.5, dtype=np.float64, seed=4)
    _, grads = small.loss(X_small, y_small)
    worst = 0.0
    for name in small.params:

        def f(v, name=name, net=small):
            saved, net.params[name] = net.params[name], v
            value = net.loss(X_small, y_small)[0]
            net.params[name] = saved
            return value

        worst = max(worst, rel_error(grads[name], numerical_gradient(f, small.params[name].copy())))
    print(f"reg = {reg}: worst relative error over {len(grads)} gradients {worst:.1e}")
    assert worst < 1e-6

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
# from 03:


# %%
def sgd(w, dw, config=None):
    config = {} if config is None else config
    config.setdefault("learning_rate", 1e-2)
    return w - config["learning_rate"] * dw, config


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


fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for scheme in (1e-2, "he"):
    model = deep_net(scheme)
    hist = fit(model, sgd, X_train, y_train, X_val, y_val, epochs=8, config={"learning_rate": 0.05})
    ax.plot(hist["loss"], label=f"weights {scheme}: validation accuracy {hist['val_acc'][-1]:.0%}")
ax.set(xlabel="step", ylabel="loss", title="Six hidden layers: the start decides whether it learns")
ax.legend()
plt.show()

# %% [markdown]
# With weights of 0.01 the signal reaching the last layer is about $(0.01^2 \cdot 100 /
# 2)^{3} \approx 10^{-10}$ of its input's variance; the gradients reaching the first layers
# are as small. The loss sits at $\log 10$ and nothing trains. Same code, same data, same
# learning rate: only the first draw differs.
#
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
w, dw = np.array([1.0]), np.array([2.0])
for rule, expected in ((sgd_momentum, 0.98), (rmsprop, 0.9), (adam, 0.999), (adamw, 0.99899)):
    next_w, config = rule(w.copy(), dw, None)
    print(f"{rule.__name__:>13}: next w {next_w[0]:.8f} (expect {expected})")
    print(f"{'':>13}  config keys {sorted(config)}")
    assert abs(next_w[0] - expected) < 1e-7
assert adam(w, dw, None)[1]["t"] == 1, "t counts the steps taken"
_, config = sgd_momentum(w, dw, None)
_, config = sgd_momentum(w, dw, config)
assert abs(config["velocity"][0] - (0.9 * -0.02 - 0.02)) < 1e-12, "the velocity carries over"

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
        f"momentum {momentum}": trajectory(
            sgd_momentum, {"learning_rate": lr, "momentum": momentum}
        ),
        f"adam, betas ({beta1}, {beta2})": trajectory(
            adam, {"learning_rate": lr, "beta1": beta1, "beta2": beta2}
        ),
    }
    contour_paths(bowl, explored, "Your settings")
    plt.show()


_ = widgets.interact(
    explore_rules,
    log10_learning_rate=widgets.FloatSlider(value=-1.0, min=-3, max=0, step=0.1),
    momentum=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01),
    beta1=widgets.FloatSlider(value=0.9, min=0.0, max=0.99, step=0.01),
    beta2=widgets.FloatSlider(value=0.999, min=0.9, max=0.9999, step=0.0001, readout_format=".4f"),
)

# %% [markdown]
# ### The same network under each rule
#
# Three hidden layers of 100 on the digits, He initialisation, 10 epochs, each rule with a
# learning rate that suits it.

# %%
rules = {
    "sgd": (sgd, {"learning_rate": 0.05}),
    "sgd_momentum": (sgd_momentum, {"learning_rate": 0.01}),
    "rmsprop": (rmsprop, {"learning_rate": 1e-3}),
    "adam": (adam, {"learning_rate": 1e-3}),
    "adamw": (adamw, {"learning_rate": 1e-3}),
}
fig, ax = plt.subplots(figsize=(7.5, 3.6), layout="constrained")
for name, (rule, config) in tqdm(rules.items(), desc="rules"):
    model = deep_net("he", hidden_dims=(100, 100, 100))
    hist = fit(model, rule, X_train, y_train, X_val, y_val, epochs=10, config=config)
    ax.plot(hist["loss"], label=f"{name}: validation {hist['val_acc'][-1]:.1%}", lw=1)
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
# decayed hard. Decoupled decay shrinks every weight at the same rate. Train both with the
# same $\lambda$ and compare the weights' sizes and the validation accuracy:


# %%
def adam_with_l2(w, dw, config=None):
    config = {} if config is None else config
    return adam(w, dw + config.get("weight_decay", 1e-2) * w, config)


fig, ax = plt.subplots(figsize=(7, 3.4), layout="constrained")
for name, rule in (("Adam + L2 in the gradient", adam_with_l2), ("AdamW (decoupled)", adamw)):
    model = deep_net("he", hidden_dims=(100, 100))
    config = {"learning_rate": 2e-3, "weight_decay": 0.1}
    hist = fit(model, rule, X_train, y_train, X_val, y_val, epochs=15, config=config)
    norms = [np.linalg.norm(model.params[f"W{i}"]) for i in (1, 2, 3)]
    ax.plot(
        hist["loss"],
        label=f"{name}: |W| per layer {np.round(norms, 1)}, val {hist['val_acc'][-1]:.1%}",
    )
ax.set(xlabel="step", ylabel="loss", yscale="log", title="The same decay, applied two ways")
ax.legend(fontsize=8)
plt.show()


# %% [markdown]
# ### Warm-up and a cosine schedule
#
# A large learning rate is most dangerous at the start, when Adam's statistics are
# young and the weights are random; late in training, a smaller one settles into a
# minimum. A linear **warm-up** followed by a **cosine decay** does both. Four hidden
# layers, Adam at a peak learning rate of 0.05: held constant, the loss jumps early and
# never settles; warmed up and decayed, the same peak trains.


# %%
def warmup_cosine(step, total, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * peak * (1 + np.cos(np.pi * min(1.0, progress)))


epochs, batch, peak = 15, 100, 5e-2
total = epochs * -(-len(X_train) // batch)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.4), layout="constrained")
for name, schedule in (
    (f"constant {peak:g}", lambda s: peak),
    (f"warm-up + cosine, peak {peak:g}", lambda s: warmup_cosine(s, total, peak, total // 10)),
):
    model = deep_net("he", hidden_dims=(100,) * 4)
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
    ax1.plot(hist["loss"], label=f"{name}: validation {hist['val_acc'][-1]:.1%}", lw=1)
    ax2.plot([schedule(s) for s in range(total)], label=name)
ax1.set(xlabel="step", ylabel="loss", yscale="log", title="Adam at a high learning rate")
ax2.set(xlabel="step", ylabel="learning rate", title="The schedules")
ax1.legend(fontsize=8)
plt.show()

# %% [markdown]
# ### The update-to-weight ratio
#
# A diagnostic that needs no validation set: how much each step changes each weight
# matrix, relative to its size. Around $10^{-3}$ is healthy; $10^{-1}$ means the weights
# are thrown around, $10^{-5}$ that they barely move.

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
axes[0].set_ylabel("|update| / |W|")
axes[0].legend()
plt.show()

# %% [markdown]
# ## What to take away
#
# - Initialise for the activation: Xavier for tanh, He for ReLU. At depth, a scale off by a
#   factor of a few compounds into a network that cannot learn.
# - An update rule is a set of hyper-parameters and state, and every one of them leaks into
#   the loss: momentum's valley crossing, RMSProp's per-coordinate scale, Adam's bias
#   correction, where weight decay enters, how the learning rate moves over time.
# - Watch the update-to-weight ratio while training: about $10^{-3}$.
