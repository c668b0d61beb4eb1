"""Self-learners: working copies in work/, `course check`, and the start page's progress."""

import json
import subprocess
import sys

import nbformat
import pytest

from course import workspace
from course.authoring.classroom import ScratchCourse, fill, solution_sources
from course.paths import tool_env


@pytest.fixture
def course(tmp_path):
    return ScratchCourse(tmp_path / "course")


def test_work_copies_are_made_once_and_never_overwritten(course):
    released = sorted(p.name for p in (course.root / "release").iterdir() if p.is_dir())
    assert "01_backprop" in released
    assert workspace.prepare(course.root) == released
    mine = course.root / "work" / "01_backprop" / "backprop.ipynb"
    mine.write_text(mine.read_text().replace("YOUR CODE HERE", "MY CODE"))
    before = mine.read_bytes()
    assert workspace.prepare(course.root) == []
    assert mine.read_bytes() == before
    start = nbformat.read(course.root / "work" / "START.ipynb", as_version=4)
    assert "not checked yet" in start.cells[1].source
    assert "](01_backprop/backprop.ipynb)" in start.cells[1].source


def run_check(course, notebook):
    env = tool_env(COURSE_ROOT=str(course.root))
    return subprocess.run(
        [sys.executable, "-m", "course.cli", "check", str(notebook)],
        env=env,
        capture_output=True,
        text=True,
        cwd=course.root,
    )


@pytest.mark.slow
@pytest.mark.xdist_group("selfcheck")
def test_course_check_grades_like_the_instructor_and_records_progress(course):
    workspace.prepare(course.root)
    mine = course.root / "work" / "01_backprop" / "backprop.ipynb"
    solutions = solution_sources(course.source_notebook("01_backprop", "backprop"))
    nbformat.write(fill(nbformat.read(mine, as_version=4), solutions), mine)
    proc = run_check(course, mine)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "backprop: 19 of 19 points" in proc.stdout
    assert mine.with_suffix(".feedback.html").exists()
    record = json.loads(mine.with_suffix(".check.json").read_text())
    assert sum(e["points"] for e in record["exercises"]) == 19
    start = nbformat.read(course.root / "work" / "START.ipynb", as_version=4)
    assert "**19 / 19**" in start.cells[1].source


@pytest.mark.slow
@pytest.mark.xdist_group("selfcheck")
def test_course_check_of_the_blank_release_fails_and_says_why(course):
    blank = course.root / "mine" / "01_backprop" / "backprop.ipynb"
    blank.parent.mkdir(parents=True)
    blank.write_bytes((course.root / "release" / "01_backprop" / "backprop.ipynb").read_bytes())
    before = blank.read_bytes()
    proc = run_check(course, blank)
    assert proc.returncode == 1
    assert "value_ops" in proc.stdout and "FAIL" in proc.stdout
    assert "raised NotImplementedError" in proc.stdout
    assert "backprop: 0 of 19 points" in proc.stdout
    assert blank.read_bytes() == before  # the learner's notebook is only read


def test_course_check_refuses_a_notebook_of_no_assignment(course, tmp_path):
    stray = tmp_path / "elsewhere" / "notes.ipynb"
    stray.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), stray)
    proc = run_check(course, stray)
    assert proc.returncode == 2
    assert "is not a notebook of this course" in proc.stderr
