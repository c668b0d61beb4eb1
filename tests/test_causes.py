"""Hints that blame the right code (issue 22, item 8): when a check fails because a function
it runs through (an earlier exercise's, Check.builds_on) is wrong, its report names that
function first, and drops its own hints, which would blame this exercise's code."""

import pytest

from course.checks import get_check
from course.grader.model import functions_of
from tests import variants_backprop, variants_multilayer
from tests.test_mutants import max_scores, reports_in_process
from tests.variant_kinds import Alternate, Mutant


def mutant(module, name) -> Mutant:
    [found] = [v for v in module.MUTANTS if v.name == name]
    return found


def causes(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("CAUSE")]


@pytest.mark.parametrize(
    "bug", ["mul gradient uses its own data", "mul gradient not chained with out.grad"]
)
def test_a_wrong_mul_is_named_by_value_accumulation_not_backward(bug):
    reports = reports_in_process(variants_backprop, mutant(variants_backprop, bug))
    points, text = reports["value_accumulation"]
    assert points < max_scores(variants_backprop)["value_accumulation"]
    [cause] = causes(text)
    assert cause.startswith("CAUSE your Value.__mul__ fails its own hidden check, value_ops ("), (
        text
    )
    assert "Likely mistake" not in text, "its own hint still blames backward()"
    # mlp_training runs through every operator: __mul__ first, what may use it after.
    [cause] = causes(reports["mlp_training"][1])
    assert cause.startswith("CAUSE your Value.__mul__ (then Value.__")
    assert "value_backward" not in cause  # explained by value_ops: not named again


def test_a_wrong_relu_backward_is_named_by_the_network_and_its_training():
    for name in ("relu backward: mask inverted", "relu backward: mask without dout"):
        reports = reports_in_process(variants_multilayer, mutant(variants_multilayer, name))
        full = max_scores(variants_multilayer)
        for check in ("two_layer_net", "two_layer_training"):
            points, text = reports[check]
            assert points < full[check], (name, check)
            [cause] = causes(text)  # relu_backward only: not TwoLayerNet, not sgd
            assert cause.startswith(
                "CAUSE your relu_backward fails its own hidden check, relu ("
            ), text
            assert "TwoLayerNet" not in text and "sgd" not in text, text


def test_correct_code_and_unrelated_failures_name_no_cause():
    # Correct: no cause anywhere.
    correct = Alternate("the solutions", {})
    for module in (variants_backprop, variants_multilayer):
        assert not any(causes(text) for _, text in reports_in_process(module, correct).values())
    # A wrong __rtruediv__ fails value_ops, but value_accumulation never divides: its own
    # bug (add overwrites) keeps its own hint, and no cause is named.
    from tests.test_mutants import answers_of

    add = mutant(variants_backprop, "add overwrites instead of accumulating")
    rtruediv = mutant(variants_backprop, "rtruediv swaps its operands")
    both = Alternate(
        "two bugs",
        {**answers_of(variants_backprop, add), **answers_of(variants_backprop, rtruediv)},
    )
    reports = reports_in_process(variants_backprop, both)
    assert reports["value_ops"][0] < max_scores(variants_backprop)["value_ops"]
    points, text = reports["value_accumulation"]
    assert points < max_scores(variants_backprop)["value_accumulation"]
    assert not causes(text) and "Likely mistake: a node used more than once" in text


def test_functions_of_names_only_what_the_failing_sub_checks_run():
    ops = get_check("value_accumulation").builds_on["value_ops"]
    assert functions_of(ops, ["grad:a * b", "data:a + k"]) == ["Value.__add__", "Value.__mul__"]
    assert functions_of(ops, ["grad:k / a"]) == []  # value_accumulation never divides
    relu = get_check("two_layer_net").builds_on["relu"]
    assert functions_of(relu, ["dx:x (7, 4)"]) == ["relu_backward"]
    assert functions_of("sgd", ["w:the default config"]) == ["sgd"]
    assert functions_of("sgd", []) == []


# Issue 37, item 4: in 05, a backward pass depends on its forward, the network on every
# layer it runs; the earliest failing function is named, and no hint blames the rest.
@pytest.mark.parametrize(
    ("bug", "function", "dependents"),
    [
        (
            "bn forward: the unbiased variance (N - 1) in the normalisation",
            "batchnorm_forward",
            ["batchnorm_backward", "batchnorm_backward_alt", "finished_net", "normalised_training"],
        ),
        (
            "ln forward: normalised over the batch",
            "layernorm_forward",
            ["layernorm_backward", "finished_net", "normalised_training"],
        ),
        ("bn alt: N - 1 in the closed form", "batchnorm_backward_alt", ["finished_net"]),
    ],
)
def test_05_names_the_earliest_failing_layer(bug, function, dependents):
    from tests import variants_normalisation

    reports = reports_in_process(variants_normalisation, mutant(variants_normalisation, bug))
    full = max_scores(variants_normalisation)
    for check in dependents:
        points, text = reports[check]
        assert points < full[check], (bug, check)
        [cause] = causes(text)
        assert cause.startswith(f"CAUSE your {function} fails its own hidden check"), text
        # Not the dropout mask, nor where batch norm sits (the hints of the network's own
        # sub-checks) when a layer is the cause.
        assert "Likely mistake" not in text and "must come after" not in text, text


# Issue 37, item 2: one wrong output or gradient caps its cell at half its points, and the
# report says so.
@pytest.mark.parametrize(
    ("module", "bug", "cell"),
    [
        ("recurrent", "rnn sequence: h stored one step late (h[:, t] is the state before step t)",
         "rnn_sequence"),
        ("attention", "block: the second residual adds x, not h", "block"),
        ("convolution", "conv: dx cropped with [pad:-pad] (empty when pad == 0)",
         "conv_backward_naive"),
    ],
)  # fmt: skip
def test_a_wrong_value_earns_at_most_half_its_cell(module, bug, cell):
    import importlib

    variants = importlib.import_module(f"tests.variants_{module}")
    points, text = reports_in_process(variants, mutant(variants, bug))[cell]
    assert points <= max_scores(variants)[cell] / 2, text
    assert "caps the cell at 50% of its points" in text.splitlines()[-1], text


# Issue 37, item 5: a hint fires only on its own evidence.
@pytest.mark.parametrize(
    ("module", "bug", "cell", "says", "never"),
    [
        ("attention", "attention backward: the softmax Jacobian summed over the queries",
         "attention_backward", "softmax's Jacobian", "swap the last two axes"),
        ("attention", "attention backward: only the softmax Jacobian's diagonal, p (1 - p)",
         "attention_backward", "softmax's Jacobian", "swap the last two axes"),
        ("convolution", "sbn: flattened without moving the channels last",
         "spatial_batchnorm", "layout slip", "sum over N, H and W"),
        ("convolution", "sbn: dout flattened without moving the channels last",
         "spatial_batchnorm", "layout slip", "sum over N, H and W"),
    ],
)  # fmt: skip
def test_a_hint_fires_only_on_its_own_evidence(module, bug, cell, says, never):
    import importlib

    variants = importlib.import_module(f"tests.variants_{module}")
    points, text = reports_in_process(variants, mutant(variants, bug))[cell]
    assert points < max_scores(variants)[cell]
    assert says in text and never not in text, text


# Issue 37, item 7: "does your code answer differently ... while being checked?" only with
# evidence (the forward right at x, its values at x +- h not), never for an honest bug.
def test_the_anti_cheat_question_needs_evidence():
    from tests import variants_convolution, variants_normalisation

    for variants, bug, cell in (
        (variants_convolution, "net: the regulariser without its 1/2", "convnet_training"),
        (
            variants_normalisation,
            "bn forward: the unbiased variance (N - 1) in the normalisation",
            "batchnorm_backward",
        ),
    ):
        points, text = reports_in_process(variants, mutant(variants, bug))[cell]
        assert points < max_scores(variants)[cell]
        assert "answer differently" not in text, text


def test_the_anti_cheat_question_says_what_differed(monkeypatch):
    from course.authoring.classroom import solution_sources
    from tests import variants_attention
    from tests.test_attacks_round7 import ZERO_BACKWARD_THAT_HIDES_FROM_THE_SELFCHECK
    from tests.test_mutants import source_notebook

    solutions = solution_sources(source_notebook("08_attention", "attention"))
    code = solutions["multihead_solution"] + ZERO_BACKWARD_THAT_HIDES_FROM_THE_SELFCHECK
    hiding = Alternate("a backward of zeros that hides", {"multihead_solution": code})
    import functools

    from course.grader import judge

    monkeypatch.setattr(judge, "report", functools.partial(judge.report, limit=100))
    points, text = reports_in_process(variants_attention, hiding)["multihead_backward"]
    assert points <= 0.2
    assert "is right, yet your values at the nudged inputs" in text, text
    assert "answer differently" in text and "relative error" in text, text


# Issue 54: in 08, attention runs the softmax, its backward pass its forward, multi-head
# attention runs attention per head: the earliest failing function is named, and no hint
# blames the mask, the head split or dWo (a softmax summed over axis 0 scored 4.12 of 24
# with four cells of 0 and no cause).
@pytest.mark.parametrize(
    ("bug", "function", "dependents"),
    [
        (
            "softmax: summed over axis 0 whatever `axis`",
            "softmax",
            ["attention_forward", "attention_backward", "multihead_forward",
             "multihead_backward"],
        ),
        (
            "attention: the mask applied after the softmax (rows not renormalised)",
            "attention_forward",
            ["attention_backward", "multihead_forward", "multihead_backward"],
        ),
    ],
)  # fmt: skip
def test_08_names_the_earliest_failing_function(bug, function, dependents):
    from tests import variants_attention

    reports = reports_in_process(variants_attention, mutant(variants_attention, bug))
    full = max_scores(variants_attention)
    for check in dependents:
        points, text = reports[check]
        assert points < full[check], (bug, check)
        [cause] = causes(text)  # the earliest only: not attention_forward behind softmax
        assert cause.startswith(f"CAUSE your {function} fails its own hidden check"), text
        assert "Likely mistake" not in text, text
        for blamed in ("the mask", "head split", "dWo = "):
            assert blamed not in text, (check, blamed, text)
    # The block and the training run through all of it: the same cause, where they fail.
    for check in ("block", "transformer_training"):
        points, text = reports[check]
        if points < full[check]:
            assert [c for c in causes(text) if c.startswith(f"CAUSE your {function} ")], text


# Issue 54's walk (tests/test_dependencies.py) found 03's affine_backward running
# affine_forward (its cache) undeclared: a forward that does not flatten x is now named.
def test_03_affine_backward_names_its_forward():
    bug = mutant(variants_multilayer, "affine: x not flattened")
    points, text = reports_in_process(variants_multilayer, bug)["affine_backward"]
    assert points < max_scores(variants_multilayer)["affine_backward"]
    [cause] = causes(text)
    assert cause.startswith("CAUSE your affine_forward fails its own hidden check"), text
    assert "Likely mistake" not in text, text


# Issue 54, item 1: a correct backward behind a wrong forward scores nothing (its gradients
# are credited only when the forward is right), and its CAUSE line says the points it costs
# come back once the forward is fixed, not only "fix it first".
@pytest.mark.parametrize(
    ("bug", "forward", "backward"),
    [
        (
            "bn forward: the unbiased variance (N - 1) in the normalisation",
            "batchnorm_forward",
            "batchnorm_backward",
        ),
        ("ln forward: normalised over the batch", "layernorm_forward", "layernorm_backward"),
    ],
)
def test_a_correct_backward_behind_a_wrong_forward_is_told_its_points_come_back(
    bug, forward, backward
):
    import json

    from course.authoring.build import solution_namespace
    from course.authoring.variants import answers_of, source_notebook
    from course.grader.judge import verdict
    from course.grading import payload
    from tests import variants_normalisation

    variants = variants_normalisation
    nb = source_notebook(variants.ASSIGNMENT, variants.NOTEBOOK)
    namespace = solution_namespace(nb, "variant", answers_of(variants, mutant(variants, bug)))
    points, text = verdict(backward, json.loads(json.dumps(payload(backward, namespace))))
    assert points == 0, text  # the backward is the solution's: only its forward is wrong
    [cause] = causes(text)
    assert cause.startswith(f"CAUSE your {forward} fails its own hidden check"), text
    assert cause.endswith(
        "this check runs through it: fix it first; the points it costs here come back once "
        f"{forward} is fixed."
    ), cause
    # And they do: the same backward behind the right forward keeps them all.
    fixed = solution_namespace(nb, "solutions")
    assert (
        verdict(backward, json.loads(json.dumps(payload(backward, fixed))))[0]
        == max_scores(variants)[backward]
    )


# Walk 53, finding 9: with Value.backward unwritten, value_ops (whose probe runs backward)
# fails, and every check built on it blamed "your Value.__add__", which was right.
def test_an_unwritten_exercise_is_named_as_unwritten_not_as_the_function_that_ran_it():
    import nbformat

    from course.authoring.classroom import solution_sources
    from course.paths import course_root

    release = nbformat.read(course_root() / "release/01_backprop/backprop.ipynb", as_version=4)
    stub = solution_sources(release)["value_backward_solution"]
    assert "NotImplementedError" in stub
    reports = reports_in_process(
        variants_backprop, Alternate("backward unwritten", {"value_backward_solution": stub})
    )
    named = [c for _, text in reports.values() for c in causes(text)]
    assert named, reports
    for cause in named:
        assert "not written yet" in cause and "Value.backward" in cause, cause
        assert "__add__" not in cause, cause


# Walk 53, finding 9 (second half): __rsub__ computing self - other, Exercises 1.3 and 1.4
# unwritten. value_ops said only "each _backward multiplies the local derivative by out.grad"
# of k - a: backward() raised before its forward value was looked at, and the one failure
# left was the chain rule's, which follows from the swapped forward.
def test_a_swapped_rsub_behind_an_unwritten_backward_is_said_to_be_its_forward():
    import nbformat

    from course.authoring.classroom import solution_sources
    from course.authoring.variants import answers_of
    from course.paths import course_root

    release = nbformat.read(course_root() / "release/01_backprop/backprop.ipynb", as_version=4)
    stubs = solution_sources(release)
    swapped = answers_of(variants_backprop, mutant(variants_backprop, "rsub swaps its operands"))
    unwritten = ("value_functions_solution", "value_backward_solution")
    answers = {**swapped, **{cell: stubs[cell] for cell in unwritten}}
    points, text = reports_in_process(variants_backprop, Alternate("walk 53", answers))["value_ops"]
    failures = [line.strip() for line in text.splitlines() if line.strip().startswith("FAIL")]
    # The forward value of k - a is judged, and said to be wrong, with a forward hint.
    [forward] = [line for line in failures if line.startswith("FAIL forward value of")]
    assert forward.startswith("FAIL forward value of k - a is off"), text
    assert "swaps its operands" in forward, text
    # Nothing blames a _backward or the chain rule: the backward is unwritten, not wrong.
    assert "multiplies the local derivative" not in text, text
    assert "local derivative of this operator" not in text, text
    [chained] = [line for line in failures if "output's grad is not 1, of k - a" in line]
    assert "forward value of this expression fails too" in chained, text
    assert any("Exercise 1.4: write Value.backward" in line for line in failures), text
    # The other operators' values are right, and graded as such: not zero.
    assert 0 < points < max_scores(variants_backprop)["value_ops"], text


def test_each_capped_rule_is_named_whole_in_the_credit_line():
    """Walk 60: 09's line read "a failing relative error per parameter, on caps the cell":
    the rule's name, cut before its input, kept a dangling ", on"."""
    from course.checks import INDEX
    from course.grader.judge import credit_rule

    for names in INDEX.values():
        for name in names:
            line = credit_rule(get_check(name))
            for dangling in (", caps", " on caps", " of caps", " for caps", " with caps"):
                assert dangling not in line, (name, line)
