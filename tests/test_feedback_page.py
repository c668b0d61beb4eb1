"""The feedback page (issue 22, item 7): hidden checks by the section they grade, reports
that wrap, no bare `Out[n]: 0.0` after each report."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from course.grader.nbgrader_ext import FEEDBACK_CSS, ExerciseFeedback


def graded_cell(grade_id, score, points, report):
    cell = new_code_cell('check("x", globals())')
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "grade_id": grade_id,
        "points": points,
        "score": score,
    }
    cell.outputs = [
        new_output("stream", name="stdout", text=report),
        new_output("execute_result", data={"text/plain": repr(score)}, execution_count=3),
    ]
    return cell


def test_the_feedback_names_exercises_and_drops_the_bare_score():
    nb = new_notebook(
        cells=[
            new_markdown_cell("## 1 · Graphs\n### Hidden checks of the `Value` engine"),
            graded_cell("value_ops", 2.0, 3, "value_ops: 2 of 3\n  FAIL a * b\n"),
            new_markdown_cell("### Exercise 2.1: <a numerical gradient>"),
            graded_cell("eval_numerical_gradient", 3.0, 3, "all pass\n"),
        ]
    )
    resources = {"nbgrader": {"late_penalty": 1.5}, "inlining": {"css": ["nbconvert's"]}}
    nb, resources = ExerciseFeedback().preprocess(nb, resources)
    table = nb.cells[0].source
    assert '<a href="#value_ops">Hidden checks of the Value engine</a>' in table
    assert "2 / 3" in table and "3 / 3" in table
    assert '#eval_numerical_gradient">Exercise 2.1: &lt;a numerical gradient&gt;</a>' in table
    assert "Late submission" in table and "-1.5" in table
    for cell in nb.cells[1:]:
        kinds = [o["output_type"] for o in cell.get("outputs", [])]
        assert "execute_result" not in kinds
    assert nb.cells[2].outputs[0]["text"].startswith("value_ops: 2 of 3")  # the report stays
    assert resources["inlining"]["css"] == ["nbconvert's", FEEDBACK_CSS]
    assert "pre-wrap" in FEEDBACK_CSS
    nbformat.validate(nb)
