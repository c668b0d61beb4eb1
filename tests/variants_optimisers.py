"""Student variants of assignment 04 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, Convention, Mutant, m

ASSIGNMENT, NOTEBOOK = "04_optimisers", "optimisers"

INIT, NET = "weight_init_solution", "fully_connected_net_solution"
MOMENTUM, RMSPROP, ADAM, ADAMW = (
    "sgd_momentum_solution",
    "rmsprop_solution",
    "adam_solution",
    "adamw_solution",
)
LANDSCAPE = "landscape_predictions_solution"

MUTANTS = [
    # weight_init
    m(
        "init: He with Xavier's factor",
        INIT,
        {"weight_init"},
        ('"he": np.sqrt(2.0 / fan_in)', '"he": np.sqrt(1.0 / fan_in)'),
    ),
    m(
        "init: Glorot's average of fans for xavier",
        INIT,
        {"weight_init"},
        ('"xavier": np.sqrt(1.0 / fan_in)', '"xavier": np.sqrt(2.0 / (fan_in + fan_out))'),
    ),
    m(
        "init: uniform draws with the right std",
        INIT,
        {"weight_init"},
        (
            "return rng.normal(0.0, std, size=(fan_in, fan_out))",
            "return rng.uniform(-std * 3**0.5, std * 3**0.5, size=(fan_in, fan_out))",
        ),
    ),
    m(
        "init: NumPy's global generator",
        INIT,
        {"weight_init"},
        (
            "return rng.normal(0.0, std, size=(fan_in, fan_out))",
            "return np.random.normal(0.0, std, size=(fan_in, fan_out))",
        ),
    ),
    m(
        "init: a number read as a variance",
        INIT,
        {"weight_init"},
        ("std = float(scheme)", "std = float(scheme) ** 0.5"),
    ),
    # FullyConnectedNet
    m(
        "net: relu after the last layer too",
        NET,
        {"fully_connected_net"},
        (
            "        if y is None:\n            return scores\n",
            "        scores = np.maximum(scores, 0)\n"
            "        if y is None:\n            return scores\n",
        ),
    ),
    m(
        "net: the last layer not regularised",
        NET,
        {"fully_connected_net"},
        (
            "for layer in range(1, self.num_layers + 1):\n            W = ",
            "for layer in range(1, self.num_layers):\n            W = ",
        ),
    ),
    m(
        "net: dtype ignored",
        NET,
        {"fully_connected_net"},
        (").astype(dtype)", ")"),
        ("np.zeros(fan_out, dtype=dtype)", "np.zeros(fan_out)"),
    ),
    m(
        "net: a fixed weight scale",
        NET,
        {"fully_connected_net"},
        ("weight_scale * rng.standard_normal", "1e-2 * rng.standard_normal"),
    ),
    m(
        "net: the seed ignored",
        NET,
        {"fully_connected_net"},
        ("rng = np.random.default_rng(seed)", "rng = np.random.default_rng()"),
    ),
    m(
        "net: relu backward skipped",
        NET,
        {"fully_connected_net"},
        ("dout = relu_backward(dout, relu_cache)", "dout = dout"),
    ),
    # sgd_momentum
    m(
        "momentum: velocity not stored",
        MOMENTUM,
        {"sgd_momentum"},
        ('    config["velocity"] = v\n', ""),
    ),
    m(
        "momentum: steps with the old velocity",
        MOMENTUM,
        {"sgd_momentum"},
        (
            'v = config["momentum"] * v - config["learning_rate"] * dw\n    next_w = w + v',
            'next_w = w + v\n    v = config["momentum"] * v - config["learning_rate"] * dw',
        ),
    ),
    m(
        "momentum: default 0.99",
        MOMENTUM,
        {"sgd_momentum"},
        ('config.setdefault("momentum", 0.9)', 'config.setdefault("momentum", 0.99)'),
    ),
    m(
        "momentum: learning rate applied twice",
        MOMENTUM,
        {"sgd_momentum"},
        ("next_w = w + v", 'next_w = w + config["learning_rate"] * v'),
    ),
    # rmsprop
    m(
        "rmsprop: no square root",
        RMSPROP,
        {"rmsprop"},
        ("(np.sqrt(cache) + config", "(cache + config"),
    ),
    m(
        "rmsprop: squares not weighted by 1 - decay",
        RMSPROP,
        {"rmsprop"},
        ('(1 - config["decay_rate"]) * dw**2', "dw**2"),
    ),
    m(
        "rmsprop: cache not stored",
        RMSPROP,
        {"rmsprop"},
        ('    config["cache"] = cache\n', ""),
    ),
    m(
        "rmsprop: default decay 0.9",
        RMSPROP,
        {"rmsprop"},
        ('config.setdefault("decay_rate", 0.99)', 'config.setdefault("decay_rate", 0.9)'),
    ),
    # adam
    m(
        "adam: t incremented after the correction",
        ADAM,
        {"adam"},
        ('    config["t"] += 1\n    t, beta1', "    t, beta1"),
        ("    next_w = w - config", '    config["t"] += 1\n    next_w = w - config'),
    ),
    m(
        "adam: no bias correction",
        ADAM,
        {"adam"},
        ('m_hat = config["m"] / (1 - beta1**t)', 'm_hat = config["m"]'),
        ('v_hat = config["v"] / (1 - beta2**t)', 'v_hat = config["v"]'),
    ),
    m(
        "adam: v averages dw, not dw**2",
        ADAM,
        {"adam"},
        ("(1 - beta2) * dw**2", "(1 - beta2) * np.abs(dw)"),
    ),
    m(
        "adam: beta1 where beta2 belongs",
        ADAM,
        {"adam"},
        ('v_hat = config["v"] / (1 - beta2**t)', 'v_hat = config["v"] / (1 - beta1**t)'),
    ),
    # adamw
    m(
        "adamw: decay added to the gradient (L2)",
        ADAMW,
        {"adamw"},
        ('+ config["weight_decay"] * w\n', "\n"),
        ('config["t"] += 1\n', 'config["t"] += 1\n    dw = dw + config["weight_decay"] * w\n'),
    ),
    m(
        "adamw: decay not scaled by the learning rate",
        ADAMW,
        {"adamw"},
        (
            'next_w = w - config["learning_rate"] * step',
            'next_w = w - config["learning_rate"] * (step - config["weight_decay"] * w)'
            ' - config["weight_decay"] * w',
        ),
    ),
    m(
        "adamw: default decay 1e-4",
        ADAMW,
        {"adamw"},
        ('config.setdefault("weight_decay", 1e-2)', 'config.setdefault("weight_decay", 1e-4)'),
    ),
    m(
        "adamw: no bias correction",
        ADAMW,
        {"adamw"},
        ('m_hat = config["m"] / (1 - beta1**t)', 'm_hat = config["m"]'),
    ),
    # landscape predictions (part 5)
    m(
        "plateau: log(C - 1), the other classes' count",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return np.log(num_classes)", "return np.log(num_classes - 1)"),
    ),
    m(
        "plateau: log(C + 1), one class too many (review rev53)",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return np.log(num_classes)", "return np.log(num_classes + 1)"),
    ),
    m(
        "adam step: 2% long (review rev53)",
        LANDSCAPE,
        {"landscape_predictions"},
        (
            "return learning_rate * np.sqrt(num_params)",
            "return 1.02 * learning_rate * np.sqrt(num_params)",
        ),
    ),
    m(
        "plateau: in bits, log2(C)",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return np.log(num_classes)", "return np.log2(num_classes)"),
    ),
    m(
        "plateau: the probability 1 / C for the loss",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return np.log(num_classes)", "return 1 / num_classes"),
    ),
    m(
        "plateau: the digits' log(10) whatever the classes",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return np.log(num_classes)", "return np.log(10)"),
    ),
    m(
        "adam step: each parameter's lr summed, lr * n",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return learning_rate * np.sqrt(num_params)", "return learning_rate * num_params"),
    ),
    m(
        "adam step: one parameter's, lr",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return learning_rate * np.sqrt(num_params)", "return learning_rate"),
    ),
    m(
        "adam step: without bias correction, (1 - beta1) / sqrt(1 - beta2) longer",
        LANDSCAPE,
        {"landscape_predictions"},
        (
            "return learning_rate * np.sqrt(num_params)",
            "return learning_rate * np.sqrt(num_params) * 0.1 / np.sqrt(0.001)",
        ),
    ),
    m(
        "adam step: the notebook's 0.2329 whatever the settings",
        LANDSCAPE,
        {"landscape_predictions"},
        ("return learning_rate * np.sqrt(num_params)", "return 0.2329"),
    ),
]


# Update rules as public CS231n solutions write them (w += ...; next_w = w): the caller's
# weights move behind its back. The config's own state may change in place; w and dw not.
MOMENTUM_W_IN_PLACE = """\
def sgd_momentum(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config.get("velocity", np.zeros_like(w))
    v = config["momentum"] * v - config["learning_rate"] * dw
    w += v
    next_w = w
    config["velocity"] = v
    return next_w, config
"""

RMSPROP_W_IN_PLACE = """\
def rmsprop(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("cache", np.zeros_like(w))
    config["cache"] = config["decay_rate"] * config["cache"] + (1 - config["decay_rate"]) * dw**2
    w -= config["learning_rate"] * dw / (np.sqrt(config["cache"]) + config["epsilon"])
    next_w = w
    return next_w, config
"""

RMSPROP_DW_IN_PLACE = """\
def rmsprop(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("cache", np.zeros_like(w))
    config["cache"] = config["decay_rate"] * config["cache"] + (1 - config["decay_rate"]) * dw**2
    dw /= np.sqrt(config["cache"]) + config["epsilon"]
    return w - config["learning_rate"] * dw, config
"""

ADAM_W_IN_PLACE = """\
def adam(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-3)
    config.setdefault("beta1", 0.9)
    config.setdefault("beta2", 0.999)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    config.setdefault("t", 0)
    config["t"] += 1
    config["m"] = config["beta1"] * config["m"] + (1 - config["beta1"]) * dw
    config["v"] = config["beta2"] * config["v"] + (1 - config["beta2"]) * dw**2
    mt = config["m"] / (1 - config["beta1"] ** config["t"])
    vt = config["v"] / (1 - config["beta2"] ** config["t"])
    w -= config["learning_rate"] * mt / (np.sqrt(vt) + config["epsilon"])
    next_w = w
    return next_w, config
"""

ADAMW_W_IN_PLACE = """\
def adamw(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("weight_decay", 1e-2)
    w *= 1 - config.get("learning_rate", 1e-3) * config["weight_decay"]
    return adam(w, dw, config)
"""

MUTANTS += [
    Mutant(
        "momentum: w += v in place",
        MOMENTUM,
        (),
        frozenset({"sgd_momentum"}),
        code=MOMENTUM_W_IN_PLACE,
    ),
    Mutant(
        "rmsprop: w -= ... in place", RMSPROP, (), frozenset({"rmsprop"}), code=RMSPROP_W_IN_PLACE
    ),
    Mutant(
        "rmsprop: dw /= ... in place", RMSPROP, (), frozenset({"rmsprop"}), code=RMSPROP_DW_IN_PLACE
    ),
    Mutant("adam: w -= ... in place", ADAM, (), frozenset({"adam"}), code=ADAM_W_IN_PLACE),
    Mutant("adamw: w shrunk in place", ADAMW, (), frozenset({"adamw"}), code=ADAMW_W_IN_PLACE),
    # epsilon: a missing one is 0 / 0 on a dead unit; a hard-coded one ignores config
    m(
        "rmsprop: no epsilon",
        RMSPROP,
        {"rmsprop"},
        ('(np.sqrt(cache) + config["epsilon"])', "np.sqrt(cache)"),
    ),
    m(
        "rmsprop: epsilon hard-coded, config's ignored",
        RMSPROP,
        {"rmsprop"},
        ('(np.sqrt(cache) + config["epsilon"])', "(np.sqrt(cache) + 1e-8)"),
    ),
    m(
        "adam: no epsilon",
        ADAM,
        {"adam"},
        ('(np.sqrt(v_hat) + config["epsilon"])', "np.sqrt(v_hat)"),
    ),
    m(
        "adam: epsilon hard-coded, config's ignored",
        ADAM,
        {"adam"},
        ('(np.sqrt(v_hat) + config["epsilon"])', "(np.sqrt(v_hat) + 1e-8)"),
    ),
    # Per-layer statistics: one layer at the wrong scale
    m(
        "net: the last layer at a fixed scale",
        NET,
        {"fully_connected_net"},
        (
            '            self.params[f"W{layer}"] = (\n                weight_scale * rng',
            "            scale = weight_scale if layer < self.num_layers else 1e-2\n"
            '            self.params[f"W{layer}"] = (\n                scale * rng',
        ),
    ),
]

EXPECTED_SURVIVORS: set[str] = set()

INIT_STANDARD_NORMAL = """\
def weight_init(fan_in, fan_out, scheme, rng):
    gains = {"xavier": 1.0, "he": 2.0}
    std = np.sqrt(gains[scheme] / fan_in) if scheme in gains else scheme
    return std * rng.standard_normal((fan_in, fan_out))
"""

INIT_MATCH = """\
def weight_init(fan_in, fan_out, scheme, rng):
    match scheme:
        case "xavier":
            std = (1 / fan_in) ** 0.5
        case "he":
            std = (2 / fan_in) ** 0.5
        case float() | int():
            std = scheme
        case _:
            raise ValueError(scheme)
    return rng.normal(size=(fan_in, fan_out)) * std
"""

NET_LIST_OF_LAYERS = '''\
class FullyConnectedNet:
    """Layers described in a list; weights drawn with rng.normal."""

    def __init__(self, hidden_dims, input_dim, num_classes, dropout_keep_ratio=1,
                 normalization=None, reg=0.0, weight_scale=1e-2, dtype=np.float32, seed=None):
        if normalization is not None or dropout_keep_ratio != 1:
            raise NotImplementedError("normalisation and dropout come in assignment 05")
        self.reg, self.dtype = reg, dtype
        rng = np.random.default_rng(seed)
        sizes = [input_dim] + list(hidden_dims) + [num_classes]
        self.num_layers = len(sizes) - 1
        self.params = {}
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
            self.params["W%d" % i] = rng.normal(0.0, weight_scale, (a, b)).astype(dtype)
            self.params["b%d" % i] = np.zeros(b).astype(dtype)

    def loss(self, X, y=None):
        h = X.astype(self.dtype).reshape(len(X), -1)
        inputs, pre = [], []
        for i in range(1, self.num_layers + 1):
            inputs.append(h)
            z = h @ self.params["W%d" % i] + self.params["b%d" % i]
            pre.append(z)
            h = np.maximum(z, 0) if i < self.num_layers else z
        if y is None:
            return h
        n = h.shape[0]
        top = h.max(axis=1, keepdims=True)
        log_p = h - top - np.log(np.exp(h - top).sum(axis=1, keepdims=True))
        loss = -log_p[np.arange(n), y].sum() / n
        dz = np.exp(log_p)
        dz[np.arange(n), y] -= 1
        dz /= n
        grads = {}
        for i in range(self.num_layers, 0, -1):
            W = self.params["W%d" % i]
            grads["W%d" % i] = inputs[i - 1].T @ dz + self.reg * W
            grads["b%d" % i] = dz.sum(axis=0)
            loss += 0.5 * self.reg * (W**2).sum()
            if i > 1:
                dz = (dz @ W.T) * (pre[i - 2] > 0)
        return loss, grads
'''

NET_RECURSIVE = '''\
class FullyConnectedNet:
    """Built on the layers from 03, walking a list of (kind, cache) pairs backwards."""

    def __init__(self, hidden_dims, input_dim, num_classes, dropout_keep_ratio=1,
                 normalization=None, reg=0.0, weight_scale=1e-2, dtype=np.float32, seed=None):
        if normalization is not None:
            raise ValueError("normalization must be None in assignment 04")
        if dropout_keep_ratio != 1:
            raise ValueError("dropout_keep_ratio must be 1 in assignment 04")
        generator = np.random.default_rng(seed)
        dims = [input_dim, *hidden_dims, num_classes]
        self.reg, self.dtype, self.num_layers = reg, dtype, len(dims) - 1
        self.params = {}
        for layer in range(self.num_layers):
            W = generator.standard_normal((dims[layer], dims[layer + 1])) * weight_scale
            self.params[f"W{layer + 1}"] = W.astype(dtype)
            self.params[f"b{layer + 1}"] = np.zeros(dims[layer + 1], dtype)

    def loss(self, X, y=None):
        tape, out = [], X.astype(self.dtype)
        for layer in range(1, self.num_layers + 1):
            out, cache = affine_forward(out, self.params[f"W{layer}"], self.params[f"b{layer}"])
            tape.append(("affine", layer, cache))
            if layer < self.num_layers:
                out, cache = relu_forward(out)
                tape.append(("relu", layer, cache))
        if y is None:
            return out
        data_loss, dout = softmax_loss(out, y)
        weights = [self.params[f"W{layer}"] for layer in range(1, self.num_layers + 1)]
        loss = data_loss + 0.5 * self.reg * sum(np.sum(W**2) for W in weights)
        grads = {}
        for kind, layer, cache in reversed(tape):
            if kind == "relu":
                dout = relu_backward(dout, cache)
            else:
                dout, dW, db = affine_backward(dout, cache)
                grads[f"W{layer}"] = dW + self.reg * self.params[f"W{layer}"]
                grads[f"b{layer}"] = db
        return loss, grads
'''

MOMENTUM_IN_PLACE = """\
def sgd_momentum(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config.setdefault("velocity", np.zeros_like(w))
    v *= config["momentum"]
    v -= config["learning_rate"] * dw
    return w + v, config
"""

MOMENTUM_DICT = """\
def sgd_momentum(w, dw, config=None):
    config = {} if config is None else config
    defaults = {"learning_rate": 1e-2, "momentum": 0.9, "velocity": np.zeros(w.shape)}
    for key, value in defaults.items():
        config.setdefault(key, value)
    config["velocity"] = config["momentum"] * config["velocity"] - config["learning_rate"] * dw
    return w + config["velocity"], config
"""

RMSPROP_EPS_INSIDE = '''\
def rmsprop(w, dw, config=None):
    """epsilon inside the square root, as some libraries write it."""
    config = {} if config is None else config
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    config.setdefault("cache", np.zeros_like(w))
    rho = config["decay_rate"]
    config["cache"] = rho * config["cache"] + (1 - rho) * np.square(dw)
    return w - config["learning_rate"] * dw / np.sqrt(config["cache"] + config["epsilon"]), config
'''

RMSPROP_IN_PLACE = """\
def rmsprop(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("decay_rate", 0.99)
    config.setdefault("epsilon", 1e-8)
    cache = config.setdefault("cache", np.zeros_like(w))
    cache *= config["decay_rate"]
    cache += (1 - config["decay_rate"]) * dw * dw
    return w - config["learning_rate"] * dw / (cache**0.5 + config["epsilon"]), config
"""

ADAM_KINGMA = '''\
def adam(w, dw, config=None):
    """Kingma and Ba's efficient form: the corrections folded into the step size."""
    if config is None:
        config = {}
    for key, value in (("learning_rate", 1e-3), ("beta1", 0.9), ("beta2", 0.999),
                       ("epsilon", 1e-8), ("t", 0)):
        config.setdefault(key, value)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    b1, b2 = config["beta1"], config["beta2"]
    config["t"] = t = config["t"] + 1
    config["m"] = b1 * config["m"] + (1 - b1) * dw
    config["v"] = b2 * config["v"] + (1 - b2) * dw**2
    step = config["learning_rate"] * np.sqrt(1 - b2**t) / (1 - b1**t)
    eps_hat = config["epsilon"] * np.sqrt(1 - b2**t)
    return w - step * config["m"] / (np.sqrt(config["v"]) + eps_hat), config
'''

ADAM_IN_PLACE = """\
def adam(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-3)
    config.setdefault("beta1", 0.9)
    config.setdefault("beta2", 0.999)
    config.setdefault("epsilon", 1e-8)
    m = config.setdefault("m", np.zeros_like(w))
    v = config.setdefault("v", np.zeros_like(w))
    config.setdefault("t", 0)
    config["t"] += 1
    m *= config["beta1"]
    m += (1 - config["beta1"]) * dw
    v *= config["beta2"]
    v += (1 - config["beta2"]) * dw**2
    m_hat = m / (1 - config["beta1"] ** config["t"])
    v_hat = v / (1 - config["beta2"] ** config["t"])
    return w - config["learning_rate"] * m_hat / (np.sqrt(v_hat) + config["epsilon"]), config
"""

ADAMW_VIA_ADAM = '''\
def adamw(w, dw, config=None):
    """Adam's step, then the decoupled decay on the weights it started from."""
    if config is None:
        config = {}
    config.setdefault("weight_decay", 1e-2)
    stepped, config = adam(w, dw, config)
    return stepped - config["learning_rate"] * config["weight_decay"] * w, config
'''

ADAMW_DECAY_FIRST = '''\
def adamw(w, dw, config=None):
    """Shrink first, then take Adam's step: the same update."""
    config = {} if config is None else config
    for key, value in {"learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
                       "weight_decay": 1e-2, "t": 0}.items():
        config.setdefault(key, value)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    lr = config["learning_rate"]
    shrunk = w * (1 - lr * config["weight_decay"])
    config["t"] += 1
    config["m"] = config["beta1"] * config["m"] + (1 - config["beta1"]) * dw
    config["v"] = config["beta2"] * config["v"] + (1 - config["beta2"]) * dw * dw
    m_hat = config["m"] / (1 - config["beta1"] ** config["t"])
    v_hat = config["v"] / (1 - config["beta2"] ** config["t"])
    return shrunk - lr * m_hat / (np.sqrt(v_hat) + config["epsilon"]), config
'''

# The plateau's loss from a softmax of zero scores, and Adam's first step in closed form.
LANDSCAPE_COMPUTED = """\
def predicted_plateau_loss(num_classes):
    probabilities = np.exp(np.zeros(num_classes)) / num_classes
    return float(-np.log(probabilities[0]))


def predicted_adam_first_step(learning_rate, num_params):
    return (learning_rate**2 * num_params) ** 0.5
"""

# Measured with the student's own adam on a gradient of mixed signs and sizes, far above
# epsilon: the step's length is the answer, not a formula.
LANDSCAPE_BY_ADAM = """\
def predicted_plateau_loss(num_classes):
    return -np.log(1.0 / num_classes)


def predicted_adam_first_step(learning_rate, num_params):
    w = np.zeros(num_params)
    dw = np.linspace(1.0, 3.0, num_params) * (-1.0) ** np.arange(num_params)
    next_w, _ = adam(w, dw, {"learning_rate": learning_rate, "epsilon": 0.0})
    return float(np.linalg.norm(next_w - w))
"""

ALTERNATES = [
    Alternate("init with standard_normal and gains", {INIT: INIT_STANDARD_NORMAL}),
    Alternate("init with match", {INIT: INIT_MATCH}),
    Alternate("net in plain NumPy", {NET: NET_LIST_OF_LAYERS}),
    Alternate("net walking a tape of layers", {NET: NET_RECURSIVE}),
    Alternate("momentum, velocity updated in place", {MOMENTUM: MOMENTUM_IN_PLACE}),
    Alternate("momentum with a defaults dict", {MOMENTUM: MOMENTUM_DICT}),
    Alternate("rmsprop with epsilon inside the root", {RMSPROP: RMSPROP_EPS_INSIDE}),
    Alternate("rmsprop, cache updated in place", {RMSPROP: RMSPROP_IN_PLACE}),
    Alternate("adam in Kingma and Ba's form", {ADAM: ADAM_KINGMA}),
    Alternate("adam, m and v updated in place", {ADAM: ADAM_IN_PLACE}),
    Alternate("adamw through adam", {ADAMW: ADAMW_VIA_ADAM}),
    Alternate("adamw decaying first", {ADAMW: ADAMW_DECAY_FIRST}),
    Alternate("landscape predictions computed", {LANDSCAPE: LANDSCAPE_COMPUTED}),
    Alternate("landscape predictions by your own adam", {LANDSCAPE: LANDSCAPE_BY_ADAM}),
]

# Each graded function, and the solution cell that defines it.
GRADED_FUNCTIONS = {
    "weight_init": {INIT},
    "FullyConnectedNet": {NET},
    "sgd_momentum": {MOMENTUM},
    "rmsprop": {RMSPROP},
    "adam": {ADAM},
    "adamw": {ADAMW},
    "predicted_plateau_loss": {LANDSCAPE},
    "predicted_adam_first_step": {LANDSCAPE},
}

# Other well-known conventions: they lose points (the course's convention is the API), and
# the feedback names them.
MOMENTUM_PYTORCH = """\
def sgd_momentum(w, dw, config=None):
    \"\"\"PyTorch's convention: the velocity accumulates raw gradients.\"\"\"
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    config.setdefault("momentum", 0.9)
    v = config["momentum"] * config.get("velocity", np.zeros_like(w)) + dw
    config["velocity"] = v
    return w - config["learning_rate"] * v, config
"""

ADAMW_BODY = """\
def adamw(w, dw, config=None):
    if config is None:
        config = {}
    config.setdefault("weight_decay", 1e-2)
    for key, value in (("learning_rate", 1e-3), ("beta1", 0.9), ("beta2", 0.999),
                       ("epsilon", 1e-8), ("t", 0)):
        config.setdefault(key, value)
    config.setdefault("m", np.zeros_like(w))
    config.setdefault("v", np.zeros_like(w))
    config["t"] += 1
    b1, b2, t = config["beta1"], config["beta2"], config["t"]
    config["m"] = b1 * config["m"] + (1 - b1) * dw
    config["v"] = b2 * config["v"] + (1 - b2) * dw**2
    step = (config["m"] / (1 - b1**t)) / (np.sqrt(config["v"] / (1 - b2**t)) + config["epsilon"])
"""

ADAMW_PAPER = (
    ADAMW_BODY
    + """\
    # Loshchilov and Hutter's Algorithm 2: eta_t (the schedule multiplier, 1 here) times
    # (alpha * step + lambda * w): the decay is not multiplied by the learning rate.
    return w - (config["learning_rate"] * step + config["weight_decay"] * w), config
"""
)

ADAMW_DECAY_AFTER = (
    ADAMW_BODY
    + """\
    stepped = w - config["learning_rate"] * step
    return stepped - config["learning_rate"] * config["weight_decay"] * stepped, config
"""
)

INIT_GLOROT = """\
def weight_init(fan_in, fan_out, scheme, rng):
    \"\"\"Glorot and Bengio's own Xavier: the fans averaged.\"\"\"
    if scheme == "xavier":
        std = np.sqrt(2.0 / (fan_in + fan_out))
    elif scheme == "he":
        std = np.sqrt(2.0 / fan_in)
    else:
        std = float(scheme)
    return rng.normal(0.0, std, size=(fan_in, fan_out))
"""

CONVENTIONS = [
    Convention(
        "momentum in PyTorch's convention",
        {MOMENTUM: MOMENTUM_PYTORCH},
        frozenset({"sgd_momentum"}),
        "PyTorch",
    ),
    Convention(
        "AdamW as the paper writes it (decay times the schedule multiplier)",
        {ADAMW: ADAMW_PAPER},
        frozenset({"adamw"}),
        "Loshchilov and Hutter",
    ),
    Convention(
        "AdamW decaying the weights after Adam's step",
        {ADAMW: ADAMW_DECAY_AFTER},
        frozenset({"adamw"}),
        "after Adam's step",
    ),
    Convention(
        "Xavier as Glorot's 2 / (fan_in + fan_out)",
        {INIT: INIT_GLOROT},
        frozenset({"weight_init"}),
        "Glorot and Bengio",
    ),
]

# Square weights: a hand-written backward that transposes W only when the shapes disagree
# (right for every non-square layer); the probe's square hidden layers catch it.
MUTANTS.append(
    Mutant(
        "net in plain NumPy: dz @ W, transposed only when W is not square",
        NET,
        (
            (
                "dz = (dz @ W.T) * (pre[i - 2] > 0)",
                "dz = (dz @ (W if W.shape[0] == W.shape[1] else W.T)) * (pre[i - 2] > 0)",
            ),
        ),
        frozenset({"fully_connected_net"}),
        code=NET_LIST_OF_LAYERS,
    )
)
