"""Generated files are provably in sync with their sources, and reveal nothing."""

import copy
import functools
import json
import re

import nbformat
import numpy as np
import pytest

from course.authoring import build
from course.checks import checks_by_name
from course.grader import judge, model
from course.grader.cells import grade_id_of_test_cell, solution_cell_id
from course.grader.scratch import ScratchCourse
from course.paths import course_root

ROOT = course_root()
TEXTS = build.text_sources(ROOT)
RELEASED = sorted((ROOT / "release").glob("*/*"))


def test_there_is_content():
    assert TEXTS, "no source/<assignment>/<name>.pct.py found"
    assert RELEASED, "release/ is empty: run `make release`"


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.name)
def test_source_notebook_is_built_from_its_text(text):
    built = nbformat.writes(build.notebook_from_text(text.read_text())) + "\n"
    assert build.notebook_path(text).read_text() == built, (
        f"{build.notebook_path(text).name} differs from {text.name}: run `make release`"
    )


def test_a_comment_that_begins_with_a_shell_word_stays_a_comment():
    # jupytext's default uncomments `# copy ...` as an IPython command: a grade cell of 09
    # then stopped with SyntaxError before its check ran, which only real grading showed.
    nb = build.notebook_from_text("# %%\n# copy of the rows, then\n# cd into it\nx = 1\n")
    assert nb.cells[0].source == "# copy of the rows, then\n# cd into it\nx = 1"


@pytest.mark.parametrize("path", [build.notebook_path(t) for t in TEXTS], ids=lambda p: p.name)
def test_every_code_cell_of_a_source_notebook_compiles(path):
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            compile(cell.source, f"{path.name}:{cell.id}", "exec")


@pytest.mark.slow
@pytest.mark.xdist_group("build")
def test_release_is_what_nbgrader_generates(tmp_path):
    scratch = ScratchCourse(tmp_path)
    build.build_release(scratch.root)
    rebuilt = sorted((scratch.root / "release").glob("*/*"))
    assert [p.relative_to(scratch.root) for p in rebuilt] == [p.relative_to(ROOT) for p in RELEASED]
    for ours, theirs in zip(RELEASED, rebuilt, strict=True):
        assert ours.read_bytes() == theirs.read_bytes(), f"{ours} is stale: run `make release`"


@functools.cache
def fresh_references() -> dict:
    return build.compute_references(ROOT)


@pytest.mark.xdist_group("build")
def test_references_are_what_the_solutions_compute():
    fresh = copy.deepcopy(fresh_references())
    checks = checks_by_name()
    for key, refs in fresh.items():
        stored = json.loads((ROOT / "references" / f"{key}.json").read_text())
        assert sorted(stored) == sorted(refs), f"{key}: checks differ: run `make release`"
        for name, outputs in refs.items():
            assert sorted(stored[name]) == sorted(outputs), f"{name}: outputs differ"
            for out_key, value in outputs.items():
                rule = model.rule_for(checks[name], out_key)
                a, b = model.decode(stored[name][out_key]), model.decode(value)
                assert judge.same_for_the_judge(a, b, rule), (
                    f"{name} {out_key}: the solutions no longer compute the stored reference "
                    f"(rule {rule.kind}, rtol {rule.rtol:g}): run `make release`"
                )


def test_the_reference_comparison_still_fails_on_a_real_change():
    close = model.Rule("value", rtol=1e-9)
    below = model.Rule("error", kind="below", rtol=1e-6, measure=lambda got, want: got)
    assert judge.same_for_the_judge(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-14]), close)
    assert not judge.same_for_the_judge(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-6]), close)
    assert judge.same_for_the_judge(1.288628e-10, 1.597164e-10, below)  # the noise of issue 12
    assert not judge.same_for_the_judge(1e-10, 1e-3, below)
    assert not judge.same_for_the_judge(model.Broken("raised"), np.array([1.0]), close)


@pytest.mark.xdist_group("build")
def test_a_rebuild_rewrites_only_what_the_judge_can_tell_apart(tmp_path):
    key = "02_linear/linear"
    stored = json.loads((ROOT / "references" / f"{key}.json").read_text())
    noise = "selfcheck:at ordinary scores, without regularisation"
    observed = stored["softmax_loss_naive"][noise]  # forward values at nudged inputs
    observed["array"] = (np.array(observed["array"]) * (1 + 1e-13)).tolist()  # rounding: kept
    real = "loss:at ordinary scores, without regularisation"
    stored["softmax_loss_naive"][real] *= 1.001  # a real change: rewritten
    (tmp_path / "references" / "02_linear").mkdir(parents=True)
    (tmp_path / "references" / f"{key}.json").write_text(json.dumps(stored))
    build.write_references(tmp_path, {key: copy.deepcopy(fresh_references()[key])})
    rebuilt = json.loads((tmp_path / "references" / f"{key}.json").read_text())
    assert rebuilt["softmax_loss_naive"][noise] == stored["softmax_loss_naive"][noise]
    assert (
        rebuilt["softmax_loss_naive"][real] == fresh_references()[key]["softmax_loss_naive"][real]
    )


def all_notebooks():
    return [build.notebook_path(t) for t in TEXTS] + [p for p in RELEASED if p.suffix == ".ipynb"]


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_notebooks_are_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        # nbgrader itself adds deletable/editable to the locked cells it releases.
        extra = set(cell.metadata) - {"nbgrader", "deletable", "editable"}
        assert not extra, f"{cell.id}: extra metadata {extra}"
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{cell.id} has outputs"
    # Nor any widget's saved state (the learner's lab saves it in their own copies only).
    assert "widgets" not in nb.metadata


def solution_lines(text: str) -> set[str]:
    """Distinctive lines written between solution markers, and nowhere else."""
    inside_lines, outside_lines, inside = set(), set(), False
    for line in text.splitlines():
        if "### BEGIN SOLUTION" in line:
            inside = True
        elif "### END SOLUTION" in line:
            inside = False
        elif len(line.strip()) > 12 and not line.strip().startswith("#"):
            (inside_lines if inside else outside_lines).add(line.strip())
    return inside_lines - outside_lines


@pytest.mark.parametrize("text", TEXTS, ids=lambda p: p.name)
def test_release_reveals_no_solution_and_no_hidden_check(text):
    assignment = text.parent.name
    released = sorted((ROOT / "release" / assignment).iterdir())
    assert all(p.suffix == ".ipynb" for p in released), f"non-notebook files released: {released}"
    nb = nbformat.read(ROOT / "release" / assignment / build.notebook_path(text).name, as_version=4)
    body = "\n".join(c.source for c in nb.cells)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "check(", "course.grading"):
        assert marker not in body, f"release contains {marker!r}"
    leaked = {line for line in solution_lines(text.read_text()) if line in body}
    assert not leaked, f"solution lines in the release: {sorted(leaked)[:5]}"
    stubs = [c for c in nb.cells if solution_cell_id(c)]
    # Each stub raises NotImplementedError naming its exercise (tests/test_notebooks.py).
    assert stubs and all("# YOUR CODE HERE\n" in c.source for c in stubs)
    assert all("raise NotImplementedError(" in c.source for c in stubs)


def test_grade_ids_name_what_they_grade():
    for text in TEXTS:
        nb = build.notebook_from_text(text.read_text())
        for cell in nb.cells:
            grade_id = grade_id_of_test_cell(cell)
            if grade_id is not None:
                assert re.fullmatch(r"[a-z][a-z0-9_]+", grade_id)
                assert f'check("{grade_id}", globals())' in cell.source
