"""Hidden checks, one module per assignment, named after its notebook, and their registry.

A module that declares `ASSIGNMENT` (a `course.grader.model.Assignment`) is an assignment's
checks module; importing it registers its checks. Modules whose names start with `_` hold
shared probe helpers.

A grade cell runs in the student's kernel, which must load only what it calls: `get_check`
imports only the module that holds a check (INDEX), so a kernel loads its own assignment's
probes (and those of an earlier assignment's checks it carries), never the others'. The
grader's process loads every module (`checks_by_name`), found by its file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from course.grader.model import CHECKS, Assignment, Check

# {checks module: the checks it registers}. tests/test_layout.py keeps it in step with the
# modules and names what is missing; a check not listed (a module put on __path__, as
# tests/test_new_assignment.py does) is looked for in every module.
INDEX = {
    "backprop": (
        "value_ops",
        "value_functions",
        "value_backward",
        "value_accumulation",
        "eval_numerical_gradient",
        "eval_numerical_gradient_array",
        "mlp_training",
        "by_hand_gradients",
        "softmax_by_hand",
    ),
    "linear": (
        "svm_loss_naive",
        "svm_loss_vectorized",
        "softmax_loss_naive",
        "softmax_loss_vectorized",
        "softmax_numerics",
        "linear_predictions",
    ),
    "multilayer": (
        "affine_forward",
        "affine_backward",
        "relu",
        "softmax_loss",
        "svm_loss",
        "two_layer_net",
        "sgd",
        "two_layer_training",
        "multilayer_predictions",
    ),
    "optimisers": (
        "weight_init",
        "fully_connected_net",
        "sgd_momentum",
        "rmsprop",
        "adam",
        "adamw",
        "landscape_predictions",
    ),
    "normalisation": (
        "batchnorm_forward",
        "batchnorm_backward",
        "batchnorm_backward_alt",
        "layernorm_forward",
        "layernorm_backward",
        "dropout_forward",
        "dropout_backward",
        "finished_net",
        "normalised_training",
        "predictions",
        "scale_predictions",
    ),
    "convolution": (
        "conv_forward_naive",
        "conv_backward_naive",
        "max_pool_naive",
        "conv_predictions",
        "conv_fast",
        "conv_fast_speed",
        "spatial_batchnorm",
        "convnet_training",
    ),
    "recurrent": (
        "rnn_step",
        "rnn_sequence",
        "lstm_step",
        "lstm_sequence",
        "temporal_layers",
        "temporal_softmax_loss",
        "clip_grad_norm",
        "char_training",
        "recurrent_predictions",
    ),
    "attention": (
        "softmax",
        "attention_forward",
        "attention_backward",
        "causal_mask",
        "multihead_forward",
        "multihead_backward",
        "positional_encoding",
        "block",
        "transformer_training",
        "attention_predictions",
        "shape_predictions",
    ),
    "leaks": (
        "initial_loss",
        "gradient_check_model",
        "update_ratios",
        "activation_stats",
        "overfit_small_batch",
        "dataset_loss",
        "improvement_real",
        "diagnose",
        "fix",
    ),
}
_MODULE_OF = {name: module for module, names in INDEX.items() for name in names}


def get_check(name: str) -> Check:
    """The check `name`, importing only the module that holds it."""
    if name not in CHECKS and name in _MODULE_OF:
        importlib.import_module(f"{__name__}.{_MODULE_OF[name]}")
    if name not in CHECKS:
        assignment_modules()
    if name not in CHECKS:
        raise KeyError(f"no hidden check named {name!r}; known: {sorted(CHECKS)}")
    return CHECKS[name]


def checks_by_name() -> dict[str, Check]:
    """Every assignment's checks (the grader's process: every module loaded)."""
    assignment_modules()
    return CHECKS


@cache
def assignment_modules() -> tuple:
    """Every assignment's checks module, in the order of the assignments' ids."""
    modules = [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    ]
    declared = [m for m in modules if isinstance(getattr(m, "ASSIGNMENT", None), Assignment)]
    return tuple(sorted(declared, key=lambda m: m.ASSIGNMENT.id))


def assignments() -> dict[str, Assignment]:
    """Every assignment's declaration, by id ("04_optimisers"), in order."""
    return {m.ASSIGNMENT.id: m.ASSIGNMENT for m in assignment_modules()}


def slow_grade_cells() -> frozenset[str]:
    """Grade cells that train a model, over every assignment: they get a longer timeout."""
    return frozenset().union(*(a.slow_cells for a in assignments().values()))
