"""The reaches into nbgrader's internals (course/grader/nbgrader_internals.py) still hold:
each test fails when an nbgrader upgrade changes what that module relies on."""

import inspect

import nbgrader
import nbgrader.api
import pytest
from nbgrader.api import Gradebook
from nbgrader.preprocessors import AssignLatePenalties, NbGraderPreprocessor, SaveAutoGrades

from course.grader import nbgrader_internals


def test_the_version_they_were_reviewed_for():
    assert nbgrader.__version__ == "0.9.6", (
        "nbgrader changed: review course/grader/nbgrader_internals.py against it, run the "
        "whole suite (tests/test_parallel.py compares with nbgrader's own autograde), then "
        "update this version"
    )


def test_one_transaction_lands_all_or_nothing(tmp_path, monkeypatch):
    # A new gradebook asks `alembic` for its schema version: answer in this process.
    monkeypatch.setattr(nbgrader.api, "get_alembic_version", nbgrader_internals.alembic_head)
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        with pytest.raises(RuntimeError):
            with nbgrader_internals.one_transaction(gb):
                gb.add_student("ada")
                gb.add_student("blaise")
                raise RuntimeError("the disk is full")
        assert gb.students == []
        with nbgrader_internals.one_transaction(gb):
            gb.add_student("ada")
            gb.add_student("blaise")
        assert sorted(s.id for s in gb.students) == ["ada", "blaise"]


def test_save_auto_grades_is_the_generic_cell_loop_over_preprocess_cell():
    # save_cell_grades runs the parent class's preprocess (a loop over preprocess_cell)
    # with the attributes SaveAutoGrades.preprocess would set from its resources.
    parent = SaveAutoGrades.__mro__[1]
    assert parent is NbGraderPreprocessor
    assert "preprocess_cell" in SaveAutoGrades.__dict__
    own = inspect.getsource(SaveAutoGrades.preprocess)
    for attribute in ("notebook_id", "assignment_id", "student_id", "gradebook"):
        assert f"self.{attribute}" in own, attribute
    loop = inspect.getsource(inspect.getmro(NbGraderPreprocessor)[1].preprocess)
    assert "preprocess_cell" in loop


def test_the_late_penalty_bounds_and_the_alembic_helpers_exist():
    params = list(inspect.signature(AssignLatePenalties._check_late_penalty).parameters)
    assert params == ["self", "notebook", "penalty"]
    from nbgrader import api, dbutil

    assert callable(dbutil._temp_alembic_ini) and callable(api.get_alembic_version)
    assert nbgrader_internals.alembic_head()  # the schema's head revision, read in-process
