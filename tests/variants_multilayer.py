"""Student variants of assignment 03 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, m

ASSIGNMENT, NOTEBOOK = "03_multilayer", "multilayer"

AFFINE_F, AFFINE_B = "affine_forward_solution", "affine_backward_solution"
RELU_F, RELU_B = "relu_forward_solution", "relu_backward_solution"
SOFTMAX, SVM = "softmax_loss_solution", "svm_loss_solution"
NET, SGD = "two_layer_net_solution", "sgd_solution"
PRED, PREDICTIONS = "predictions_solution", "multilayer_predictions"
GRADIENT_RETURN = '|dW1| at initialisation, weight scale sigma / a over sigma."""\n    return 1 / a'
TRAINING = {"two_layer_net", "two_layer_training"}

MUTANTS = [
    # affine_forward
    m(
        "affine: x not flattened",
        AFFINE_F,
        {"affine_forward", "affine_backward"},
        ("x.reshape(x.shape[0], -1) @ w + b", "x @ w + b"),
    ),
    m(
        "affine: bias forgotten",
        AFFINE_F,
        {"affine_forward"} | TRAINING,
        ("x.reshape(x.shape[0], -1) @ w + b", "x.reshape(x.shape[0], -1) @ w"),
    ),
    m(
        "affine: flattened across examples",
        AFFINE_F,
        {"affine_forward"},
        ("x.reshape(x.shape[0], -1) @ w + b", "x.reshape(w.shape[0], -1).T @ w + b"),
    ),
    # affine_backward
    m(
        "affine backward: dx not reshaped",
        AFFINE_B,
        {"affine_backward"},
        ("dx = (dout @ w.T).reshape(x.shape)", "dx = dout @ w.T"),
    ),
    m(
        "affine backward: db averaged",
        AFFINE_B,
        {"affine_backward"} | TRAINING,
        ("db = dout.sum(axis=0)", "db = dout.mean(axis=0)"),
    ),
    m(
        "affine backward: dw transposed",
        AFFINE_B,
        {"affine_backward"},
        ("dw = x.reshape(x.shape[0], -1).T @ dout", "dw = dout.T @ x.reshape(x.shape[0], -1)"),
    ),
    m(
        "affine backward: db summed over the wrong axis",
        AFFINE_B,
        {"affine_backward"},
        ("db = dout.sum(axis=0)", "db = dout.sum(axis=1)"),
    ),
    # relu_forward
    m(
        "relu: leaky",
        RELU_F,
        {"relu"},
        ("out = np.maximum(0.0, x)", "out = np.maximum(0.01 * x, x)"),
    ),
    m("relu: absolute value", RELU_F, {"relu"}, ("out = np.maximum(0.0, x)", "out = np.abs(x)")),
    m("relu: returns the mask", RELU_F, {"relu"}, ("out = np.maximum(0.0, x)", "out = x > 0")),
    # relu_backward
    m(
        "relu backward: mask without dout",
        RELU_B,
        {"relu"},
        ("dx = dout * (x > 0)", "dx = (x > 0) * 1.0"),
    ),
    m(
        "relu backward: mask inverted",
        RELU_B,
        {"relu"},
        ("dx = dout * (x > 0)", "dx = dout * (x < 0)"),
    ),
    m(
        "relu backward: identity",
        RELU_B,
        {"relu", "two_layer_net"},
        ("dx = dout * (x > 0)", "dx = dout"),
    ),
    # softmax_loss
    m(
        "softmax: no max shift",
        SOFTMAX,
        {"softmax_loss"},
        ("shifted = x - x.max(axis=1, keepdims=True)", "shifted = x"),
    ),
    m(
        "softmax: one maximum for the whole batch",
        SOFTMAX,
        {"softmax_loss"},
        ("x.max(axis=1, keepdims=True)", "x.max()"),
    ),
    m(
        "softmax: dx not divided by N",
        SOFTMAX,
        {"softmax_loss"} | TRAINING,
        ("    dx /= num_train\n", ""),
    ),
    m(
        "softmax: log of a probability",
        SOFTMAX,
        {"softmax_loss"},
        (
            "log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))",
            "log_probs = np.log(np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True))",
        ),
    ),
    # svm_loss
    m("SVM: correct class counted", SVM, {"svm_loss"}, ("    margins[rows, y] = 0.0\n", "")),
    m("SVM: counts not subtracted", SVM, {"svm_loss"}, ("    dx[rows, y] = -dx.sum(axis=1)\n", "")),
    m(
        "SVM: margin 0",
        SVM,
        {"svm_loss"},
        ("x - x[rows, y][:, None] + 1.0", "x - x[rows, y][:, None]"),
    ),
    # TwoLayerNet
    m(
        "net: biases regularised in the loss",
        NET,
        {"two_layer_net"},
        (
            "(np.sum(W1 * W1) + np.sum(W2 * W2))",
            "(np.sum(W1 * W1) + np.sum(W2 * W2) + np.sum(b1 * b1) + np.sum(b2 * b2))",
        ),
    ),
    m(
        "net: regulariser without the half",
        NET,
        {"two_layer_net", "two_layer_training"},
        ("loss += 0.5 * self.reg *", "loss += self.reg *"),
    ),
    m(
        "net: relu skipped in backward",
        NET,
        {"two_layer_net"},
        ("da = relu_backward(dhidden, relu_cache)", "da = dhidden"),
    ),
    m(
        "net: weights not scaled",
        NET,
        {"two_layer_net"},
        ('"W1": weight_scale * np.random.randn(', '"W1": np.random.randn('),
        ('"W2": weight_scale * np.random.randn(', '"W2": np.random.randn('),
    ),
    m(
        "net: scores returned in a tuple",
        NET,
        {"two_layer_net"},
        (
            "        if y is None:\n            return scores\n",
            "        if y is None:\n            return scores, None\n",
        ),
    ),
    # sgd
    m(
        "sgd: steps up the gradient",
        SGD,
        {"sgd", "two_layer_training"},
        ('next_w = w - config["learning_rate"] * dw', 'next_w = w + config["learning_rate"] * dw'),
    ),
    m(
        "sgd: default learning rate 1e-3",
        SGD,
        {"sgd"},
        ('config.setdefault("learning_rate", 1e-2)', 'config.setdefault("learning_rate", 1e-3)'),
    ),
    m(
        "sgd: overwrites the given learning rate",
        SGD,
        {"sgd", "two_layer_training"},
        ('config.setdefault("learning_rate", 1e-2)', 'config["learning_rate"] = 1e-2'),
    ),
    m(
        "net: W2 at a fixed 1e-3",
        NET,
        {"two_layer_net"},
        ('"W2": weight_scale * np.random.randn', '"W2": 1e-3 * np.random.randn'),
    ),
    m(
        "net: W2 at weight_scale**2",
        NET,
        {"two_layer_net"},
        ('"W2": weight_scale * np.random.randn', '"W2": weight_scale**2 * np.random.randn'),
    ),
    m(
        "affine: dw as dout.T @ x, transposed back only when the shapes disagree",
        AFFINE_B,
        {"affine_backward"},
        (
            "dw = x.reshape(x.shape[0], -1).T @ dout",
            "dw = dout.T @ x.reshape(x.shape[0], -1)\n    if dw.shape != w.shape:\n"
            "        dw = dw.T",
        ),
    ),
    m(
        "affine: dx as dout @ w when w is square",
        AFFINE_B,
        {"affine_backward"},
        (
            "dx = (dout @ w.T).reshape(x.shape)",
            "dx = (dout @ (w if w.shape[0] == w.shape[1] else w.T)).reshape(x.shape)",
        ),
    ),
    # predictions
    m(
        "predictions: the scores shrink by a, like the weights",
        PRED,
        {PREDICTIONS},
        ("return 1 / a**2", "return 1 / a**1"),
    ),
    m(
        "predictions: the gradient of W1 shrinks by a**2, like the scores",
        PRED,
        {PREDICTIONS},
        (GRADIENT_RETURN, GRADIENT_RETURN + "**2"),
    ),
    m(
        "predictions: the gradient of W1 unchanged (its input x is fixed)",
        PRED,
        {PREDICTIONS},
        (GRADIENT_RETURN, GRADIENT_RETURN + " * 0 + 1.0"),
    ),
    m(
        "predictions: the notebook's factor only, not the formula",
        PRED,
        {PREDICTIONS},
        ("return 1 / a**2", "return 0.01"),
        (GRADIENT_RETURN, GRADIENT_RETURN + " * 0 + 0.1"),
    ),
]

EXPECTED_SURVIVORS: set[str] = set()

AFFINE_FLAT_CACHE = {
    AFFINE_F: '''\
def affine_forward(x, w, b):
    """Caches the flattened x and x's shape instead of x."""
    x_flat = x.reshape(len(x), int(np.prod(x.shape[1:])))
    return np.dot(x_flat, w) + b, (x.shape, x_flat, w)
''',
    AFFINE_B: """\
def affine_backward(dout, cache):
    shape, x_flat, w = cache
    return np.dot(dout, w.T).reshape(shape), np.dot(x_flat.T, dout), np.sum(dout, axis=0)
""",
}

AFFINE_EINSUM = {
    AFFINE_F: """\
def affine_forward(x, w, b):
    out = np.einsum("nd,dm->nm", x.reshape(x.shape[0], w.shape[0]), w) + b[None, :]
    return out, (x, w, b)
""",
    AFFINE_B: """\
def affine_backward(dout, cache):
    x, w, b = cache
    x2 = x.reshape(x.shape[0], w.shape[0])
    dx = np.einsum("nm,dm->nd", dout, w).reshape(*x.shape)
    return dx, np.einsum("nd,nm->dm", x2, dout), np.einsum("nm->m", dout)
""",
}

RELU_CACHE_OUTPUT = {
    RELU_F: """\
def relu_forward(x):
    out = x * (x > 0)
    return out, out
""",
    RELU_B: """\
def relu_backward(dout, cache):
    return np.where(cache > 0, dout, 0.0)
""",
}

RELU_CACHE_MASK = {
    RELU_F: """\
def relu_forward(x):
    mask = x > 0
    return np.where(mask, x, 0.0), mask
""",
    RELU_B: """\
def relu_backward(dout, cache):
    dx = dout.copy()
    dx[~cache] = 0
    return dx
""",
}

SOFTMAX_LOGADDEXP = """\
def softmax_loss(x, y):
    n = len(y)
    log_p = x - np.logaddexp.reduce(x, axis=1, keepdims=True)
    p = np.exp(log_p)
    p[np.arange(n), y] -= 1
    return -np.sum(log_p[np.arange(n), y]) / n, p / n
"""

SOFTMAX_ONE_HOT = """\
def softmax_loss(x, y):
    N, C = x.shape
    top = np.max(x, axis=1, keepdims=True)
    lse = top + np.log(np.sum(np.exp(x - top), axis=1, keepdims=True))
    one_hot = np.eye(C)[y]
    loss = float(np.mean(np.sum(one_hot * (lse - x), axis=1)))
    return loss, (np.exp(x - lse) - one_hot) / N
"""

SVM_ONE_HOT = """\
def svm_loss(x, y):
    N, C = x.shape
    one_hot = np.eye(C, dtype=bool)[y]
    correct = x[one_hot][:, None]
    margins = np.where(one_hot, 0.0, np.maximum(0.0, x - correct + 1.0))
    active = (margins > 0).astype(float)
    dx = active - one_hot * active.sum(axis=1, keepdims=True)
    return margins.sum() / N, dx / N
"""

SVM_ROWS = """\
def svm_loss(x, y):
    n = x.shape[0]
    loss, dx = 0.0, np.zeros_like(x)
    for i in range(n):
        margins = x[i] - x[i, y[i]] + 1
        margins[y[i]] = 0
        positive = margins > 0
        loss += margins[positive].sum()
        dx[i, positive] = 1
        dx[i, y[i]] = -positive.sum()
    return loss / n, dx / n
"""

NET_INLINE = '''\
class TwoLayerNet:
    """Plain NumPy, no layer functions; its own generator; reg stored under another name."""

    def __init__(self, input_dim, hidden_dim, num_classes, weight_scale=1e-3, reg=0.0):
        rng = np.random.default_rng()
        self.l2 = reg
        self.params = {
            "W1": rng.normal(0.0, weight_scale, (input_dim, hidden_dim)),
            "b1": np.zeros(hidden_dim),
            "W2": rng.normal(0.0, weight_scale, (hidden_dim, num_classes)),
            "b2": np.zeros(num_classes),
        }

    def loss(self, X, y=None):
        p = self.params
        Xf = X.reshape(X.shape[0], -1)
        z = Xf @ p["W1"] + p["b1"]
        h = np.maximum(z, 0)
        s = h @ p["W2"] + p["b2"]
        if y is None:
            return s
        n = len(y)
        s_shift = s - s.max(axis=1, keepdims=True)
        log_p = s_shift - np.log(np.exp(s_shift).sum(axis=1, keepdims=True))
        loss = -log_p[np.arange(n), y].mean()
        loss += 0.5 * self.l2 * ((p["W1"] ** 2).sum() + (p["W2"] ** 2).sum())
        ds = np.exp(log_p)
        ds[np.arange(n), y] -= 1
        ds /= n
        dh = ds @ p["W2"].T
        dz = dh * (z > 0)
        return loss, {
            "W2": h.T @ ds + self.l2 * p["W2"],
            "b2": ds.sum(axis=0),
            "W1": Xf.T @ dz + self.l2 * p["W1"],
            "b1": dz.sum(axis=0),
        }
'''

NET_LAYER_LIST = '''\
class TwoLayerNet:
    """Layers kept in a list and walked forwards and backwards."""

    def __init__(self, input_dim, hidden_dim, num_classes, weight_scale=1e-3, reg=0.0):
        self.reg = reg
        dims = [input_dim, hidden_dim, num_classes]
        self.params = {}
        for i in (1, 2):
            self.params[f"W{i}"] = np.random.normal(0, weight_scale, (dims[i - 1], dims[i]))
            self.params[f"b{i}"] = np.zeros(dims[i])

    def loss(self, X, y=None):
        caches = []
        out = X
        for i in (1, 2):
            out, cache = affine_forward(out, self.params[f"W{i}"], self.params[f"b{i}"])
            caches.append(("affine", cache))
            if i == 1:
                out, cache = relu_forward(out)
                caches.append(("relu", cache))
        if y is None:
            return out
        loss, dout = softmax_loss(out, y)
        grads = {}
        layer = 2
        for kind, cache in reversed(caches):
            if kind == "relu":
                dout = relu_backward(dout, cache)
                continue
            dout, dw, db = affine_backward(dout, cache)
            W = self.params[f"W{layer}"]
            loss += 0.5 * self.reg * np.sum(W * W)
            grads[f"W{layer}"], grads[f"b{layer}"] = dw + self.reg * W, db
            layer -= 1
        return loss, grads
'''

SGD_IN_PLACE = '''\
def sgd(w, dw, config=None):
    """CS231n's original: updates w in place and returns it."""
    if config is None:
        config = {}
    config.setdefault("learning_rate", 1e-2)
    w -= config["learning_rate"] * dw
    return w, config
'''

SGD_COPIED_CONFIG = """\
def sgd(w, dw, config=None):
    config = dict(config or {})
    config.setdefault("learning_rate", 0.01)
    return w - dw * config["learning_rate"], config
"""

ALTERNATES = [
    Alternate("affine caching the flattened x", AFFINE_FLAT_CACHE),
    Alternate("affine with einsum", AFFINE_EINSUM),
    Alternate("relu caching its output", RELU_CACHE_OUTPUT),
    Alternate("relu caching a mask", RELU_CACHE_MASK),
    Alternate("softmax with logaddexp.reduce", {SOFTMAX: SOFTMAX_LOGADDEXP}),
    Alternate("softmax with one-hot labels", {SOFTMAX: SOFTMAX_ONE_HOT}),
    Alternate("SVM with a one-hot mask", {SVM: SVM_ONE_HOT}),
    Alternate("SVM row by row", {SVM: SVM_ROWS}),
    Alternate("net in plain NumPy with its own generator", {NET: NET_INLINE}),
    Alternate("net walking a list of layers", {NET: NET_LAYER_LIST}),
    Alternate("sgd in place", {SGD: SGD_IN_PLACE}),
    Alternate("sgd with a copied config", {SGD: SGD_COPIED_CONFIG}),
    Alternate(
        "predictions computed otherwise",
        {
            PRED: "def predicted_score_ratio(a):\n    return a**-2.0\n\n\n"
            "def predicted_gradient_ratio(a):\n    return (1 / (a * a)) ** 0.5\n"
        },
    ),
]

# Each graded function, and the solution cells that define it.
GRADED_FUNCTIONS = {
    "affine_forward": {AFFINE_F},
    "affine_backward": {AFFINE_B},
    "relu_forward": {RELU_F},
    "relu_backward": {RELU_B},
    "softmax_loss": {SOFTMAX},
    "svm_loss": {SVM},
    "TwoLayerNet": {NET},
    "sgd": {SGD},
}
