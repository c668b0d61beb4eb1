"""The mutation harness: every known bug loses points, every correct variant keeps them all.

Each assignment has a module of variants, `tests/variants_<name>.py`. Every variant is
judged in this process (`course.authoring.classroom.judge_in_process`: its solution cells run here,
the hidden checks probe and judge them as the grader does), which costs milliseconds
rather than a notebook run. A sample of each assignment's variants is also graded by the
real `nbgrader autograde`, and both ways must give the same scores.
"""

import functools
import importlib
import json

import nbformat
import pytest

from course.authoring.classroom import judge_in_process, solution_sources
from course.authoring.variants import answers_of, changed_cells, source_notebook, traced
from course.checks import assignment_modules
from course.checks.common import WRONG_VALUE_CAP
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta, solution_cell_id
from course.grader.inputs import Inputs
from course.grader.parallel import make_job
from course.paths import course_root
from tests.harness import Batch

# Every assignment's variants, found by file name: tests/variants_<checks module>.py.
MODULES = [
    importlib.import_module(f"tests.variants_{m.__name__.rsplit('.', 1)[1]}")
    for m in assignment_modules()
]


def max_scores(module) -> dict[str, float]:
    cells = source_notebook(module.ASSIGNMENT, module.NOTEBOOK).cells
    return {
        grade_id_of_test_cell(c): float(nbgrader_meta(c)["points"])
        for c in cells
        if grade_id_of_test_cell(c)
    }


def in_process(module, variant, inputs=None) -> dict[str, float]:
    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    return judge_in_process(nb, answers_of(module, variant), inputs)


# ------------------------------------------------- judging only what a variant can change
# A hidden check whose judging of the reference never ran a line of the cells a variant
# changes sees exactly the reference's calls on the same inputs, so it scores what the
# reference scores (full marks, tests/test_build.py and test_notebooks.py): the harness
# judges only the checks that ran a changed cell, about half of them. Sound only where the
# changed cells do nothing at their top level but define functions and classes and import,
# and bind the same names as the reference's cells (no global state a check could read
# without calling them); any other variant is judged on every check. The agreement test
# below compares this with a full judging and with real nbgrader.


@functools.cache
def cells_run_by_check(module) -> dict[str, frozenset[str]]:
    """{grade id: the solution cells whose code ran while that check judged the reference
    solutions on the public inputs}."""
    from course.checks import get_check
    from course.grader.sources import solution_namespace

    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    namespace = solution_namespace(nb, "deps")
    return {
        name: traced(get_check(name), nb, namespace, None, "deps")[1]
        for name in map(grade_id_of_test_cell, nb.cells)
        if name is not None
    }


def in_process_affected(module, variant, inputs=None) -> dict[str, float]:
    """As in_process, judging only the checks that run a cell the variant changes; the
    others score what the reference scores, full marks."""
    changed = changed_cells(module, variant)
    if changed is None:
        return in_process(module, variant, inputs)
    only = {name for name, cells in cells_run_by_check(module).items() if cells & changed}
    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    judged = judge_in_process(nb, answers_of(module, variant), inputs, only=only)
    return {name: judged.get(name, points) for name, points in max_scores(module).items()}


def reports_in_process(module, variant) -> dict[str, tuple[float, str]]:
    """{grade id: (points, report)}, judged as `in_process` does, with the report's words."""
    from course.authoring.build import solution_namespace
    from course.grader.judge import verdict
    from course.grading import payload

    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    namespace = solution_namespace(nb, "variant", answers_of(module, variant))
    found = {}
    for name in max_scores(module):
        # As a grade cell emits it: with the earlier checks it builds on (the causes).
        found[name] = verdict(name, json.loads(json.dumps(payload(name, namespace))))
    return found


def conventions():
    for module in MODULES:
        for variant in getattr(module, "CONVENTIONS", []):
            yield pytest.param(
                module, variant, id=f"{module.ASSIGNMENT} convention: {variant.name}"
            )


@pytest.mark.parametrize(("module", "variant"), list(conventions()))
def test_another_convention_loses_points_and_is_named(module, variant):
    full, judged = max_scores(module), reports_in_process(module, variant)
    for cell in variant.loses:
        points, words = judged[cell]
        assert points < full[cell], f"{cell}: code in another convention kept full marks"
        assert variant.names.lower() in words.lower(), (
            f"{cell}: the report does not name it:\n{words}"
        )


def first_failures():
    for module in MODULES:
        for name, cells in getattr(module, "FIRST_FAILURE", {}).items():
            yield pytest.param(module, name, cells, id=f"{module.ASSIGNMENT} report: {name}")


@pytest.mark.parametrize(("module", "name", "cells"), list(first_failures()))
def test_a_report_names_the_failure_that_explains_the_others(module, name, cells):
    """FIRST_FAILURE: {mutant: {grade cell: (how its first failure starts, {how failures
    start: words each of them must hold})}}: a wrong forward pass is named before the
    gradients computed from it, and they blame it, not the backward pass."""
    (variant,) = [v for v in module.MUTANTS if v.name == name]
    judged = reports_in_process(module, variant)
    for cell, (first, words) in cells.items():
        report = judged[cell][1]
        fails, hint = [], ""
        for line in report.splitlines():
            if not line.startswith("  FAIL "):
                continue
            line = line[len("  FAIL ") :]
            if line.endswith(" Likely mistake: as above."):  # the line before's hint
                line = line.removesuffix("as above.") + hint
            hint = line.partition(" Likely mistake: ")[2]
            fails.append(line)
        # A line of sub-checks "not credited while" another fails names no mistake of its own.
        named = [line for line in fails if ": not credited while " not in line]
        assert named and named[0].startswith(first), f"{cell}:\n{report}"
        for start, blamed in words.items():
            off = [line for line in fails if line.startswith(start) and blamed not in line]
            assert not off, f"{cell}: a failure blames another mistake:\n{off[0]}"


def not_capped():
    for module in MODULES:
        for name, cells in getattr(module, "NOT_CAPPED", {}).items():
            yield pytest.param(module, name, cells, id=f"{module.ASSIGNMENT} not capped: {name}")


@pytest.mark.parametrize(("module", "name", "cells"), list(not_capped()))
def test_right_values_in_another_shape_are_not_capped(module, name, cells):
    """NOT_CAPPED: {mutant: grade cells}: its values are right in a shape that broadcasts to
    the API's (Rule.shape_hint): it loses those sub-checks, and keeps more than the cap."""
    (variant,) = [v for v in module.MUTANTS if v.name == name]
    full, got = max_scores(module), in_process(module, variant)
    for cell in cells:
        assert WRONG_VALUE_CAP * full[cell] < got[cell] < full[cell], f"{cell}: {got[cell]}"


def params():
    for module in MODULES:
        for kind, found in (("mutant", module.MUTANTS), ("alternate", module.ALTERNATES)):
            for variant in found:
                yield pytest.param(
                    module, kind, variant, id=f"{module.ASSIGNMENT} {kind}: {variant.name}"
                )


@pytest.mark.parametrize(("module", "kind", "variant"), list(params()))
def test_variant(module, kind, variant):
    for code in answers_of(module, variant).values():
        compile(code, variant.name, "exec")  # a mutant that is a syntax error proves nothing
    full, got = max_scores(module), in_process_affected(module, variant)
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
    kept = {c: got[c] for c in variant.capped if got[c] > WRONG_VALUE_CAP * full[c] + 1e-9}
    assert not kept, f"a wrong value kept more than {WRONG_VALUE_CAP:.0%} of {kept}"


def sample(module) -> list:
    """The variants graded by nbgrader too: two mutants and an alternate."""
    return [module.MUTANTS[0], module.MUTANTS[-1], module.ALTERNATES[0]]


def submission_inputs(root, assignment: str, student: str) -> Inputs:
    """The seeds and references `course grade` uses for that student's submission."""
    return Inputs.from_json(make_job(root, assignment, student, True, False)["inputs"])


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_in_process_judging_agrees_with_nbgrader(module, tmp_path):
    batch = Batch(tmp_path, module.ASSIGNMENT, module.NOTEBOOK)
    chosen = sample(module)
    for index, variant in enumerate(chosen):
        batch.submit(f"variant{index}", batch.answered(answers_of(module, variant), trim=True))
    batch.submit("blank", batch.release)
    batch.grade()
    graded = batch.scores()
    for index, variant in enumerate(chosen):
        # The secret inputs of that submission in that run (course.grader.inputs).
        inputs = submission_inputs(batch.course.root, module.ASSIGNMENT, f"variant{index}")
        assert graded[f"variant{index}"] == in_process(module, variant, inputs), variant.name
        # The shortcut test_variant takes gives the same scores as judging every check.
        assert graded[f"variant{index}"] == in_process_affected(module, variant, inputs)
    assert set(graded["blank"].values()) == {0.0}, "the blank release earns points"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_the_blank_release_earns_nothing_in_any_cell(module):
    release = nbformat.read(
        course_root() / "release" / module.ASSIGNMENT / f"{module.NOTEBOOK}.ipynb", as_version=4
    )
    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    scores = judge_in_process(nb, solution_sources(release))
    assert scores == dict.fromkeys(max_scores(module), 0.0)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_every_grade_cell_and_graded_function_has_mutants_and_alternates(module):
    """Three mutants that each grade cell must catch; three mutants and two alternates
    for each graded function (the solution cells that define it)."""
    nb_cells = source_notebook(module.ASSIGNMENT, module.NOTEBOOK).cells
    for cell in max_scores(module):
        killers = [v for v in module.MUTANTS if cell in v.loses]
        assert len(killers) >= 3, f"{cell}: only {len(killers)} mutants"
    for function, its_cells in module.GRADED_FUNCTIONS.items():
        mutants = [v for v in module.MUTANTS if v.cell in its_cells]
        alternates = [a for a in module.ALTERNATES if set(a.answers) & its_cells]
        assert len(mutants) >= 3, f"{function}: only {len(mutants)} mutants"
        assert len(alternates) >= 2, f"{function}: only {len(alternates)} alternates"
    solution_cells = {solution_cell_id(c) for c in nb_cells if solution_cell_id(c)}
    assert set().union(*module.GRADED_FUNCTIONS.values()) <= solution_cells


def test_06_im2col_ratio_over_the_stride_loses_on_every_seed():
    """Review 54: `HH * WW / stride` (the stride counted along one axis) kept full marks on
    the secret seeds whose three settings all drew stride 1 (46 of 400); now one setting at
    least has stride 2."""
    from tests.test_attacks_round7 import points_over_seeds

    module = importlib.import_module("tests.variants_convolution")
    (variant,) = [
        v for v in module.MUTANTS if v.name.startswith("predict: the im2col ratio divided")
    ]
    points = points_over_seeds(
        module.ASSIGNMENT, module.NOTEBOOK, "conv_predictions", answers_of(module, variant),
        range(60),
    )  # fmt: skip
    assert max(points) < 2, f"full marks on {sum(p == 2 for p in points)} of 60 seeds"
