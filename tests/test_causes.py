"""Hints that blame the right code (issue 22, item 8): when a check fails because a function
it runs through (an earlier exercise's, Check.builds_on) is wrong, its report names that
function first, and drops its own hints, which would blame this exercise's code."""

import pytest

from course.grader.model import functions_of, get_check
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
