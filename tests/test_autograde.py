"""The real nbgrader pipeline: full marks for the solutions, zero for the blank release,
and every kind of bad submission graded or flagged, without touching anyone else's."""

import pytest

from tests.harness import Batch, read_nb, released_points, tree_digest

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
FULL = released_points(ASSIGNMENT, NOTEBOOK)  # full marks
CELL_TIMEOUT = 8  # seconds, for the infinite loop; the solution's cells need about 2


def without_grade_cells(nb):
    nb.cells = [c for c in nb.cells if not c.metadata.get("nbgrader", {}).get("grade")]
    return nb


def with_edited_grade_cells(nb):
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = "print('all good')\n3"
    return nb


def retagged(nb):
    """Test cells turned into plain cells (metadata deleted), bodies replaced."""
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            cell.metadata = {}
            cell.source = "pass"
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    batch = Batch(tmp_path_factory.mktemp("class"), ASSIGNMENT, NOTEBOOK)
    solution = batch.answered()
    submissions = {
        "solution": solution,
        "solution_twin": batch.answered(),
        "blank": batch.release,
        "deleted_tests": without_grade_cells(batch.answered()),
        "edited_tests": with_edited_grade_cells(batch.answered()),
        "retagged_tests": retagged(batch.answered()),
        # Not trimmed: the timeout is named by the heading above the cell, as learners see it.
        "infinite_loop": batch.answered({"value_core": "while True:\n    pass"}),
        "crashed_kernel": batch.answered({"value_more_ops": "import os\nos._exit(1)"}, trim=True),
        "missing": {"notes.txt": "I forgot the notebook"},
        "renamed": {"Backprop (1).ipynb": solution},
        "invalid_json": {f"{NOTEBOOK}.ipynb": '{"cells": [ this is not json'},
        "not_a_notebook": {f"{NOTEBOOK}.ipynb": '{"hello": "world"}'},
    }
    for student, content in submissions.items():
        batch.submit(student, content)
    before = tree_digest(batch.course.root / "submitted")
    proc = batch.course_grade(cell_timeout=CELL_TIMEOUT)
    after = tree_digest(batch.course.root / "submitted")
    return batch, proc, before, after


def table(proc) -> dict[str, str]:
    return {line.split()[0]: line for line in proc.stdout.splitlines()[1:-1]}


def total(batch, student):
    return sum(batch.scores()[student].values())


def test_solution_gets_full_marks(graded):
    batch, proc, *_ = graded
    full = batch.max_scores()
    for student in ("solution", "solution_twin"):
        assert batch.scores()[student] == full
        assert f"{FULL:g} / {FULL:g}" in table(proc)[student]


def test_blank_release_gets_zero_in_every_cell(graded):
    batch, *_ = graded
    assert batch.scores()["blank"] == dict.fromkeys(batch.max_scores(), 0.0)


@pytest.mark.parametrize("student", ["deleted_tests", "edited_tests", "retagged_tests"])
def test_tampered_test_cells_are_restored_and_graded(graded, student):
    batch, proc, *_ = graded
    assert batch.scores()[student] == batch.max_scores()
    autograded = read_nb(
        batch.course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    )
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in autograded.cells]
    assert all(grade_id in ids for grade_id in batch.max_scores())


def test_infinite_loop_is_cut_off_and_the_rest_graded(graded):
    batch, proc, *_ = graded
    line = table(proc)["infinite_loop"]
    # Named by its grade id and the heading above it (issue 33's third walk), not a number.
    assert 'timed out in value_core under "Exercise 1.1: a scalar node, Value (operators)"' in line
    scores = batch.scores()["infinite_loop"]
    # Value never got defined; the numerical-gradient functions still earn their points.
    assert scores["value_ops"] == 0 and scores["eval_numerical_gradient"] == 3


def test_crashed_kernel_is_cut_off_and_reported(graded):
    batch, proc, *_ = graded
    line = table(proc)["crashed_kernel"]
    assert "cut off in value_more_ops" in line and "kernel died" in line
    scores = batch.scores()["crashed_kernel"]
    # Cells before the crash count; the checks after it did not run and score zero.
    assert scores["value_ops"] == 0 and sum(scores.values()) == 0


@pytest.mark.parametrize(
    ("student", "words"),
    [
        ("missing", "backprop.ipynb is missing"),
        ("renamed", "found 'Backprop (1).ipynb': rename it"),
        ("invalid_json", "not valid JSON"),
        ("not_a_notebook", "not a valid notebook"),
    ],
)
def test_unreadable_submissions_are_flagged(graded, student, words):
    """Graded as 0, with the reason (round 8: no earlier grade stands for them)."""
    batch, proc, *_ = graded
    line = table(proc)[student]
    assert f"0 / {FULL:g}" in line and "graded as 0" in line and words in line
    assert total(batch, student) == 0


def test_exit_status_says_something_needs_attention(graded):
    _, proc, *_ = graded
    assert proc.returncode == 1
    assert proc.stderr == "" or "Traceback" not in proc.stderr


def test_no_submission_is_modified(graded):
    _, _, before, after = graded
    assert before == after


def test_feedback_shows_results_but_no_hidden_checks(graded):
    batch, *_ = graded
    batch.course.nbgrader("generate_feedback", ASSIGNMENT, "--force")
    for student in ("solution", "blank"):
        html = (
            batch.course.root / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK}.html"
        ).read_text()
        assert "value_ops:" in html  # what the check printed
        for secret in ("BEGIN HIDDEN TESTS", "course.grading", 'check("value_ops"'):
            assert secret not in html


def test_export_has_a_row_per_student(graded, tmp_path):
    batch, *_ = graded
    out = tmp_path / "grades.csv"
    batch.course.nbgrader("export", "--to", str(out))
    text = out.read_text()
    for student in ("solution", "blank", "infinite_loop"):
        assert f",{student}," in text
