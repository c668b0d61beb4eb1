"""Student variants of assignment 06 for the mutation harness (see tests/variant_kinds.py).

No mutant here is caught by time alone (a correct but slow fast pair): timing-based
assertions stay out of the tests, so `conv_fast_speed` is shown to catch wrong results
(its time is credited only when the fast pair matches the loops).
"""

from course.authoring.variants import Alternate, m, wrong

ASSIGNMENT, NOTEBOOK = "06_convolution", "convolution"

CONV, POOL, PRED = "conv_naive_solution", "pool_naive_solution", "predictions_solution"
FAST, SBN, NET = "conv_fast_solution", "spatial_batchnorm_solution", "convnet_solution"

FORWARD, BACKWARD = "conv_forward_naive", "conv_backward_naive"
PREDICTIONS = "conv_predictions"

MUTANTS = [
    # conv_forward_naive
    m(
        "conv: no ValueError when the filter does not tile the padded input",
        CONV,
        {FORWARD},
        (
            "    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:\n",
            "    if False:\n",
        ),
    ),
    m(
        "conv: the bias left out",
        CONV,
        {FORWARD},
        ("np.sum(window * w[f]) + b[f]", "np.sum(window * w[f])"),
    ),
    m(
        "conv: a true convolution (the filter flipped)",
        CONV,
        {FORWARD},
        ("np.sum(window * w[f]) + b[f]", "np.sum(window * w[f, :, ::-1, ::-1]) + b[f]"),
    ),
    m(
        "conv: the window ignores the stride",
        CONV,
        {FORWARD},
        (
            "window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]",
            "window = x_pad[n, :, i : i + HH, j : j + WW]",
        ),
    ),
    m(
        "conv: rows and columns of the window swapped",
        CONV,
        {FORWARD},
        (
            "window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]",
            "window = x_pad[n, :, j * stride : j * stride + HH, i * stride : i * stride + WW]",
        ),
    ),
    # conv_backward_naive
    m(
        "conv: dx cropped with [pad:-pad] (empty when pad == 0)",
        CONV,
        {BACKWARD},
        (
            "return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, db",
            "return dx_pad[:, :, pad:-pad, pad:-pad], dw, db",
        ),
    ),
    m(
        "conv: dx assigned, not accumulated",
        CONV,
        {BACKWARD},
        (
            "dx_pad[n, :, rows, cols] += w[f] * dout[n, f, i, j]",
            "dx_pad[n, :, rows, cols] = w[f] * dout[n, f, i, j]",
        ),
    ),
    m(
        "conv: dw assigned, not accumulated",
        CONV,
        {BACKWARD},
        (
            "dw[f] += x_pad[n, :, rows, cols] * dout[n, f, i, j]",
            "dw[f] = x_pad[n, :, rows, cols] * dout[n, f, i, j]",
        ),
    ),
    m(
        "conv: the padding cut off the wrong side of dx",
        CONV,
        {BACKWARD},
        (
            "return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, db",
            "return dx_pad[:, :, :H, :W], dw, db",
        ),
    ),
    m(
        "conv: db from the first image only",
        CONV,
        {BACKWARD},
        ("db = dout.sum(axis=(0, 2, 3))", "db = dout[0].sum(axis=(1, 2))"),
    ),
    # max pooling
    m(
        "pool: average pooling",
        POOL,
        {"max_pool_naive"},
        ("out[:, :, i, j] = window.max(axis=(2, 3))", "out[:, :, i, j] = window.mean(axis=(2, 3))"),
    ),
    m(
        "pool: overlapping windows overwrite dx",
        POOL,
        {"max_pool_naive"},
        (
            "dx[n, c, i * stride + dr, j * stride + dc] += dout[:, :, i, j]",
            "dx[n, c, i * stride + dr, j * stride + dc] = dout[:, :, i, j]",
        ),
    ),
    m(
        "pool: the argmax unravelled with height and width swapped",
        POOL,
        {"max_pool_naive"},
        ("argmax(axis=2), (ph, pw))", "argmax(axis=2), (pw, ph))"),
    ),
    m(
        "pool: the output size assumes windows that do not overlap",
        POOL,
        {"max_pool_naive"},
        (
            "H_out, W_out = 1 + (H - ph) // stride, 1 + (W - pw) // stride",
            "H_out, W_out = H // ph, W // pw",
        ),
    ),
    # predictions
    m(
        "predict: the padding forgotten in the output size",
        PRED,
        {PREDICTIONS},
        ("1 + (H + 2 * pad - HH) // stride", "1 + (H - HH) // stride"),
    ),
    m(
        "predict: a receptive field of filter_size * layers",
        PRED,
        {PREDICTIONS},
        ("return 1 + layers * (filter_size - 1)", "return layers * filter_size"),
    ),
    m(
        "predict: im2col as large as the filter's width",
        PRED,
        {PREDICTIONS},
        ("return HH * WW / stride**2", "return HH / stride"),
    ),
    m(
        "predict: the notebook's settings answered, not the formula",
        PRED,
        {PREDICTIONS},
        (
            "return HH * WW / stride**2",
            "return 9.0",
        ),
        ("return 1 + layers * (filter_size - 1)", "return 7"),
    ),
    # conv_forward_fast / conv_backward_fast
    m(
        "fast: im2col rows in (HH, WW, C) order, the filters in (C, HH, WW)",
        FAST,
        {"conv_fast", "conv_fast_speed"},
        ("shape=(N, C, HH, WW, H_out, W_out),", "shape=(N, HH, WW, C, H_out, W_out),"),
        ("strides=(sN, sC, sH, sW,", "strides=(sN, sH, sW, sC,"),
    ),
    m(
        "fast: the windows ignore the stride",
        FAST,
        {"conv_fast"},
        ("sW, stride * sH, stride * sW),", "sW, sH, sW),"),
    ),
    m(
        "fast: col2im overwrites overlapping windows",
        FAST,
        {"conv_fast", "conv_fast_speed"},
        (
            "dx_pad[:, :, rows, cols_] += dcols[:, :, dr, dc]",
            "dx_pad[:, :, rows, cols_] = dcols[:, :, dr, dc]",
        ),
    ),
    m(
        "fast: db averaged over the pixels",
        FAST,
        {"conv_fast", "conv_fast_speed"},
        ("db = d.sum(axis=(0, 2))", "db = d.mean(axis=(0, 2))"),
    ),
    # spatial batch norm
    m(
        "sbn backward: dx moved back without the transpose",
        SBN,
        {"spatial_batchnorm"},
        (
            "return dx.reshape(N, H, W, C).transpose(0, 3, 1, 2), dgamma, dbeta",
            "return dx.reshape(N, C, H, W), dgamma, dbeta",
        ),
    ),
    m(
        "sbn: flattened without moving the channels last",
        SBN,
        {"spatial_batchnorm"},
        ("flat = x.transpose(0, 2, 3, 1).reshape(-1, C)", "flat = x.reshape(-1, C)"),
    ),
    m(
        "sbn: the output not moved back to (N, C, H, W)",
        SBN,
        {"spatial_batchnorm"},
        (
            "return out.reshape(N, H, W, C).transpose(0, 3, 1, 2), (cache, x.shape)",
            "return out.reshape(N, C, H, W), (cache, x.shape)",
        ),
    ),
    m(
        "sbn: dout flattened without moving the channels last",
        SBN,
        {"spatial_batchnorm"},
        ("dflat = dout.transpose(0, 2, 3, 1).reshape(-1, C)", "dflat = dout.reshape(-1, C)"),
    ),
    # SmallConvNet
    m(
        "net: the seed ignored (default_rng() with no seed)",
        NET,
        {"convnet_training"},
        ("rng = np.random.default_rng(seed)", "rng = np.random.default_rng()"),
    ),
    wrong(
        "net: He's fan-in of the convolution as C, not C * 3 * 3",
        NET,
        {"convnet_training"},
        ("np.sqrt(2 / (C * 9))", "np.sqrt(2 / C)"),
    ),
    wrong(
        "net: He's rule with the convolution's fan-out, F * 3 * 3",
        NET,
        {"convnet_training"},
        ("np.sqrt(2 / (C * 9))", "np.sqrt(2 / (num_filters * 9))"),
    ),
    wrong(
        "net: the convolution's weights of std 1 (He's factor forgotten)",
        NET,
        {"convnet_training"},
        ("* np.sqrt(2 / (C * 9))", ""),
    ),
    wrong(
        "net: every weight at scale 0.01",
        NET,
        {"convnet_training"},
        ("* np.sqrt(2 / (C * 9))", "* 0.01"),
        ("* np.sqrt(2 / hidden)", "* 0.01"),
    ),
    # Issue 54: kept 3 of 3 while only the weights were judged at construction.
    m(
        "net: the convolution's bias started at 0.01 (the text says biases 0)",
        NET,
        {"convnet_training"},
        (
            'self.params["b1"] = np.zeros(num_filters)',
            'self.params["b1"] = np.full(num_filters, 0.01)',
        ),
    ),
    m(
        "net: the regulariser without its 1/2",
        NET,
        {"convnet_training"},
        (
            "loss += 0.5 * self.reg * np.sum(p[name] ** 2)",
            "loss += self.reg * np.sum(p[name] ** 2)",
        ),
    ),
    m(
        "net: no relu",
        NET,
        {"convnet_training"},
        ("relu, relu_cache = relu_forward(conv)", "relu, relu_cache = conv, conv"),
        ("dconv = relu_backward(drelu, relu_cache)", "dconv = drelu"),
    ),
    m(
        "net: the convolution's weights not regularised",
        NET,
        {"convnet_training"},
        ('for name in ("W1", "W2"):', 'for name in ("W2",):'),
    ),
    m(
        "net: the regulariser's gradient left out",
        NET,
        {"convnet_training"},
        ("grads[name] = grads[name] + self.reg * p[name]", "grads[name] = grads[name]"),
    ),
    # Review rev37: more realistic slips, each judged in-process before it was added.
    wrong(
        "conv: np.pad(x, pad) pads the batch and channel axes too",
        CONV,
        {FORWARD, BACKWARD},
        (
            "x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))\n    out",
            "x_pad = np.pad(x, pad)\n    out",
        ),
    ),
    wrong(
        "conv: db summed over the filters, not the images",
        CONV,
        {BACKWARD},
        ("db = dout.sum(axis=(0, 2, 3))", "db = dout.sum(axis=(1, 2, 3))"),
    ),
    wrong(
        "conv: dw from the unpadded x",
        CONV,
        {BACKWARD},
        ("dw[f] += x_pad[n, :, rows, cols]", "dw[f] += x[n, :, rows, cols]"),
    ),
    wrong(
        "conv: the output one row and column short (the 1 + forgotten)",
        CONV,
        {FORWARD},
        (
            "H_out = 1 + (H + 2 * pad - HH) // stride\n"
            "    W_out = 1 + (W + 2 * pad - WW) // stride\n    x_pad",
            "H_out = (H + 2 * pad - HH) // stride\n"
            "    W_out = (W + 2 * pad - WW) // stride\n    x_pad",
        ),
    ),
    wrong(
        "pool: the window's width taken as pool_height",
        POOL,
        {"max_pool_naive"},
        (
            "out[:, :, i, j] = window.max(axis=(2, 3))",
            "out[:, :, i, j] = x[:, :, i * stride : i * stride + ph, j * stride : j * stride + ph]"
            ".max(axis=(2, 3))",
        ),
    ),
    wrong(
        "fast: the bias added along the pixels (b, not b[:, None])",
        FAST,
        {"conv_fast"},
        ("out += b[:, None]", "out += b"),
    ),
    wrong(
        "fast: dw averaged over the batch",
        FAST,
        {"conv_fast"},
        ("cols.transpose(0, 2, 1)).sum(axis=0)", "cols.transpose(0, 2, 1)).mean(axis=0)"),
    ),
    wrong(
        "sbn: channels moved last by transpose(0, 3, 2, 1), back by transpose(0, 3, 1, 2)",
        SBN,
        {"spatial_batchnorm"},
        (
            "flat = x.transpose(0, 2, 3, 1).reshape(-1, C)",
            "flat = x.transpose(0, 3, 2, 1).reshape(-1, C)",
        ),
    ),
    wrong(
        "net: Xavier's sqrt(1 / fan_in) for the convolution, not He's",
        NET,
        {"convnet_training"},
        ("np.sqrt(2 / (C * 9))", "np.sqrt(1 / (C * 9))"),
    ),
    wrong(
        "net: the affine layer's He scale from its fan-out (num_classes)",
        NET,
        {"convnet_training"},
        ("np.sqrt(2 / hidden)", "np.sqrt(2 / num_classes)"),
    ),
    wrong(
        "net: the convolution's weights uniform in [0, 1) (rng.random)",
        NET,
        {"convnet_training"},
        ("rng.standard_normal((num_filters, C, 3, 3))", "rng.random((num_filters, C, 3, 3))"),
    ),
    m(
        "net: no padding",
        NET,
        {"convnet_training"},
        (
            'p["W1"], p["b1"], {"stride": 1, "pad": 1})',
            'p["W1"], p["b1"], {"stride": 1, "pad": 0})',
        ),
    ),
    # Review 54.
    wrong(
        "conv: dx cropped with [pad:H] (the end not shifted by pad)",
        CONV,
        {BACKWARD},
        (
            "return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, db",
            "return dx_pad[:, :, pad:H, pad:W], dw, db",
        ),
    ),
    wrong(
        "pool: the window's offset forgotten (every gradient in the first window)",
        POOL,
        {"max_pool_naive"},
        (
            "dx[n, c, i * stride + dr, j * stride + dc] += dout[:, :, i, j]",
            "dx[n, c, dr, dc] += dout[:, :, i, j]",
        ),
    ),
    # Review 54: on the public seed (every stride 2) the report called it "twice the
    # expected value (a contribution counted twice? h instead of 2h?)" (FIRST_FAILURE below).
    m(
        "predict: the im2col ratio divided by the stride, not its square",
        PRED,
        {PREDICTIONS},
        ("return HH * WW / stride**2", "return HH * WW / stride"),
    ),
    wrong(
        "net: the biases regularised too",
        NET,
        {"convnet_training"},
        ('for name in ("W1", "W2"):', 'for name in ("W1", "b1", "W2", "b2"):'),
    ),
    # Review 60: the tiling test on the rows only: a filter that tiles the height but not
    # the width is accepted (the only untiled probe had an even height, an odd width).
    m(
        "conv: ValueError checked on the height only",
        CONV,
        {FORWARD},
        (
            "if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:",
            "if (H + 2 * pad - HH) % stride:",
        ),
    ),
    # Review 60: spatial batch norm hands batchnorm_forward a copy of bn_param: the running
    # averages never reach the caller (it kept 2.36 of 3 while "running" had no cap).
    wrong(
        "sbn: batchnorm_forward given dict(bn_param) (running averages lost)",
        SBN,
        {"spatial_batchnorm"},
        (
            "batchnorm_forward(flat, gamma, beta, bn_param)",
            "batchnorm_forward(flat, gamma, beta, dict(bn_param))",
        ),
    ),
    # Review 60: the same in the fast pair (it keeps conv_fast 4/4): a survivor, below.
    m(
        "fast: ValueError checked on the height only",
        FAST,
        {"conv_fast"},
        (
            "if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:",
            "if (H + 2 * pad - HH) % stride:",
        ),
    ),
]

CONV_VECTORISED_OVER_FILTERS = '''\
def conv_forward_naive(x, w, b, conv_param):
    """Loops over images and output pixels; all filters at once with tensordot."""
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:
        raise ValueError("the filter does not tile the padded input")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.empty((N, F, H_out, W_out))
    for n in range(N):
        for i in range(H_out):
            for j in range(W_out):
                window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                out[n, :, i, j] = np.tensordot(w, window, axes=3) + b
    return out, (x_pad, w, stride, pad)


def conv_backward_naive(dout, cache):
    x_pad, w, stride, pad = cache
    F, _, HH, WW = w.shape
    N, _, H_out, W_out = dout.shape
    dx_pad = np.zeros_like(x_pad)
    dw = np.zeros_like(w)
    for n in range(N):
        for i in range(H_out):
            for j in range(W_out):
                r, c = i * stride, j * stride
                dw += dout[n, :, i, j][:, None, None, None] * x_pad[n, :, r : r + HH, c : c + WW]
                dx_pad[n, :, r : r + HH, c : c + WW] += np.tensordot(dout[n, :, i, j], w, axes=1)
    H, W = x_pad.shape[2] - 2 * pad, x_pad.shape[3] - 2 * pad
    return dx_pad[:, :, pad : pad + H, pad : pad + W], dw, dout.sum(axis=(0, 2, 3))
'''

CONV_SCATTER = '''\
def conv_forward_naive(x, w, b, conv_param):
    """Loops over the filter's offsets: each one adds a shifted, strided slice."""
    s, p = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * p - HH) % s or (W + 2 * p - WW) % s:
        raise ValueError(f"a {HH}x{WW} filter, stride {s}, does not tile {H}x{W} + {p}")
    Ho, Wo = (H + 2 * p - HH) // s + 1, (W + 2 * p - WW) // s + 1
    xp = np.zeros((N, C, H + 2 * p, W + 2 * p))
    xp[:, :, p : p + H, p : p + W] = x
    out = np.zeros((N, F, Ho, Wo)) + b.reshape(1, F, 1, 1)
    for k in range(HH):
        for l in range(WW):
            patch = xp[:, :, k : k + s * Ho : s, l : l + s * Wo : s]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, k, l])
    return out, {"x": x, "w": w, "s": s, "p": p}


def conv_backward_naive(dout, cache):
    x, w, s, p = cache["x"], cache["w"], cache["s"], cache["p"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = dout.shape[2:]
    xp = np.zeros((N, C, H + 2 * p, W + 2 * p))
    xp[:, :, p : p + H, p : p + W] = x
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for k in range(HH):
        for l in range(WW):
            patch = xp[:, :, k : k + s * Ho : s, l : l + s * Wo : s]
            dw[:, :, k, l] = np.einsum("nfhw,nchw->fc", dout, patch)
            dxp[:, :, k : k + s * Ho : s, l : l + s * Wo : s] += np.einsum(
                "nfhw,fc->nchw", dout, w[:, :, k, l]
            )
    return dxp[:, :, p : p + H, p : p + W], dw, np.einsum("nfhw->f", dout)
'''

POOL_FOUR_LOOPS = """\
def max_pool_forward_naive(x, pool_param):
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, H, W = x.shape
    out = np.zeros((N, C, (H - ph) // s + 1, (W - pw) // s + 1))
    for n in range(N):
        for c in range(C):
            for i in range(out.shape[2]):
                for j in range(out.shape[3]):
                    out[n, c, i, j] = np.max(x[n, c, i * s : i * s + ph, j * s : j * s + pw])
    return out, (x, pool_param)


def max_pool_backward_naive(dout, cache):
    x, pool_param = cache
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    dx = np.zeros(x.shape)
    for n, c, i, j in np.ndindex(*dout.shape):
        window = x[n, c, i * s : i * s + ph, j * s : j * s + pw]
        k, l = np.unravel_index(np.argmax(window), window.shape)
        dx[n, c, i * s + k, j * s + l] += dout[n, c, i, j]
    return dx
"""

POOL_MASK = '''\
def max_pool_forward_naive(x, pool_param):
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    windows = np.lib.stride_tricks.sliding_window_view(x, (ph, pw), axis=(2, 3))[:, :, ::s, ::s]
    return windows.max(axis=(4, 5)), (x, pool_param)


def max_pool_backward_naive(dout, cache):
    """Where each window equals its maximum (no ties: exactly one place) gets dout."""
    x, pool_param = cache
    ph, pw, s = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    dx = np.zeros_like(x, dtype=float)
    for i in range(dout.shape[2]):
        for j in range(dout.shape[3]):
            window = x[:, :, i * s : i * s + ph, j * s : j * s + pw]
            mask = window == window.max(axis=(2, 3), keepdims=True)
            dx[:, :, i * s : i * s + ph, j * s : j * s + pw] += mask * dout[:, :, i, j, None, None]
    return dx
'''

PRED_OTHER_FORMS = """\
def predicted_output_shape(x_shape, w_shape, stride, pad):
    sizes = [(x_shape[k] + 2 * pad - w_shape[k]) // stride + 1 for k in (2, 3)]
    return [x_shape[0], w_shape[0], *sizes]


def predicted_receptive_field(layers, filter_size):
    field = 1
    for _ in range(layers):
        field += filter_size - 1
    return float(field)


def predicted_im2col_ratio(HH, WW, stride):
    return (HH / stride) * (WW / stride)
"""

PRED_WITHIN_BAND = """\
def predicted_output_shape(x_shape, w_shape, stride, pad):
    N, _, H, W = x_shape
    F, _, HH, WW = w_shape
    return N, F, (H + 2 * pad - HH) // stride + 1, (W + 2 * pad - WW) // stride + 1


def predicted_receptive_field(layers, filter_size):
    return layers * filter_size - (layers - 1)


def predicted_im2col_ratio(HH, WW, stride):
    return 0.95 * HH * WW / stride**2  # a little less for the border: within the band
"""

FAST_EINSUM = '''\
def conv_forward_fast(x, w, b, conv_param):
    """sliding_window_view for the windows, one tensordot for the products."""
    s, p = conv_param["stride"], conv_param["pad"]
    HH, WW = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (HH, WW), axis=(2, 3))[:, :, ::s, ::s]
    out = np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)
    return out + b[None, :, None, None], (xp, w, s, p)


def conv_backward_fast(dout, cache):
    xp, w, s, p = cache
    F, C, HH, WW = w.shape
    Ho, Wo = dout.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xp, (HH, WW), axis=(2, 3))[:, :, ::s, ::s]
    dw = np.tensordot(dout, win, axes=([0, 2, 3], [0, 2, 3]))
    dxp = np.zeros_like(xp)
    for k in range(HH):
        for l in range(WW):
            dxp[:, :, k : k + s * Ho : s, l : l + s * Wo : s] += np.tensordot(
                dout, w[:, :, k, l], axes=([1], [0])
            ).transpose(0, 3, 1, 2)
    H, W = xp.shape[2] - 2 * p, xp.shape[3] - 2 * p
    return dxp[:, :, p : p + H, p : p + W], dw, dout.sum(axis=(0, 2, 3))
'''

FAST_COPY_LOOP = '''\
def conv_forward_fast(x, w, b, conv_param):
    """im2col built by copying one strided slice per filter offset (rows (C, HH, WW))."""
    s, p = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = (H + 2 * p - HH) // s + 1, (W + 2 * p - WW) // s + 1
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    cols = np.empty((C, HH, WW, N, Ho, Wo))
    for k in range(HH):
        for l in range(WW):
            cols[:, k, l] = xp[:, :, k : k + s * Ho : s, l : l + s * Wo : s].transpose(1, 0, 2, 3)
    cols = cols.reshape(C * HH * WW, -1)
    out = (w.reshape(F, -1) @ cols).reshape(F, N, Ho, Wo).transpose(1, 0, 2, 3)
    return out + b.reshape(1, F, 1, 1), (x.shape, w, cols, s, p)


def conv_backward_fast(dout, cache):
    (N, C, H, W), w, cols, s, p = cache
    F, _, HH, WW = w.shape
    Ho, Wo = dout.shape[2:]
    d = dout.transpose(1, 0, 2, 3).reshape(F, -1)
    dw = (d @ cols.T).reshape(w.shape)
    dcols = (w.reshape(F, -1).T @ d).reshape(C, HH, WW, N, Ho, Wo)
    dxp = np.zeros((N, C, H + 2 * p, W + 2 * p))
    for k in range(HH):
        for l in range(WW):
            patch = dcols[:, k, l].transpose(1, 0, 2, 3)
            dxp[:, :, k : k + s * Ho : s, l : l + s * Wo : s] += patch
    return dxp[:, :, p : H + p, p : W + p], dw, d.sum(axis=1)
'''

SBN_DIRECT = '''\
def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    """Statistics over axes (0, 2, 3) directly, running averages as in 05."""
    eps, momentum = bn_param.get("eps", 1e-5), bn_param.get("momentum", 0.9)
    C = x.shape[1]
    if bn_param["mode"] == "train":
        mean, var = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
        for key, stat in (("running_mean", mean), ("running_var", var)):
            bn_param[key] = momentum * bn_param.get(key, np.zeros(C)) + (1 - momentum) * stat
    else:
        mean, var = bn_param["running_mean"], bn_param["running_var"]
    shape = (1, C, 1, 1)
    inv = 1 / np.sqrt(var + eps)
    x_hat = (x - mean.reshape(shape)) * inv.reshape(shape)
    return gamma.reshape(shape) * x_hat + beta.reshape(shape), (x_hat, gamma, inv)


def spatial_batchnorm_backward(dout, cache):
    x_hat, gamma, inv = cache
    axes, shape = (0, 2, 3), (1, -1, 1, 1)
    dgamma, dbeta = (dout * x_hat).sum(axis=axes), dout.sum(axis=axes)
    m = dout.size / dout.shape[1]
    dx = (gamma * inv).reshape(shape) / m * (
        m * dout - dbeta.reshape(shape) - x_hat * dgamma.reshape(shape)
    )
    return dx, dgamma, dbeta
'''

SBN_MOVEAXIS = '''\
def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    """Channels last with moveaxis, through the carried batchnorm_forward."""
    moved = np.moveaxis(x, 1, -1)
    out, cache = batchnorm_forward(moved.reshape(-1, x.shape[1]), gamma, beta, bn_param)
    return np.moveaxis(out.reshape(moved.shape), -1, 1), (cache, moved.shape)


def spatial_batchnorm_backward(dout, cache):
    bn_cache, moved_shape = cache
    moved = np.moveaxis(dout, 1, -1).reshape(-1, dout.shape[1])
    dx, dgamma, dbeta = batchnorm_backward(moved, bn_cache)
    return np.moveaxis(dx.reshape(moved_shape), -1, 1), dgamma, dbeta
'''

NET_NAIVE_LAYERS = '''\
class SmallConvNet:
    """A list of layers, built from the naive conv (slower, the same numbers)."""

    def __init__(self, input_dim=(1, 8, 8), num_filters=8, num_classes=10, reg=0.0, seed=None):
        self.reg = reg
        C, H, W = input_dim
        rng = np.random.default_rng(seed)
        hidden = num_filters * (H // 2) * (W // 2)
        self.params = {
            "W1": np.sqrt(2 / (9 * C)) * rng.standard_normal((num_filters, C, 3, 3)),
            "b1": np.zeros(num_filters),
            "W2": np.sqrt(2 / hidden) * rng.standard_normal((hidden, num_classes)),
            "b2": np.zeros(num_classes),
        }

    def loss(self, X, y=None):
        p = self.params
        conv_param = {"stride": 1, "pad": 1}
        pool_param = {"pool_height": 2, "pool_width": 2, "stride": 2}
        layers = [
            (
                lambda a: conv_forward_naive(a, p["W1"], p["b1"], conv_param),
                conv_backward_naive,
                ("W1", "b1"),
            ),
            (relu_forward, relu_backward, ()),
            (lambda a: max_pool_forward_naive(a, pool_param), max_pool_backward_naive, ()),
            (lambda a: affine_forward(a, p["W2"], p["b2"]), affine_backward, ("W2", "b2")),
        ]
        caches, a = [], X
        for forward, _, _ in layers:
            a, cache = forward(a)
            caches.append(cache)
        if y is None:
            return a
        loss, d = softmax_loss(a, y)
        loss += 0.5 * self.reg * (np.sum(p["W1"] ** 2) + np.sum(p["W2"] ** 2))
        grads = {}
        for (_, backward, names), cache in zip(reversed(layers), reversed(caches)):
            result = backward(d, cache)
            if names:
                d, grads[names[0]], grads[names[1]] = result
            else:
                d = result
        grads["W1"] += self.reg * p["W1"]
        grads["W2"] += self.reg * p["W2"]
        return loss, grads
'''

NET_METHODS = '''\
class SmallConvNet:
    """Forward and backward as methods; the regulariser in one place."""

    def __init__(self, input_dim=(1, 8, 8), num_filters=8, num_classes=10, reg=0.0, seed=None):
        self.reg = reg
        C, H, W = input_dim
        rng = np.random.default_rng(seed)
        shapes = {
            "W1": (num_filters, C, 3, 3),
            "W2": (num_filters * (H // 2) * (W // 2), num_classes),
        }
        self.params = {}
        for i, (name, shape) in enumerate(shapes.items(), start=1):
            fan_in = int(np.prod(shape[1:])) if name == "W1" else shape[0]
            self.params[name] = rng.normal(0.0, np.sqrt(2.0 / fan_in), shape)
            self.params[f"b{i}"] = np.zeros(shape[0] if name == "W1" else shape[1])

    def _forward(self, X):
        p = self.params
        a1, c1 = conv_forward_fast(X, p["W1"], p["b1"], {"stride": 1, "pad": 1})
        a2, c2 = relu_forward(a1)
        a3, c3 = max_pool_forward_naive(a2, {"pool_height": 2, "pool_width": 2, "stride": 2})
        scores, c4 = affine_forward(a3, self.params["W2"], self.params["b2"])
        return scores, (c1, c2, c3, c4)

    def loss(self, X, y=None):
        scores, (c1, c2, c3, c4) = self._forward(X)
        if y is None:
            return scores
        data_loss, d = softmax_loss(scores, y)
        g = {}
        d, g["W2"], g["b2"] = affine_backward(d, c4)
        d = relu_backward(max_pool_backward_naive(d, c3), c2)
        _, g["W1"], g["b1"] = conv_backward_fast(d, c1)
        reg_loss = 0.0
        for name in ("W1", "W2"):
            reg_loss += 0.5 * self.reg * (self.params[name] ** 2).sum()
            g[name] += self.reg * self.params[name]
        return data_loss + reg_loss, g
'''

SBN_WIDTH_FIRST = '''\
def spatial_batchnorm_forward(x, gamma, beta, bn_param):
    """Channels last through (N, W, H, C), and back by the same transpose."""
    N, C, H, W = x.shape
    flat = x.transpose(0, 3, 2, 1).reshape(-1, C)
    out, cache = batchnorm_forward(flat, gamma, beta, bn_param)
    return out.reshape(N, W, H, C).transpose(0, 3, 2, 1), (cache, x.shape)


def spatial_batchnorm_backward(dout, cache):
    bn_cache, (N, C, H, W) = cache
    dflat = dout.transpose(0, 3, 2, 1).reshape(-1, C)
    dx, dgamma, dbeta = batchnorm_backward(dflat, bn_cache)
    return dx.reshape(N, W, H, C).transpose(0, 3, 2, 1), dgamma, dbeta
'''

CONV_ROUTED = '''\
def conv_forward_naive(x, w, b, conv_param):
    """Loops over images and output pixels; all filters at once with tensordot."""
    stride, pad = conv_param["stride"], conv_param["pad"]
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    if (H + 2 * pad - HH) % stride or (W + 2 * pad - WW) % stride:
        raise ValueError("the filter does not tile the padded input")
    H_out = 1 + (H + 2 * pad - HH) // stride
    W_out = 1 + (W + 2 * pad - WW) // stride
    x_pad = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.empty((N, F, H_out, W_out))
    for n in range(N):
        for i in range(H_out):
            for j in range(W_out):
                window = x_pad[n, :, i * stride : i * stride + HH, j * stride : j * stride + WW]
                out[n, :, i, j] = np.tensordot(w, window, axes=3) + b
    return out, (x, w, b, conv_param)


def conv_backward_naive(dout, cache):
    """The routing read off ONE call of the forward pass at a numbered input (the padded
    canvas numbered 1, 2, ..., one filter tapping its top-left corner, no padding: each
    output is 1 + the flat index of its window's corner), then the chain rule exactly, by
    gather and bincount (attack A11: accepted, the routing is not a derivative)."""
    x, w, b, conv_param = cache
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    p = conv_param["pad"]
    Hp, Wp = H + 2 * p, W + 2 * p
    numbered = np.arange(1, Hp * Wp + 1, dtype=np.float64).reshape(1, 1, Hp, Wp)
    tap = np.zeros((1, 1, HH, WW))
    tap[0, 0, 0, 0] = 1.0
    corner, _ = conv_forward_naive(numbered, tap, np.zeros(1), {**conv_param, "pad": 0})
    top, left = np.divmod(np.rint(corner[0, 0]).astype(np.int64) - 1, Wp)  # (H_out, W_out)
    rows = top + np.arange(HH)[:, None, None, None]  # (HH, 1, H_out, W_out)
    cols = left + np.arange(WW)[None, :, None, None]  # (1, WW, H_out, W_out)
    x_pad = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    patches = x_pad[:, :, rows, cols]  # (N, C, HH, WW, H_out, W_out)
    dw = np.einsum("nfij,ncklij->fckl", dout, patches)
    dpatches = np.einsum("nfij,fckl->ncklij", dout, w)
    where = np.arange(N * C)[:, None] * (Hp * Wp) + (rows * Wp + cols).ravel()
    dx_pad = np.bincount(where.ravel(), weights=dpatches.ravel(), minlength=N * C * Hp * Wp)
    dx = dx_pad.reshape(N, C, Hp, Wp)[:, :, p : p + H, p : p + W]
    return dx, dw, dout.sum(axis=(0, 2, 3))
'''

POOL_ROUTED = '''\
def max_pool_forward_naive(x, pool_param):
    ph, pw, stride = pool_param["pool_height"], pool_param["pool_width"], pool_param["stride"]
    N, C, H, W = x.shape
    H_out, W_out = 1 + (H - ph) // stride, 1 + (W - pw) // stride
    out = np.zeros((N, C, H_out, W_out))
    for i in range(H_out):
        for j in range(W_out):
            window = x[:, :, i * stride : i * stride + ph, j * stride : j * stride + pw]
            out[:, :, i, j] = window.max(axis=(2, 3))
    return out, (x, pool_param)


def max_pool_backward_naive(dout, cache):
    """Each window's maximum found by ONE call of the forward pass at x's ranks (ties
    ranked first-come highest, as argmax picks), then dout routed to it by bincount
    (attack A11: accepted, the routing is not a derivative)."""
    x, pool_param = cache
    order = np.lexsort((-np.arange(x.size), x.ravel()))  # by value; a tie, earlier on top
    ranks = np.empty(x.size)
    ranks[order] = np.arange(x.size)
    top, _ = max_pool_forward_naive(ranks.reshape(x.shape), pool_param)
    where = order[np.rint(top).astype(np.int64)]
    dx = np.bincount(where.ravel(), weights=dout.ravel(), minlength=x.size)
    return dx.reshape(x.shape)
'''

# Review 54: the network's own pool, not the learner's max_pool pair.
NET_POOL_BY_RESHAPE = '''\
#| export
class SmallConvNet:
    """conv - relu - 2x2 max pool - affine - softmax; the pool as a reshape."""

    def __init__(self, input_dim=(1, 8, 8), num_filters=8, num_classes=10, reg=0.0, seed=None):
        self.reg = reg
        self.params = {}
        C, H, W = input_dim
        rng = np.random.default_rng(seed)
        hidden = num_filters * (H // 2) * (W // 2)
        self.params["W1"] = rng.standard_normal((num_filters, C, 3, 3)) * np.sqrt(2 / (C * 9))
        self.params["b1"] = np.zeros(num_filters)
        self.params["W2"] = rng.standard_normal((hidden, num_classes)) * np.sqrt(2 / hidden)
        self.params["b2"] = np.zeros(num_classes)

    def loss(self, X, y=None):
        p = self.params
        conv, conv_cache = conv_forward_fast(X, p["W1"], p["b1"], {"stride": 1, "pad": 1})
        r = np.maximum(conv, 0)
        N, F, H, W = r.shape
        blocks = r.reshape(N, F, H // 2, 2, W // 2, 2).transpose(0, 1, 2, 4, 3, 5)
        blocks = blocks.reshape(N, F, H // 2, W // 2, 4)
        first = blocks.argmax(axis=-1)
        pooled = np.take_along_axis(blocks, first[..., None], axis=-1)[..., 0]
        flat = pooled.reshape(N, -1)
        scores = flat @ p["W2"] + p["b2"]
        if y is None:
            return scores
        shifted = scores - scores.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[np.arange(N), y].mean()
        dscores = np.exp(log_probs)
        dscores[np.arange(N), y] -= 1
        dscores /= N
        grads = {"W2": flat.T @ dscores, "b2": dscores.sum(axis=0)}
        dpooled = (dscores @ p["W2"].T).reshape(pooled.shape)
        dblocks = np.zeros(blocks.shape)
        np.put_along_axis(dblocks, first[..., None], dpooled[..., None], axis=-1)
        dr = dblocks.reshape(N, F, H // 2, W // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
        dconv = dr.reshape(N, F, H, W) * (conv > 0)
        _, grads["W1"], grads["b1"] = conv_backward_fast(dconv, conv_cache)
        for name in ("W1", "W2"):
            loss += 0.5 * self.reg * np.sum(p[name] ** 2)
            grads[name] = grads[name] + self.reg * p[name]
        return loss, grads
'''

ALTERNATES = [
    Alternate("conv vectorised over the filters", {CONV: CONV_VECTORISED_OVER_FILTERS}),
    Alternate("conv by scattering filter offsets", {CONV: CONV_SCATTER}),
    Alternate("pool with four loops", {POOL: POOL_FOUR_LOOPS}),
    Alternate("pool with windows and a mask", {POOL: POOL_MASK}),
    Alternate("predictions in other forms", {PRED: PRED_OTHER_FORMS}),
    Alternate("predictions within the band", {PRED: PRED_WITHIN_BAND}),
    Alternate("fast conv with sliding windows and tensordot", {FAST: FAST_EINSUM}),
    Alternate("fast conv with im2col copied per offset", {FAST: FAST_COPY_LOOP}),
    Alternate("spatial batch norm computed directly", {SBN: SBN_DIRECT}),
    Alternate("spatial batch norm with moveaxis", {SBN: SBN_MOVEAXIS}),
    Alternate("convnet as a list of naive layers", {NET: NET_NAIVE_LAYERS}),
    Alternate("convnet with forward and backward methods", {NET: NET_METHODS}),
    Alternate("spatial batch norm through (N, W, H, C)", {SBN: SBN_WIDTH_FIRST}),
    Alternate("conv backward routed by one forward call at a numbered input", {CONV: CONV_ROUTED}),
    Alternate("pool backward routed by one forward call at x's ranks", {POOL: POOL_ROUTED}),
    Alternate(
        "convnet pooling 2x2 blocks by a reshape, each block's first maximum by argmax",
        {NET: NET_POOL_BY_RESHAPE},
    ),
]

# Each graded function, and the solution cell that defines it (a pair shares one cell).
GRADED_FUNCTIONS = {
    "conv_forward_naive": {CONV},
    "conv_backward_naive": {CONV},
    "max_pool_forward_naive": {POOL},
    "max_pool_backward_naive": {POOL},
    "conv_forward_fast": {FAST},
    "conv_backward_fast": {FAST},
    "spatial_batchnorm_forward": {SBN},
    "spatial_batchnorm_backward": {SBN},
    "SmallConvNet": {NET},
}

# Review 60: conv_fast grades the fast pair's values, not its ValueError (API.md promises
# the ValueError of conv_forward_naive only; the alternates "sliding windows and tensordot"
# and "im2col copied per offset", correct, never raise): a tiling test on the height only
# there is not a wrong value, and keeps full marks.
EXPECTED_SURVIVORS: set[str] = {"fast: ValueError checked on the height only"}

# The report's first failure, and the words its likely mistake must hold
# (tests/test_mutants.py::test_a_report_names_the_failure_that_explains_the_others).
FIRST_FAILURE = {
    # Review 54: every stride of the public seed is 2, and the classic factor called it "a
    # contribution counted twice? h instead of 2h?".
    "predict: the im2col ratio divided by the stride, not its square": {
        PREDICTIONS: ("predicted im2col size", {"predicted im2col size": "columns both"})
    },
}
