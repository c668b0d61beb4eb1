"""Student variants of assignment 05 for the mutation harness (see tests/variant_kinds.py)."""

from course.authoring.variants import Alternate, Mutant, m, wrong

ASSIGNMENT, NOTEBOOK = "05_normalisation", "normalisation"

BNF, BNB, BNA = (
    "batchnorm_forward_solution",
    "batchnorm_backward_solution",
    "batchnorm_backward_alt_solution",
)
LNF, LNB = "layernorm_forward_solution", "layernorm_backward_solution"
DF, DB = "dropout_forward_solution", "dropout_backward_solution"
NET, PRED = "fully_connected_net_solution", "predictions_solution"
SCALE = "scale_predictions_solution"
TRAINING = "normalised_training"

MUTANTS = [
    # batchnorm_forward
    m(
        "bn forward: the unbiased variance (N - 1) in the normalisation",
        BNF,
        {"batchnorm_forward", "batchnorm_backward", "batchnorm_backward_alt", "finished_net"},
        ("var = np.mean(centred**2, axis=0)", "var = np.sum(centred**2, axis=0) / (len(x) - 1)"),
    ),
    m(
        "bn forward: an unknown mode runs as test mode (no ValueError)",
        BNF,
        {"batchnorm_forward"},
        ('    elif mode == "test":\n', "    else:\n"),
        (
            '    else:\n        raise ValueError(f"bn_param',
            '    if False:\n        raise ValueError(f"bn_param',
        ),
    ),
    # Issue 54: kept 2.87 of 3 though a wrong test mode caps the cell.
    wrong(
        "bn forward: test mode updates the running averages with the test batch",
        BNF,
        {"batchnorm_forward", TRAINING},
        (
            "        cache = None\n",
            "        cache = None\n"
            "        running_mean = momentum * running_mean + (1 - momentum) * x.mean(axis=0)\n"
            "        running_var = momentum * running_var + (1 - momentum) * x.var(axis=0)\n",
        ),
        capped={"batchnorm_forward"},
    ),
    m(
        "bn forward: variance as mean(x**2) - mu**2",
        BNF,
        {"batchnorm_forward"},
        ("var = np.mean(centred**2, axis=0)", "var = np.mean(x**2, axis=0) - mu**2"),
    ),
    m(
        "bn forward: eps outside the square root",
        BNF,
        {"batchnorm_forward"},
        ("std = np.sqrt(var + eps)", "std = np.sqrt(var) + eps"),
    ),
    wrong(
        "bn forward: PyTorch's momentum convention",
        BNF,
        {"batchnorm_forward", "finished_net", TRAINING},
        (
            "running_mean = momentum * running_mean + (1 - momentum) * mu",
            "running_mean = (1 - momentum) * running_mean + momentum * mu",
        ),
        (
            "running_var = momentum * running_var + (1 - momentum) * var",
            "running_var = (1 - momentum) * running_var + momentum * var",
        ),
        capped={"batchnorm_forward"},
    ),
    wrong(
        "bn forward: unbiased variance in the running average",
        BNF,
        {"batchnorm_forward"},
        ("(1 - momentum) * var", "(1 - momentum) * var * len(x) / (len(x) - 1)"),
    ),
    wrong(
        "bn forward: momentum swapped in the running variance only",
        BNF,
        {"batchnorm_forward"},
        (
            "running_var = momentum * running_var + (1 - momentum) * var",
            "running_var = momentum * var + (1 - momentum) * running_var",
        ),
    ),
    wrong(
        "bn forward: the running mean never updated",
        BNF,
        {"batchnorm_forward"},
        ("running_mean = momentum * running_mean + (1 - momentum) * mu", "pass"),
    ),
    wrong(
        "bn forward: the running averages replaced by the batch's statistics",
        BNF,
        {"batchnorm_forward"},
        ("running_mean = momentum * running_mean + (1 - momentum) * mu", "running_mean = mu"),
        ("running_var = momentum * running_var + (1 - momentum) * var", "running_var = var"),
    ),
    # Issue 54: a public CS231n solution; kept 1.5 of 3 (capped) while its report blamed the
    # momentum convention. Its values are right: it loses the shape's sub-checks, uncapped.
    m(
        "bn forward: running averages kept (1, D) by keepdims",
        BNF,
        {"batchnorm_forward"},
        ("mu = x.mean(axis=0)", "mu = x.mean(axis=0, keepdims=True)"),
        ("var = np.mean(centred**2, axis=0)", "var = np.mean(centred**2, axis=0, keepdims=True)"),
    ),
    m(
        "bn forward: test mode normalises with the batch",
        BNF,
        {"batchnorm_forward", "finished_net", TRAINING},
        (
            "out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta",
            "out = gamma * (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + eps) + beta",
        ),
    ),
    # batchnorm_backward
    m(
        "bn backward: the path through the variance dropped",
        BNB,
        {"batchnorm_backward"},
        ("    dcentred += dvar * 2 * centred / N  # var = mean(centred**2)\n", ""),
    ),
    m(
        "bn backward: the path through the mean dropped",
        BNB,
        {"batchnorm_backward"},
        ("    dx += dmu / N  # mu = mean(x)\n", ""),
    ),
    m(
        "bn backward: the derivative of 1 / std with the wrong sign",
        BNB,
        {"batchnorm_backward"},
        (
            "dstd = -np.sum(dx_hat * centred, axis=0) / std**2",
            "dstd = np.sum(dx_hat * centred, axis=0) / std**2",
        ),
    ),
    m(
        "bn backward: sqrt's derivative without the 2",
        BNB,
        {"batchnorm_backward"},
        ("dvar = dstd / (2 * std)", "dvar = dstd / std"),
    ),
    # Issue 54: both hinted "add the gradients of every path".
    wrong(
        "bn backward: dx without gamma",
        BNB,
        {"batchnorm_backward"},
        ("dx_hat = dout * gamma", "dx_hat = dout"),
    ),
    wrong(
        "bn backward: std recomputed without eps",
        BNB,
        {"batchnorm_backward"},
        (
            "    N = dout.shape[0]\n",
            "    N = dout.shape[0]\n    std = np.sqrt(np.mean(centred**2, axis=0))\n",
        ),
    ),
    # batchnorm_backward_alt
    m(
        "bn alt: N - 1 in the closed form",
        BNA,
        {"batchnorm_backward_alt", "finished_net"},
        ("    N = dout.shape[0]\n", "    N = dout.shape[0] - 1\n"),
    ),
    m(
        "bn alt: the x_hat term missing",
        BNA,
        {"batchnorm_backward_alt", "finished_net", TRAINING},
        (
            "dx = (N * g - g.sum(axis=0) - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)",
            "dx = (N * g - g.sum(axis=0)) / (N * std)",
        ),
    ),
    m(
        "bn alt: the mean term missing",
        BNA,
        {"batchnorm_backward_alt", "finished_net"},
        (
            "dx = (N * g - g.sum(axis=0) - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)",
            "dx = (N * g - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)",
        ),
    ),
    m(
        "bn alt: divided by the variance, not the std",
        BNA,
        {"batchnorm_backward_alt", "finished_net", TRAINING},
        ("/ (N * std)", "/ (N * std**2)"),
    ),
    m(
        "bn alt: dgamma without x_hat",
        BNA,
        {"batchnorm_backward_alt", "finished_net", TRAINING},
        ("dgamma = np.sum(dout * x_hat, axis=0)", "dgamma = np.sum(dout, axis=0)"),
    ),
    # layernorm_forward
    m(
        "ln forward: normalised over the batch",
        LNF,
        {"layernorm_forward", "layernorm_backward", "finished_net", TRAINING},
        (
            "centred = x - x.mean(axis=1, keepdims=True)",
            "centred = x - x.mean(axis=0, keepdims=True)",
        ),
        (
            "np.mean(centred**2, axis=1, keepdims=True)",
            "np.mean(centred**2, axis=0, keepdims=True)",
        ),
    ),
    m(
        "ln forward: eps outside the square root",
        LNF,
        {"layernorm_forward"},
        (
            "std = np.sqrt(np.mean(centred**2, axis=1, keepdims=True) + eps)",
            "std = np.sqrt(np.mean(centred**2, axis=1, keepdims=True)) + eps",
        ),
    ),
    m(
        "ln forward: ln_param's eps ignored",
        LNF,
        {"layernorm_forward"},
        ("keepdims=True) + eps)", "keepdims=True) + 1e-5)"),
    ),
    m(
        "ln forward: no shift by beta",
        LNF,
        {"layernorm_forward", "finished_net"},
        (
            "return gamma * x_hat + beta, (x_hat, std, gamma)",
            "return gamma * x_hat, (x_hat, std, gamma)",
        ),
    ),
    # layernorm_backward
    m(
        "ln backward: the mean term missing",
        LNB,
        {"layernorm_backward", "finished_net", TRAINING},
        ("dx = D * g - g.sum(axis=1, keepdims=True) - x_hat", "dx = D * g - x_hat"),
    ),
    m(
        "ln backward: N in place of D",
        LNB,
        {"layernorm_backward", "finished_net"},
        ("D = dout.shape[1]", "D = dout.shape[0]"),
    ),
    m(
        "ln backward: dgamma summed over the features",
        LNB,
        {"layernorm_backward", "finished_net"},
        ("np.sum(dout * x_hat, axis=0)", "np.sum(dout * x_hat, axis=1)"),
    ),
    # dropout_forward
    m(
        "dropout: an unknown mode runs as test mode (no ValueError)",
        DF,
        {"dropout_forward"},
        ('    elif mode == "test":\n', "    else:\n"),
        (
            '    else:\n        raise ValueError(f"dropout_param',
            '    if False:\n        raise ValueError(f"dropout_param',
        ),
    ),
    m(
        "dropout: p read as the probability of dropping (PyTorch's)",
        DF,
        {"dropout_forward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            "mask = (np.random.rand(*x.shape) >= p) / (1 - p)",
        ),
    ),
    wrong(
        "dropout: the mask drawn from randn (keeps Phi(p) of the units, not p)",
        DF,
        {"dropout_forward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            "mask = (np.random.randn(*x.shape) < p) / p",
        ),
    ),
    m(
        "dropout: not inverted",
        DF,
        {"dropout_forward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            "mask = (np.random.rand(*x.shape) < p) * 1.0",
        ),
    ),
    m(
        "dropout: one mask per feature, shared by the batch",
        DF,
        {"dropout_forward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            "mask = (np.random.rand(x.shape[1]) < p) / p",
        ),
    ),
    wrong(
        "dropout: test mode scales by p",
        DF,
        {"dropout_forward"},
        ("mask, out = None, x", "mask, out = None, x * p"),
    ),
    wrong(
        "dropout: test mode divides by p too",
        DF,
        {"dropout_forward"},
        ("mask, out = None, x", "mask, out = None, x / p"),
    ),
    m(
        "dropout: a generator that ignores the seed",
        DF,
        {"dropout_forward", "finished_net"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            "mask = (np.random.default_rng().random(x.shape) < p) / p",
        ),
    ),
    # Issue 54: kept 2 of 2 while every call of the check passed a fresh dict.
    m(
        "dropout: the mask kept in dropout_param, reused by every later call without a seed",
        DF,
        {"dropout_forward"},
        (
            "        mask = (np.random.rand(*x.shape) < p) / p\n",
            '        if "seed" in dropout_param or "mask" not in dropout_param:\n'
            '            dropout_param["mask"] = (np.random.rand(*x.shape) < p) / p\n'
            '        mask = dropout_param["mask"]\n',
        ),
    ),
    m(
        "dropout: the mask kept in dropout_param by setdefault, reused even with a seed",
        DF,
        {"dropout_forward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p",
            'mask = dropout_param.setdefault("mask", (np.random.rand(*x.shape) < p) / p)',
        ),
    ),
    # dropout_backward
    m(
        "dropout backward: the 1 / p forgotten",
        DB,
        {"dropout_backward", "finished_net"},
        (
            'return dout * mask if dropout_param["mode"] == "train" else dout',
            'return dout * (mask != 0) if dropout_param["mode"] == "train" else dout',
        ),
    ),
    m(
        "dropout backward: the mask applied in test mode too",
        DB,
        {"dropout_backward"},
        ('return dout * mask if dropout_param["mode"] == "train" else dout', "return dout * mask"),
    ),
    m(
        "dropout backward: the gradient passed through unmasked",
        DB,
        {"dropout_backward", "finished_net"},
        ('return dout * mask if dropout_param["mode"] == "train" else dout', "return dout"),
    ),
    # FullyConnectedNet
    m(
        "net: normalisation after the relu",
        NET,
        {"finished_net", TRAINING},
        (
            "            norm_cache = None\n",
            "            out, relu_cache = relu_forward(out)\n            norm_cache = None\n",
        ),
        (
            "            out, relu_cache = relu_forward(out)\n            drop_cache = None\n",
            "            drop_cache = None\n",
        ),
        (
            "            dout = relu_backward(dout, relu_cache)\n            if self.normalization",
            "            if self.normalization",
        ),
        (
            '            dout, grads[f"W{layer}"]',
            "            dout = relu_backward(dout, relu_cache)\n"
            '            dout, grads[f"W{layer}"]',
        ),
    ),
    m(
        "net: a fresh bn_param at every call",
        NET,
        {"finished_net", TRAINING},
        ("self.bn_params[layer - 1],", '{"mode": "test" if y is None else "train"},'),
    ),
    m(
        "net: gamma starts at zero",
        NET,
        {"finished_net", TRAINING},
        (
            'self.params[f"gamma{layer}"] = np.ones(width, dtype=dtype)',
            'self.params[f"gamma{layer}"] = np.zeros(width, dtype=dtype)',
        ),
    ),
    m(
        "net: layer norm forgotten",
        NET,
        {"finished_net", TRAINING},
        (
            '            elif self.normalization == "layernorm":\n                out, norm_cache',
            "            elif False:\n                out, norm_cache",
        ),
        (
            '            elif self.normalization == "layernorm":\n                dout, grads',
            "            elif False:\n                dout, grads",
        ),
    ),
    m(
        "net: the dropout mask not backpropagated",
        NET,
        {"finished_net"},
        ("                dout = dropout_backward(dout, drop_cache)\n", "                pass\n"),
    ),
    m(
        "net: dropout never applied (the keep ratio accepted and ignored)",
        NET,
        {"finished_net"},
        (
            "            if self.use_dropout:\n                out, drop_cache",
            "            if False:\n                out, drop_cache",
        ),
        (
            "            if self.use_dropout:\n                dout = dropout_backward",
            "            if False:\n                dout = dropout_backward",
        ),
    ),
    # predictions
    m(
        "predictions: 0.9 ** 10 (the weight of the start)",
        PRED,
        {"predictions"},
        ("return 1 - momentum**k", "return momentum**k"),
    ),
    m(
        "predictions: off by one step, 1 - momentum**(k + 1)",
        PRED,
        {"predictions"},
        ("return 1 - momentum**k", "return 1 - momentum ** (k + 1)"),
    ),
    m(
        "predictions: PyTorch's momentum, 1 - (1 - momentum)**k",
        PRED,
        {"predictions"},
        ("return 1 - momentum**k", "return 1 - (1 - momentum) ** k"),
    ),
    m(
        "predictions: a constant near 1 (0.978)",
        PRED,
        {"predictions"},
        ("return 1 - momentum**k", "return 0.978"),
    ),
    m(
        "predictions: p, not 1 / p",
        PRED,
        {"predictions"},
        ("return 1 / p", "return p"),
    ),
    m(
        "predictions: a batch of one outputs gamma (x_hat taken as 1)",
        PRED,
        {"predictions"},
        ("return beta", "return gamma"),
    ),
    # scale predictions (the shape of the loss)
    m(
        "scale predictions: the gradient grows with the weights, c",
        SCALE,
        {"scale_predictions"},
        ("return 1 / c", "return c"),
    ),
    m(
        "scale predictions: the gradient unchanged, as the loss is",
        SCALE,
        {"scale_predictions"},
        ("return 1 / c", "return 1.0"),
    ),
    m(
        "scale predictions: the curvature's 1 / c**2 for the gradient's",
        SCALE,
        {"scale_predictions"},
        ("return 1 / c", "return 1 / c**2"),
    ),
    m(
        "scale predictions: the scores grow as c * layers",
        SCALE,
        {"scale_predictions"},
        ("return c**layers", "return c * layers"),
    ),
    m(
        "scale predictions: the last layer left out, c**(layers - 1)",
        SCALE,
        {"scale_predictions"},
        ("return c**layers", "return c ** (layers - 1)"),
    ),
    m(
        "scale predictions: the notebook's settings only (c = 2, four layers)",
        SCALE,
        {"scale_predictions"},
        ("return 1 / c", "return 0.5"),
        ("return c**layers", "return 16.0"),
    ),
    # Review rev37: more realistic slips, each judged in-process before it was added.
    wrong(
        "bn forward: normalised per row (layer norm's axis)",
        BNF,
        {"batchnorm_forward", "batchnorm_backward", "batchnorm_backward_alt"},
        ("mu = x.mean(axis=0)", "mu = x.mean(axis=1, keepdims=True)"),
        ("var = np.mean(centred**2, axis=0)", "var = np.mean(centred**2, axis=1, keepdims=True)"),
    ),
    wrong(
        "bn forward: train mode normalises with the running averages",
        BNF,
        {"batchnorm_forward"},
        ("x_hat = centred / std", "x_hat = (x - running_mean) / np.sqrt(running_var + eps)"),
    ),
    wrong(
        "bn forward: x_hat divided in place (the cached centred becomes x_hat)",
        BNF,
        {"batchnorm_backward"},
        ("x_hat = centred / std", "x_hat = centred\n        x_hat /= std"),
    ),
    wrong(
        "bn backward: dbeta summed over every axis (a scalar)",
        BNB,
        {"batchnorm_backward"},
        ("dbeta = dout.sum(axis=0)", "dbeta = dout.sum()"),
    ),
    wrong(
        "bn alt: dgamma and dbeta returned the other way round",
        BNA,
        {"batchnorm_backward_alt"},
        (
            "dbeta = dout.sum(axis=0)\n    dgamma = np.sum(dout * x_hat, axis=0)",
            "dgamma = dout.sum(axis=0)\n    dbeta = np.sum(dout * x_hat, axis=0)",
        ),
    ),
    wrong(
        "ln backward: the sums over the batch (batch norm's axis)",
        LNB,
        {"layernorm_backward"},
        ("g.sum(axis=1, keepdims=True)", "g.sum(axis=0, keepdims=True)"),
        ("np.sum(g * x_hat, axis=1, keepdims=True)", "np.sum(g * x_hat, axis=0, keepdims=True)"),
    ),
    wrong(
        "ln forward: the mean without keepdims (broadcast along the features)",
        LNF,
        {"layernorm_forward", "layernorm_backward"},
        ("centred = x - x.mean(axis=1, keepdims=True)", "centred = x - x.mean(axis=1)"),
    ),
    wrong(
        "dropout: the mask cached without the 1 / p",
        DF,
        {"dropout_backward"},
        (
            "mask = (np.random.rand(*x.shape) < p) / p\n        out = x * mask",
            "mask = np.random.rand(*x.shape) < p\n        out = x * mask / p",
        ),
    ),
    wrong(
        "net: gamma regularised with the weights",
        NET,
        {"finished_net"},
        (
            "        for layer in range(1, self.num_layers + 1):\n"
            '            W = self.params[f"W{layer}"]\n'
            "            loss += 0.5 * self.reg * np.sum(W * W)\n"
            '            grads[f"W{layer}"] = grads[f"W{layer}"] + self.reg * W\n',
            "        for name, W in self.params.items():\n"
            '            if name[0] in "Wg":\n'
            "                loss += 0.5 * self.reg * np.sum(W * W)\n"
            "                grads[name] = grads[name] + self.reg * W\n",
        ),
    ),
    wrong(
        "net: one bn_param shared by every layer",
        NET,
        {"finished_net"},
        ("self.bn_params[layer - 1],", "self.bn_params[0],"),
    ),
    m(
        "predictions: the notebook's settings only, not the formula",
        PRED,
        {"predictions"},
        ("return 1 - momentum**k", "return 1 - 0.9**10"),
        ("return 1 / p", "return 2.0"),
    ),
    # Review 54.
    wrong(
        "bn backward: dgamma from the centred x, not x_hat",
        BNB,
        {"batchnorm_backward"},
        ("dgamma = np.sum(dout * x_hat, axis=0)", "dgamma = np.sum(dout * centred, axis=0)"),
    ),
    wrong(
        "ln forward: the unbiased variance (D - 1)",
        LNF,
        {"layernorm_forward", "layernorm_backward", "finished_net"},
        (
            "std = np.sqrt(np.mean(centred**2, axis=1, keepdims=True) + eps)",
            "std = np.sqrt(np.var(x, axis=1, ddof=1, keepdims=True) + eps)",
        ),
        capped={"layernorm_forward"},
    ),
    # Review 54: the hint said "dx = dout * mask / p", which is this bug where the cached
    # mask holds the 1 / p (FIRST_FAILURE below).
    wrong(
        "dropout backward: divided by p again (the cached mask holds the 1 / p)",
        DB,
        {"dropout_backward", "finished_net"},
        (
            "    dropout_param, mask = cache\n",
            '    dropout_param, mask = cache\n    p = dropout_param["p"]\n',
        ),
        ("return dout * mask if", "return dout * mask / p if"),
        capped={"dropout_backward"},
    ),
    wrong(
        "net: the last layer's weights not regularised",
        NET,
        {"finished_net"},
        (
            "        for layer in range(1, self.num_layers + 1):\n",
            "        for layer in range(1, self.num_layers):\n",
        ),
    ),
]


BN_VAR_DICT = {
    BNF: '''\
def batchnorm_forward(x, gamma, beta, bn_param):
    """np.var, and a dict as the cache."""
    mode = bn_param["mode"]
    eps, momentum = bn_param.get("eps", 1e-5), bn_param.get("momentum", 0.9)
    D = x.shape[1]
    bn_param.setdefault("running_mean", np.zeros(D, dtype=x.dtype))
    bn_param.setdefault("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "test":
        scale = gamma / np.sqrt(bn_param["running_var"] + eps)
        return (x - bn_param["running_mean"]) * scale + beta, None
    if mode != "train":
        raise ValueError(mode)
    mu, var = x.mean(axis=0), x.var(axis=0)
    inv = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv
    bn_param["running_mean"] = momentum * bn_param["running_mean"] + (1 - momentum) * mu
    bn_param["running_var"] = momentum * bn_param["running_var"] + (1 - momentum) * var
    return gamma * x_hat + beta, {"x": x, "mu": mu, "var": var, "eps": eps, "gamma": gamma}
''',
    BNB: '''\
def batchnorm_backward(dout, cache):
    """The paper's chain rule, node by node (Ioffe and Szegedy, 2015, section 3)."""
    x, mu, var, eps, gamma = (cache[k] for k in ("x", "mu", "var", "eps", "gamma"))
    m = x.shape[0]
    x_hat = (x - mu) / np.sqrt(var + eps)
    dx_hat = dout * gamma
    dvar = np.sum(dx_hat * (x - mu), axis=0) * -0.5 * (var + eps) ** -1.5
    dmu = np.sum(-dx_hat / np.sqrt(var + eps), axis=0) + dvar * np.mean(-2 * (x - mu), axis=0)
    dx = dx_hat / np.sqrt(var + eps) + dvar * 2 * (x - mu) / m + dmu / m
    return dx, np.sum(dout * x_hat, axis=0), np.sum(dout, axis=0)
''',
    BNA: """\
def batchnorm_backward_alt(dout, cache):
    x, mu, var, eps, gamma = (cache[k] for k in ("x", "mu", "var", "eps", "gamma"))
    inv = 1.0 / np.sqrt(var + eps)
    x_hat = (x - mu) * inv
    g = dout * gamma
    dx = inv * (g - g.mean(axis=0) - x_hat * (g * x_hat).mean(axis=0))
    return dx, (dout * x_hat).sum(axis=0), dout.sum(axis=0)
""",
}

BN_KEEP_X = {
    BNF: '''\
def batchnorm_forward(x, gamma, beta, bn_param):
    """Keeps x and the batch statistics; backward recomputes the rest."""
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        mu = np.sum(x, axis=0) / N
        var = np.sum((x - mu) ** 2, axis=0) / N
        out = gamma * ((x - mu) / np.sqrt(var + eps)) + beta
        bn_param["running_mean"] = momentum * running_mean + (1 - momentum) * mu
        bn_param["running_var"] = momentum * running_var + (1 - momentum) * var
        return out, (x, mu, var, eps, gamma)
    if mode == "test":
        bn_param["running_mean"], bn_param["running_var"] = running_mean, running_var
        return gamma * ((x - running_mean) / np.sqrt(running_var + eps)) + beta, None
    raise ValueError(f"unknown mode {mode!r}")
''',
    BNB: '''\
def batchnorm_backward(dout, cache):
    """Stage by stage, each stage's local derivative named."""
    x, mu, var, eps, gamma = cache
    N = x.shape[0]
    xmu = x - mu
    sqrtvar = np.sqrt(var + eps)
    ivar = 1.0 / sqrtvar
    xhat = xmu * ivar
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * xhat, axis=0)
    dxhat = dout * gamma
    divar = np.sum(dxhat * xmu, axis=0)
    dxmu1 = dxhat * ivar
    dsqrtvar = -1.0 / sqrtvar**2 * divar
    dvar = 0.5 / np.sqrt(var + eps) * dsqrtvar
    dsq = np.ones_like(x) / N * dvar
    dxmu2 = 2 * xmu * dsq
    dx1 = dxmu1 + dxmu2
    dmu = -np.sum(dxmu1 + dxmu2, axis=0)
    dx2 = np.ones_like(x) / N * dmu
    return dx1 + dx2, dgamma, dbeta
''',
    BNA: """\
def batchnorm_backward_alt(dout, cache):
    x, mu, var, eps, gamma = cache
    N = x.shape[0]
    std = np.sqrt(var + eps)
    xhat = (x - mu) / std
    dxhat = dout * gamma
    dx = (dxhat - dxhat.sum(axis=0) / N - xhat * (dxhat * xhat).sum(axis=0) / N) / std
    return dx, np.einsum("nd,nd->d", dout, xhat), dout.sum(axis=0)
""",
}

LN_TRANSPOSED = {
    LNF: '''\
def layernorm_forward(x, gamma, beta, ln_param):
    """Batch norm's arithmetic on x.T: its columns are x's rows."""
    eps = ln_param.get("eps", 1e-5)
    xt = x.T
    mu = xt.mean(axis=0)
    var = xt.var(axis=0)
    x_hat = ((xt - mu) / np.sqrt(var + eps)).T
    return x_hat * gamma + beta, (x_hat, np.sqrt(var + eps), gamma)
''',
    LNB: """\
def layernorm_backward(dout, cache):
    x_hat, std, gamma = cache
    g = (dout * gamma).T
    xt = x_hat.T
    dx = (g - g.mean(axis=0) - xt * (g * xt).mean(axis=0)) / std
    return dx.T, (dout * x_hat).sum(axis=0), dout.sum(axis=0)
""",
}

LN_STAGED = {
    LNF: """\
def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = np.mean(x, axis=1, keepdims=True)
    var = np.mean((x - mu) ** 2, axis=1, keepdims=True)
    out = gamma * (x - mu) / np.sqrt(var + eps) + beta
    return out, {"x": x, "mu": mu, "var": var, "eps": eps, "gamma": gamma}
""",
    LNB: '''\
def layernorm_backward(dout, cache):
    """Node by node, the sums over each row."""
    x, mu, var, eps, gamma = cache["x"], cache["mu"], cache["var"], cache["eps"], cache["gamma"]
    D = x.shape[1]
    std = np.sqrt(var + eps)
    x_hat = (x - mu) / std
    dx_hat = dout * gamma
    dvar = np.sum(dx_hat * (x - mu), axis=1, keepdims=True) * -0.5 * std**-3
    dmu = -np.sum(dx_hat, axis=1, keepdims=True) / std
    dmu = dmu + dvar * np.mean(-2 * (x - mu), axis=1, keepdims=True)
    dx = dx_hat / std + dvar * 2 * (x - mu) / D + dmu / D
    return dx, np.sum(dout * x_hat, axis=0), np.sum(dout, axis=0)
''',
}

DROPOUT_BINOMIAL = {
    DF: '''\
def dropout_forward(x, dropout_param):
    """A binomial draw: another draw order, the same statistics."""
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    if mode == "test":
        return x, (dropout_param, None)
    if mode != "train":
        raise ValueError(mode)
    mask = np.random.binomial(1, p, size=x.shape) / p
    return x * mask, (dropout_param, mask)
''',
    DB: """\
def dropout_backward(dout, cache):
    dropout_param, mask = cache
    if dropout_param["mode"] == "test":
        return dout
    return dout * mask
""",
}

DROPOUT_WHERE = {
    DF: '''\
def dropout_forward(x, dropout_param):
    """A boolean mask, scaled with np.where; the uniform draws compared the other way."""
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    if mode == "train":
        keep = np.random.random_sample(x.shape) >= 1 - p
        return np.where(keep, x / p, 0.0), (mode, keep, p)
    if mode == "test":
        return x, (mode, None, p)
    raise ValueError(mode)
''',
    DB: """\
def dropout_backward(dout, cache):
    mode, keep, p = cache
    return np.where(keep, dout / p, 0.0) if mode == "train" else dout
""",
}

DROPOUT_FRESH_GENERATOR = {
    DF: '''\
def dropout_forward(x, dropout_param):
    """np.random after the seed, when one is given (the API); else a fresh generator of its
    own, seeded by the operating system, for every call."""
    p, mode = dropout_param["p"], dropout_param["mode"]
    if mode == "test":
        return x, (dropout_param, None)
    if mode != "train":
        raise ValueError(f"unknown dropout mode {mode!r}")
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
        uniform = np.random.random_sample(x.shape)
    else:
        uniform = np.random.default_rng().random(x.shape)
    keep = uniform < p
    return np.where(keep, x / p, 0.0), (dropout_param, keep / p)
''',
    DB: """\
def dropout_backward(dout, cache):
    dropout_param, scaled_mask = cache
    return dout if scaled_mask is None else dout * scaled_mask
""",
}

NET_STANDALONE = '''\
class FullyConnectedNet:
    """Written from scratch, not subclassing 04's: one list of layers walked both ways."""

    def __init__(self, hidden_dims, input_dim, num_classes, dropout_keep_ratio=1,
                 normalization=None, reg=0.0, weight_scale=1e-2, dtype=np.float32, seed=None):
        rng = np.random.default_rng(seed)
        dims = [input_dim, *hidden_dims, num_classes]
        self.reg, self.dtype, self.num_layers = reg, dtype, len(dims) - 1
        self.normalization = normalization
        self.params = {}
        for i in range(1, self.num_layers + 1):
            W = weight_scale * rng.standard_normal((dims[i - 1], dims[i]))
            self.params[f"W{i}"] = W.astype(dtype)
            self.params[f"b{i}"] = np.zeros(dims[i], dtype=dtype)
            if normalization and i < self.num_layers:
                self.params[f"gamma{i}"] = np.ones(dims[i], dtype=dtype)
                self.params[f"beta{i}"] = np.zeros(dims[i], dtype=dtype)
        self.use_dropout = dropout_keep_ratio != 1
        self.dropout_param = {"mode": "train", "p": dropout_keep_ratio}
        if seed is not None:
            self.dropout_param["seed"] = seed
        self.bn_params = [{"mode": "train"} for _ in hidden_dims]

    def loss(self, X, y=None):
        mode = "train" if y is not None else "test"
        self.dropout_param["mode"] = mode
        for bn in self.bn_params:
            bn["mode"] = mode
        h, tape = X.astype(self.dtype), []
        for i in range(1, self.num_layers + 1):
            h, c = affine_forward(h, self.params[f"W{i}"], self.params[f"b{i}"])
            tape.append(("affine", i, c))
            if i == self.num_layers:
                break
            if self.normalization == "batchnorm":
                h, c = batchnorm_forward(h, self.params[f"gamma{i}"], self.params[f"beta{i}"],
                                         self.bn_params[i - 1])
                tape.append(("batchnorm", i, c))
            elif self.normalization == "layernorm":
                h, c = layernorm_forward(h, self.params[f"gamma{i}"], self.params[f"beta{i}"], {})
                tape.append(("layernorm", i, c))
            h, c = relu_forward(h)
            tape.append(("relu", i, c))
            if self.use_dropout:
                h, c = dropout_forward(h, self.dropout_param)
                tape.append(("dropout", i, c))
        if y is None:
            return h
        loss, d = softmax_loss(h, y)
        grads = {}
        for kind, i, c in reversed(tape):
            if kind == "affine":
                d, dW, grads[f"b{i}"] = affine_backward(d, c)
                grads[f"W{i}"] = dW + self.reg * self.params[f"W{i}"]
                loss += 0.5 * self.reg * np.sum(self.params[f"W{i}"] ** 2)
            elif kind == "batchnorm":
                d, grads[f"gamma{i}"], grads[f"beta{i}"] = batchnorm_backward(d, c)
            elif kind == "layernorm":
                d, grads[f"gamma{i}"], grads[f"beta{i}"] = layernorm_backward(d, c)
            elif kind == "relu":
                d = relu_backward(d, c)
            else:
                d = dropout_backward(d, c)
        return loss, grads
'''

NET_SUBCLASS_BLOCKS = '''\
class FullyConnectedNet(FullyConnectedNet04):
    """Subclassing 04's, each hidden layer one block function forwards and backwards."""

    def __init__(self, hidden_dims, input_dim, num_classes, dropout_keep_ratio=1,
                 normalization=None, reg=0.0, weight_scale=1e-2, dtype=np.float32, seed=None):
        if normalization not in (None, "batchnorm", "layernorm"):
            raise ValueError(normalization)
        super().__init__(hidden_dims, input_dim, num_classes, reg=reg,
                         weight_scale=weight_scale, dtype=dtype, seed=seed)
        self.normalization = normalization
        self.use_dropout = dropout_keep_ratio != 1
        self.dropout_param = {"mode": "train", "p": dropout_keep_ratio}
        if seed is not None:
            self.dropout_param["seed"] = seed
        self.bn_params = [{"mode": "train"} for _ in hidden_dims]
        if normalization:
            for i, width in enumerate(hidden_dims, start=1):
                self.params["gamma%d" % i] = np.ones(width, dtype)
                self.params["beta%d" % i] = np.zeros(width, dtype)

    def _block(self, h, i):
        p = self.params
        h, c1 = affine_forward(h, p["W%d" % i], p["b%d" % i])
        c2 = None
        if self.normalization == "batchnorm":
            h, c2 = batchnorm_forward(h, p["gamma%d" % i], p["beta%d" % i], self.bn_params[i - 1])
        elif self.normalization == "layernorm":
            h, c2 = layernorm_forward(h, p["gamma%d" % i], p["beta%d" % i], {"eps": 1e-5})
        h, c3 = relu_forward(h)
        c4 = None
        if self.use_dropout:
            h, c4 = dropout_forward(h, self.dropout_param)
        return h, (c1, c2, c3, c4)

    def _block_backward(self, d, i, caches, grads):
        c1, c2, c3, c4 = caches
        if c4 is not None:
            d = dropout_backward(d, c4)
        d = relu_backward(d, c3)
        if self.normalization == "batchnorm":
            d, grads["gamma%d" % i], grads["beta%d" % i] = batchnorm_backward(d, c2)
        elif self.normalization == "layernorm":
            d, grads["gamma%d" % i], grads["beta%d" % i] = layernorm_backward(d, c2)
        d, grads["W%d" % i], grads["b%d" % i] = affine_backward(d, c1)
        return d

    def loss(self, X, y=None):
        mode = "test" if y is None else "train"
        self.dropout_param["mode"] = mode
        for bn_param in self.bn_params:
            bn_param["mode"] = mode
        h, caches = X.astype(self.dtype), []
        L = self.num_layers
        for i in range(1, L):
            h, c = self._block(h, i)
            caches.append(c)
        scores, last = affine_forward(h, self.params["W%d" % L], self.params["b%d" % L])
        if y is None:
            return scores
        loss, d = softmax_loss(scores, y)
        grads = {}
        d, grads["W%d" % L], grads["b%d" % L] = affine_backward(d, last)
        for i in range(L - 1, 0, -1):
            d = self._block_backward(d, i, caches[i - 1], grads)
        for i in range(1, L + 1):
            W = self.params["W%d" % i]
            loss = loss + 0.5 * self.reg * (W**2).sum()
            grads["W%d" % i] = grads["W%d" % i] + self.reg * W
        return loss, grads
'''

EXPECTED_SURVIVORS: set[str] = set()

# The report names the slip (tests/test_mutants.py::
# test_a_report_names_the_failure_that_explains_the_others), issue 54: these were told to
# mind the momentum convention or to "add the gradients of every path".
FIRST_FAILURE = {
    "bn forward: running averages kept (1, D) by keepdims": {
        "batchnorm_forward": ("running", {"running": "no keepdims"})
    },
    "bn backward: dx without gamma": {"batchnorm_backward": ("", {"dx for": "gamma is missing"})},
    "bn backward: std recomputed without eps": {
        "batchnorm_backward": ("", {"dx for": "a std without eps"})
    },
    # Review 54: the hint said "dx = dout * mask / p", this very bug where the cached mask
    # holds the 1 / p.
    "dropout backward: divided by p again (the cached mask holds the 1 / p)": {
        "dropout_backward": ("error of dx", {"error of dx": "exactly once"})
    },
}

# Right values in another shape ((1, D) for (D,)) lose their sub-checks, not half the cell
# (tests/test_mutants.py::test_right_values_in_another_shape_are_not_capped).
NOT_CAPPED = {"bn forward: running averages kept (1, D) by keepdims": {"batchnorm_forward"}}

LN_BACKWARD_PER_ROW_JACOBIAN = {
    LNB: '''\
def layernorm_backward(dout, cache):
    """Per row, the closed-form Jacobian of x_hat: (I - 1/D - x_hat x_hat^T / D) / std."""
    x_hat, std, gamma = cache
    N, D = dout.shape
    dx = np.empty_like(dout, dtype=float)
    for i in range(N):
        J = (np.eye(D) - 1.0 / D - np.outer(x_hat[i], x_hat[i]) / D) / std[i, 0]
        dx[i] = J @ (dout[i] * gamma)
    return dx, np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
''',
}

# The staged layer norm of public CS231n solutions: the batch-norm code on the transpose,
# its backward through var and mu (issue 37 saw such a pair drift by 1.4e-2; this one keeps
# full marks, as it should).
LN_CS231N_STAGED = {
    LNF: """\
def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    x = x.T
    mu = np.mean(x, axis=0)
    xmu = x - mu
    sq = xmu ** 2
    var = 1. / x.shape[0] * np.sum(sq, axis=0)
    sqrtvar = np.sqrt(var + eps)
    ivar = 1. / sqrtvar
    xhat = xmu * ivar
    xhat = xhat.T
    out = gamma * xhat + beta
    cache = (xhat, gamma, xmu, ivar, sqrtvar, var, eps)
    return out, cache
""",
    LNB: """\
def layernorm_backward(dout, cache):
    xhat, gamma, xmu, ivar, sqrtvar, var, eps = cache
    dxhat = (dout * gamma).T
    N, D = dxhat.shape
    dvar = np.sum(dxhat * xmu, axis=0) * -0.5 * (var + eps) ** (-1.5)
    dmu = np.sum(dxhat * -ivar, axis=0) + dvar * np.mean(-2. * xmu, axis=0)
    dx = dxhat * ivar + dvar * 2 * xmu / N + dmu / N
    dgamma = np.sum(dout * xhat, axis=0)
    dbeta = np.sum(dout, axis=0)
    return dx.T, dgamma, dbeta
""",
}

DROPOUT_BOOLEAN_CACHE = {
    DF: """\
def dropout_forward(x, dropout_param):
    \"\"\"Inverted dropout; the cache keeps a boolean mask and p.\"\"\"
    p, mode = dropout_param["p"], dropout_param["mode"]
    if "seed" in dropout_param:
        np.random.seed(dropout_param["seed"])
    if mode == "test":
        return x, (mode, p, None)
    if mode != "train":
        raise ValueError(f"unknown mode {mode!r}")
    keep = np.random.rand(*x.shape) < p
    return x * keep / p, (mode, p, keep)
""",
    DB: """\
def dropout_backward(dout, cache):
    mode, p, keep = cache
    if keep is None:
        return dout
    return np.where(keep, dout / p, 0.0)
""",
}

# Review 54: test mode as an inference engine runs it, x * scale + shift.
BN_FOLDED_TEST_MODE = '''\
#| export
def batchnorm_forward(x, gamma, beta, bn_param):
    """Batch normalisation of x (N, D); test mode as an inference engine runs it."""
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    D = x.shape[1]
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        mu, var = np.mean(x, axis=0), np.var(x, axis=0)
        std = np.sqrt(var + eps)
        x_hat = (x - mu) / std
        out = gamma * x_hat + beta
        cache = (x_hat, x - mu, std, gamma)
        running_mean = momentum * running_mean + (1 - momentum) * mu
        running_var = momentum * running_var + (1 - momentum) * var
    elif mode == "test":
        scale = gamma / np.sqrt(running_var + eps)
        out = x * scale + (beta - running_mean * scale)
        cache = None
    else:
        raise ValueError(f"unknown mode {mode!r}")
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache
'''

ALTERNATES = [
    Alternate("layer norm backward as a per-row Jacobian", LN_BACKWARD_PER_ROW_JACOBIAN),
    Alternate("layer norm staged on the transpose, CS231n-style", LN_CS231N_STAGED),
    Alternate("batch norm with np.var and a dict cache", BN_VAR_DICT),
    Alternate("batch norm keeping x, stage by stage", BN_KEEP_X),
    Alternate("layer norm on the transpose", LN_TRANSPOSED),
    Alternate("layer norm staged, with a dict cache", LN_STAGED),
    Alternate("dropout with a binomial draw", DROPOUT_BINOMIAL),
    Alternate("dropout with np.where and the draws compared the other way", DROPOUT_WHERE),
    Alternate("net written from scratch, walking a tape", {NET: NET_STANDALONE}),
    Alternate("net subclassing 04's, one block per hidden layer", {NET: NET_SUBCLASS_BLOCKS}),
    Alternate(
        "predictions computed",
        {
            PRED: "def predicted_running_fraction(k, momentum):\n"
            "    return 1 - np.exp(k * np.log(momentum))\n\n\n"
            "def predicted_test_scale(p):\n    return p**-1\n\n\n"
            "def predicted_batch_of_one_output(gamma, beta):\n    return 0 * gamma + beta\n"
        },
    ),
    Alternate("dropout with a boolean mask, scaled in both passes", DROPOUT_BOOLEAN_CACHE),
    Alternate(
        "dropout from a fresh default_rng() without a seed, np.random with one",
        DROPOUT_FRESH_GENERATOR,
    ),
    Alternate(
        "scale predictions computed",
        {
            SCALE: "def predicted_gradient_ratio_with_batchnorm(c):\n"
            "    return c**-1.0\n\n\n"
            "def predicted_score_ratio_without_norm(c, layers):\n"
            "    return float(np.exp(layers * np.log(c)))\n"
        },
    ),
    Alternate(
        "scale predictions as a product, layer by layer",
        {
            SCALE: "def predicted_gradient_ratio_with_batchnorm(c):\n"
            "    loss_ratio = 1.0  # L(cW) = L(W)\n"
            "    return loss_ratio / c\n\n\n"
            "def predicted_score_ratio_without_norm(c, layers):\n"
            "    ratio = 1.0\n"
            "    for _ in range(layers):\n"
            "        ratio *= c\n"
            "    return ratio\n"
        },
    ),
    Alternate(
        "batch norm with np.var, test mode folded into one scale and shift",
        {BNF: BN_FOLDED_TEST_MODE},
    ),
]

# Each graded function, and the solution cell that defines it.
GRADED_FUNCTIONS = {
    "batchnorm_forward": {BNF},
    "batchnorm_backward": {BNB},
    "batchnorm_backward_alt": {BNA},
    "layernorm_forward": {LNF},
    "layernorm_backward": {LNB},
    "dropout_forward": {DF},
    "dropout_backward": {DB},
    "FullyConnectedNet": {NET},
}

# Review 60: a backward that recomputes the std from a cache of (x, gamma) with eps = 1e-5,
# whatever bn_param / ln_param said (the forward's cache changes with it: two cells). It
# kept full marks while no backward case had a non-default eps.
BN_CACHE_X_GAMMA = """\
#| export
def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    D = x.shape[1]
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    if mode == "train":
        mu = x.mean(axis=0)
        centred = x - mu
        var = np.mean(centred**2, axis=0)
        out = gamma * centred / np.sqrt(var + eps) + beta
        cache = (x, gamma)
        running_mean = momentum * running_mean + (1 - momentum) * mu
        running_var = momentum * running_var + (1 - momentum) * var
    elif mode == "test":
        out = gamma * (x - running_mean) / np.sqrt(running_var + eps) + beta
        cache = None
    else:
        raise ValueError(f"bn_param['mode'] is {mode!r}: use 'train' or 'test'")
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return out, cache
"""

BN_BACKWARD_DEFAULT_EPS = """\
#| export
def batchnorm_backward(dout, cache):
    x, gamma = cache
    N = x.shape[0]
    centred = x - x.mean(axis=0)
    std = np.sqrt(np.mean(centred**2, axis=0) + 1e-5)
    x_hat = centred / std
    g = dout * gamma
    dx = (N * g - g.sum(axis=0) - x_hat * np.sum(g * x_hat, axis=0)) / (N * std)
    return dx, np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
"""

BN_ALT_THROUGH_BACKWARD = """\
#| export
def batchnorm_backward_alt(dout, cache):
    return batchnorm_backward(dout, cache)
"""

LN_CACHE_X_GAMMA = """\
#| export
def layernorm_forward(x, gamma, beta, ln_param):
    eps = ln_param.get("eps", 1e-5)
    mu = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta, (x, gamma)
"""

LN_BACKWARD_DEFAULT_EPS = """\
#| export
def layernorm_backward(dout, cache):
    x, gamma = cache
    D = x.shape[1]
    mu = x.mean(axis=1, keepdims=True)
    std = np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
    x_hat = (x - mu) / std
    g = dout * gamma
    dx = (D * g - g.sum(axis=1, keepdims=True)
          - x_hat * np.sum(g * x_hat, axis=1, keepdims=True)) / (D * std)
    return dx, np.sum(dout * x_hat, axis=0), dout.sum(axis=0)
"""

MUTANTS += [
    Mutant(
        "bn backward: std recomputed with the default eps, not bn_param's",
        BNB,
        (),
        frozenset({"batchnorm_backward", "batchnorm_backward_alt"}),
        code=BN_BACKWARD_DEFAULT_EPS,
        more=((BNF, BN_CACHE_X_GAMMA), (BNA, BN_ALT_THROUGH_BACKWARD)),
    ),
    Mutant(
        "ln backward: std recomputed with the default eps, not ln_param's",
        LNB,
        (),
        frozenset({"layernorm_backward"}),
        code=LN_BACKWARD_DEFAULT_EPS,
        more=((LNF, LN_CACHE_X_GAMMA),),
    ),
]

# Review 60: the net flips only dropout to test mode: batch norm normalises the test batch
# with its own statistics. Its scores, the network's output, kept 3.55 of 4 while the
# test-mode score rules had no cap.
MUTANTS += [
    wrong(
        "net: bn_params left in train mode at test time",
        NET,
        {"finished_net"},
        ('        for bn_param in self.bn_params:\n            bn_param["mode"] = mode\n', ""),
    ),
]
