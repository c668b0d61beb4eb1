"""The mutation harness: every known bug loses points, every correct variant keeps them all.

Variants are injected into copies of the release notebook (trimmed to the imports,
solution and grade cells, since the hidden checks depend on nothing else) and graded by
the real `nbgrader autograde`, in two shards that run in parallel under xdist.
"""

import pytest

from tests.harness import Batch
from tests.variants_backprop import (
    ALTERNATES,
    ASSIGNMENT,
    EXPECTED_SURVIVORS,
    MUTANTS,
    NOTEBOOK,
)

VARIANTS = [("mutant", v) for v in MUTANTS] + [("alternate", v) for v in ALTERNATES]
SHARDS = 2
_graded: dict[int, tuple[Batch, dict]] = {}


def student_id(index: int) -> str:
    return f"variant{index:02d}"


def shard_of(index: int) -> int:
    return index % SHARDS


def graded_shard(shard: int, tmp_path_factory) -> tuple[Batch, dict]:
    if shard not in _graded:
        batch = Batch(tmp_path_factory.mktemp(f"mutants{shard}"), ASSIGNMENT, NOTEBOOK)
        for index, (kind, variant) in enumerate(VARIANTS):
            if shard_of(index) != shard:
                continue
            if kind == "mutant":
                nb = batch.mutant(variant.cell, variant.edits, variant.code)
            else:
                nb = batch.answered(variant.answers, trim=True)
            batch.submit(student_id(index), nb)
        batch.grade()
        _graded[shard] = (batch, batch.scores())
    return _graded[shard]


def params():
    for index, (kind, variant) in enumerate(VARIANTS):
        mark = pytest.mark.xdist_group(f"mutants{shard_of(index)}")
        yield pytest.param(index, kind, variant, id=f"{kind}: {variant.name}", marks=mark)


@pytest.mark.slow
@pytest.mark.parametrize(("index", "kind", "variant"), list(params()))
def test_variant(index, kind, variant, tmp_path_factory):
    batch, scores = graded_shard(shard_of(index), tmp_path_factory)
    full = batch.max_scores()
    got = scores[student_id(index)]
    if kind == "alternate":
        assert got == full, f"a correct implementation lost points: {got}"
        return
    lost = {cell for cell in full if got[cell] < full[cell]}
    if variant.name in EXPECTED_SURVIVORS:
        assert not lost, "a mutant documented as a survivor now loses points: update the list"
        return
    assert variant.loses, "a mutant must name the grade cells it should lose points in"
    missing = variant.loses - lost
    assert not missing, f"survived in {sorted(missing)}; lost only in {sorted(lost)}"


def test_every_graded_cell_has_three_mutants_and_every_solution_two_alternates():
    cells = {
        "value_ops",
        "value_functions",
        "value_backward",
        "value_accumulation",
        "eval_numerical_gradient",
        "eval_numerical_gradient_array",
    }
    for cell in cells:
        killers = [v for v in MUTANTS if cell in v.loses]
        assert len(killers) >= 3, f"{cell}: only {len(killers)} mutants"
    solution_cells = {
        "value_core",
        "value_more_ops",
        "value_functions_solution",
        "value_backward_solution",
        "eval_numerical_gradient_solution",
        "eval_numerical_gradient_array_solution",
    }
    graded_functions = {
        "Value": {
            "value_core",
            "value_more_ops",
            "value_functions_solution",
            "value_backward_solution",
        },
        "eval_numerical_gradient": {"eval_numerical_gradient_solution"},
        "eval_numerical_gradient_array": {"eval_numerical_gradient_array_solution"},
    }
    for function, its_cells in graded_functions.items():
        alternates = [a for a in ALTERNATES if set(a.answers) & its_cells]
        assert len(alternates) >= 2, f"{function}: only {len(alternates)} alternates"
    assert set().union(*(a.answers for a in ALTERNATES)) <= solution_cells
