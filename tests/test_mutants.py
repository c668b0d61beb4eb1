"""The mutation harness: every known bug loses points, every correct variant keeps them all.

Variants are injected into copies of the release notebook (trimmed to the imports,
solution and grade cells, since the hidden checks depend on nothing else) and graded by
the real `nbgrader autograde`, a batch per shard; shards run in parallel under xdist.
Each assignment has a module of variants, `tests/variants_<name>.py`.
"""

import pytest

from course.build import notebook_from_text
from course.classroom import nbgrader_meta
from course.paths import course_root
from tests import variants_backprop, variants_linear
from tests.harness import Batch

MODULES = [variants_backprop, variants_linear]
SHARDS = 2  # per assignment
_graded: dict[tuple[str, int], tuple[Batch, dict]] = {}


def variants(module):
    return [("mutant", v) for v in module.MUTANTS] + [("alternate", v) for v in module.ALTERNATES]


def student_id(index: int) -> str:
    return f"variant{index:02d}"


def graded_shard(module, shard: int, tmp_path_factory) -> tuple[Batch, dict]:
    key = (module.ASSIGNMENT, shard)
    if key not in _graded:
        root = tmp_path_factory.mktemp(f"mutants-{module.ASSIGNMENT}-{shard}")
        batch = Batch(root, module.ASSIGNMENT, module.NOTEBOOK)
        for index, (kind, variant) in enumerate(variants(module)):
            if index % SHARDS != shard:
                continue
            if kind == "mutant":
                nb = batch.mutant(variant.cell, variant.edits, variant.code)
            else:
                nb = batch.answered(variant.answers, trim=True)
            batch.submit(student_id(index), nb)
        batch.grade()
        _graded[key] = (batch, batch.scores())
    return _graded[key]


def params():
    for module in MODULES:
        for index, (kind, variant) in enumerate(variants(module)):
            group = f"mutants-{module.ASSIGNMENT}-{index % SHARDS}"
            yield pytest.param(
                module,
                index,
                kind,
                variant,
                id=f"{module.ASSIGNMENT} {kind}: {variant.name}",
                marks=pytest.mark.xdist_group(group),
            )


@pytest.mark.slow
@pytest.mark.parametrize(("module", "index", "kind", "variant"), list(params()))
def test_variant(module, index, kind, variant, tmp_path_factory):
    batch, scores = graded_shard(module, index % SHARDS, tmp_path_factory)
    full = batch.max_scores()
    got = scores[student_id(index)]
    if kind == "alternate":
        assert got == full, f"a correct implementation lost points: {got}"
        return
    lost = {cell for cell in full if got[cell] < full[cell]}
    if variant.name in module.EXPECTED_SURVIVORS:
        assert not lost, "a mutant documented as a survivor now loses points: update the list"
        return
    assert variant.loses, "a mutant must name the grade cells it should lose points in"
    missing = variant.loses - lost
    assert not missing, f"survived in {sorted(missing)}; lost only in {sorted(lost)}"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_every_grade_cell_and_graded_function_has_mutants_and_alternates(module):
    """Three mutants that each grade cell must catch; three mutants and two alternates
    for each graded function (the solution cells that define it)."""
    text = course_root() / "source" / module.ASSIGNMENT / f"{module.NOTEBOOK}.pct.py"
    cells = [nbgrader_meta(c) for c in notebook_from_text(text.read_text()).cells]
    grade_cells = {c["grade_id"] for c in cells if c.get("grade") and not c.get("solution")}
    for cell in grade_cells:
        killers = [v for v in module.MUTANTS if cell in v.loses]
        assert len(killers) >= 3, f"{cell}: only {len(killers)} mutants"
    for function, its_cells in module.GRADED_FUNCTIONS.items():
        mutants = [v for v in module.MUTANTS if v.cell in its_cells]
        alternates = [a for a in module.ALTERNATES if set(a.answers) & its_cells]
        assert len(mutants) >= 3, f"{function}: only {len(mutants)} mutants"
        assert len(alternates) >= 2, f"{function}: only {len(alternates)} alternates"
    solution_cells = {c["grade_id"] for c in cells if c.get("solution")}
    assert set().union(*module.GRADED_FUNCTIONS.values()) <= solution_cells
