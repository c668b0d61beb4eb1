"""Which notebook cell is which, said once (nbgrader's own predicates underneath).

A *test cell* is a graded code cell that is not a solution: where a hidden check runs and
nbgrader records points. A *solution cell* is where the learner writes code.
"""

from __future__ import annotations

from nbgrader.utils import is_grade, is_solution


def nbgrader_meta(cell) -> dict:
    """The cell's nbgrader metadata ({} for a cell nbgrader does not know)."""
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id_of_test_cell(cell) -> str | None:
    """The grade id of a test cell, or None for any other cell."""
    if cell.get("cell_type") == "code" and is_grade(cell) and not is_solution(cell):
        return nbgrader_meta(cell).get("grade_id")
    return None


def solution_cell_id(cell) -> str | None:
    """The grade id of a solution cell, or None for any other cell."""
    return nbgrader_meta(cell).get("grade_id") if is_solution(cell) else None
