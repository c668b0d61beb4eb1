"""Self-learners: working copies in work/, `course check`, and the start page's progress."""

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course import workspace
from course.authoring.classroom import fill, mutate, solution_sources
from course.grader.scratch import ScratchCourse
from course.paths import course_root, tool_env
from tests.harness import released_points

FULL = released_points("01_backprop", "backprop")  # full marks of 01


@pytest.fixture
def course(tmp_path):
    return ScratchCourse(tmp_path / "course")


def test_work_copies_are_made_once_and_never_overwritten(course, capsys):
    released = sorted(p.name for p in (course.root / "release").iterdir() if p.is_dir())
    assert "01_backprop" in released
    assert workspace.prepare(course.root) == released
    # Day one: the new copies, and nothing about carried code, of which none is written yet
    # (walk 53, finding 2: "your earlier code carried into 5 assignment folder(s)" came first).
    [line] = capsys.readouterr().out.splitlines()
    assert line == f"work/: new copies of {', '.join(released)}"
    mine = course.root / "work" / "01_backprop" / "backprop.ipynb"
    mine.write_text(mine.read_text().replace("YOUR CODE HERE", "MY CODE"))
    before = mine.read_bytes()
    assert workspace.prepare(course.root) == []
    assert mine.read_bytes() == before
    start = (course.root / "work" / "START.md").read_text()
    assert "not checked yet" in start
    assert "](01_backprop/backprop.ipynb)" in start


def test_make_lab_says_it_carried_code_once_the_learner_has_written_some(course, capsys):
    workspace.prepare(course.root)
    capsys.readouterr()
    # 03's affine_forward written (the solution's): 04 and later carry it.
    mine = course.root / "work" / "03_multilayer" / "multilayer.ipynb"
    solved = solution_sources(
        nbformat.read(course.root / "source/03_multilayer/multilayer.ipynb", as_version=4)
    )
    nb = nbformat.read(mine, as_version=4)
    [cell] = [
        c
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "affine_forward_solution"
    ]
    cell.source = solved["affine_forward_solution"]
    nbformat.write(nb, mine)
    assert workspace.prepare(course.root) == []
    # The carried modules in one line, not one per module (issue 33's persona walk).
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("work/: your earlier code carried into ") and "course export" in line


def test_the_start_page_says_what_its_progress_counts(tmp_path):
    """Issue 33's third walk: "(6 of 9 exercises)" did not say what it counted."""
    notebook = tmp_path / "backprop.ipynb"
    exercises = [
        {"grade_id": f"check_{i}", "points": 2.0 if i < 6 else 0.5, "max_points": 2.0}
        for i in range(9)
    ]
    record = {"checked_at": 0.0, "exercises": exercises}
    notebook.with_suffix(".check.json").write_text(json.dumps(record))
    words = workspace.progress(notebook)
    assert words.startswith("**13.5 / 18 points**; 6 of 9 hidden checks passed in full ")
    assert "your last `course check`" in words


@pytest.mark.parametrize("columns", [60, None])
def test_long_report_lines_wrap_under_their_text(monkeypatch, capsys, columns):
    """Issue 33's third walk: a long FAIL line ran on past the terminal's edge and wrapped
    to its first column. Wrapped to the terminal's width (88 columns for a terminal of no
    size: a pipe, COLUMNS unset), further lines under the text after "FAIL "."""
    import os

    from course import selfcheck

    if columns:
        monkeypatch.setenv("COLUMNS", str(columns))
    else:
        monkeypatch.delenv("COLUMNS", raising=False)
        monkeypatch.setattr(os, "get_terminal_size", lambda *a: os.terminal_size((0, 0)))
    report = "\n".join(
        [
            "value_ops: 0 of 3 points (0 of 4 sub-checks passed)",
            "  FAIL add: its value is wrong. Likely mistake: " + "a long hint " * 20,
            "  Credit: the passed share of the sub-checks' weights (here 0%).",
        ]
    )
    note = "backprop.ipynb: timed out in value_core under " + '"a long heading" ' * 10
    section = "Exercise 2.2: " + "the title of a long section " * 4
    exercise = selfcheck.Exercise("value_ops", 0.0, 3.0, report, section)
    selfcheck.print_table("backprop", [exercise], [note])
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) < (columns or 88)
    assert lines[1].startswith("value_ops     0 / 3   FAIL    Exercise 2.2:")
    assert lines[2].startswith(" " * 30) and lines[2][30] != " "  # under the section
    fail = next(i for i, line in enumerate(lines) if "FAIL add" in line)
    assert lines[fail].startswith(" " * 13 + "FAIL add:")  # under the exercise's row
    for more in lines[fail + 1 : fail + 3]:  # under the text, not under "FAIL"
        assert more.startswith(" " * 18) and more[18] != " "
    noted = next(i for i, line in enumerate(lines) if line.startswith("note: "))
    assert lines[noted + 1].startswith(" " * 6) and lines[noted + 1][6] != " "


def run_check(course, notebook, terminal=False, columns=200):
    """`course check notebook`; terminal: its stderr is a terminal (a pseudo-terminal of
    `columns`, 0 for one of no size, read here into proc.stderr), where progress is shown;
    its stdout is a pipe, as in `course check ... | cat`."""
    env = tool_env(COURSE_ROOT=str(course.root))
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "course.cli", "check", str(notebook)]
    if not terminal:
        return subprocess.run(command, env=env, capture_output=True, text=True, cwd=course.root)
    import fcntl
    import os
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # tqdm cuts its line to the terminal's width.
    rows = 50 if columns else 0
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=follower, text=True, cwd=course.root
    ) as proc:
        os.close(follower)
        seen = b""
        while chunk := _read(leader):
            seen += chunk
        out = proc.stdout.read()
    os.close(leader)
    return subprocess.CompletedProcess(command, proc.returncode, out, seen.decode(errors="replace"))


def _read(fd) -> bytes:
    import os

    try:
        return os.read(fd, 65536)
    except OSError:  # the other end closed: the command ended
        return b""


@pytest.mark.slow
def test_course_check_grades_like_the_instructor_and_records_progress(course):
    workspace.prepare(course.root)
    mine = course.root / "work" / "01_backprop" / "backprop.ipynb"
    solutions = solution_sources(course.source_notebook("01_backprop", "backprop"))
    nbformat.write(fill(nbformat.read(mine, as_version=4), solutions), mine)
    proc = run_check(course, mine)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "grading" not in proc.stderr  # not a terminal: no progress bar
    assert f"backprop: {FULL:g} of {FULL:g} points" in proc.stdout
    page = mine.with_suffix(".feedback.html").read_text()
    # Each hidden check by the section it grades, not "Test cell" (issue 22, item 7).
    assert "<td>Hidden checks of the engine (11 points)</td>" in page
    assert '<a href="#value_ops"><code>value_<wbr/>ops</code></a>' in page
    assert "pre-wrap" in page
    # Maths offline (issue 22, item 7): the installed MathJax, no CDN.
    assert 'data-course-mathjax="file://' in page and "cdnjs" not in page
    record = json.loads(mine.with_suffix(".check.json").read_text())
    assert sum(e["points"] for e in record["exercises"]) == FULL
    start = (course.root / "work" / "START.md").read_text()
    assert f"**{FULL:g} / {FULL:g} points**" in start


@pytest.mark.slow
def test_course_check_of_the_blank_release_fails_and_says_why(course):
    blank = course.root / "mine" / "01_backprop" / "backprop.ipynb"
    blank.parent.mkdir(parents=True)
    blank.write_bytes((course.root / "release" / "01_backprop" / "backprop.ipynb").read_bytes())
    before = blank.read_bytes()
    proc = run_check(course, blank, terminal=True)
    assert proc.returncode == 1, proc.stderr
    # On a terminal, which notebook and which hidden check, and the time so far (issue 33,
    # item 8); without one (the test above), nothing but the table.
    assert "grading 01_backprop: 0/1 graded [00:" in proc.stderr
    assert "me: backprop.ipynb: " in proc.stderr and " (check " in proc.stderr
    assert "value_ops" in proc.stdout and "FAIL" in proc.stdout
    words = " ".join(proc.stdout.split())  # as read, across the lines it wraps to
    assert "Hidden checks of the engine (11 points)" in words  # what value_ops grades
    assert "raised NotImplementedError in `Value.__add__`" in words  # who raised it
    assert f"backprop: 0 of {FULL:g} points" in proc.stdout
    assert blank.read_bytes() == before  # the learner's notebook is only read


@pytest.mark.slow
def test_course_check_shows_progress_on_a_terminal_of_no_size(course):
    """Issue 33's third walk: on a terminal that reports no size (width 0, COLUMNS unset),
    `course check ... | cat` showed an empty line where its progress goes (tqdm cut its line
    to 0 columns): it gets 88, and the report wraps there too."""
    blank = course.root / "mine" / "01_backprop" / "backprop.ipynb"
    blank.parent.mkdir(parents=True)
    blank.write_bytes((course.root / "release" / "01_backprop" / "backprop.ipynb").read_bytes())
    proc = run_check(course, blank, terminal=True, columns=0)
    assert proc.returncode == 1, proc.stderr
    assert "checking backprop.ipynb: " in proc.stderr
    assert "grading 01_backprop: 0/1 graded [00:" in proc.stderr
    report = [line for line in proc.stdout.splitlines() if line.startswith(" ")]
    assert report and max(map(len, report)) < 88  # each failure's lines, wrapped


def test_a_terminal_of_no_size_is_88_by_24(monkeypatch):
    """tqdm reads a terminal of no size as -1 by -1, and shows nothing on it."""
    import os
    import pty

    from course import terminal

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    leader, follower = pty.openpty()  # 0 rows, 0 columns: nobody sized it
    with open(follower, "w") as stream:
        assert tuple(os.get_terminal_size(stream.fileno())) == (0, 0)
        assert tuple(terminal.size(stream)) == (88, 24)
        assert terminal.bar_size(stream) == {"ncols": 87, "nrows": 24}
        monkeypatch.setenv("COLUMNS", "120")
        assert tuple(terminal.size(stream)) == (120, 24)
    os.close(leader)


def test_course_check_refuses_a_notebook_of_no_assignment(course, tmp_path):
    stray = tmp_path / "elsewhere" / "notes.ipynb"
    stray.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(), stray)
    proc = run_check(course, stray)
    assert proc.returncode == 2
    assert "is not a notebook of this course" in proc.stderr


def test_course_check_names_a_notebook_that_is_not_json(course):
    """Walk 60: a notebook that is not JSON (a merge's conflict markers) ended in
    nbformat's traceback."""
    broken = course.root / "work" / "01_backprop" / "backprop.ipynb"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text('{"cells": [\n<<<<<<< HEAD\n')
    proc = run_check(course, broken)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "backprop.ipynb cannot be read as a notebook" in proc.stderr
    assert "release/01_backprop/backprop.ipynb" in proc.stderr


def validate(course, notebook, *tool):
    env = tool_env(COURSE_ROOT=str(course.root))
    command = list(tool) or [sys.executable, "-m", "course.cli", "validate"]
    return subprocess.run(
        [*command, str(notebook)], env=env, capture_output=True, text=True, cwd=course.root
    )


def learner_copy(course, assignment, name, label, answers):
    """work/<assignment>/<label>.ipynb: the release with `answers` in its solution cells."""
    release = nbformat.read(course.root / "release" / assignment / f"{name}.ipynb", as_version=4)
    path = course.root / "work" / assignment / f"{label}.ipynb"
    nbformat.write(fill(release, answers), path)
    return path


@pytest.mark.slow
def test_validate_fails_cell_by_cell_and_passes_the_solutions(course):
    """Validate (issue 22, item 1): the released hidden checks hold only comments, so it
    must fail where a visible "check it" fails or a cell errors, and pass the solutions."""
    workspace.prepare(course.root)
    solutions = solution_sources(course.source_notebook("01_backprop", "backprop"))
    blank = course.root / "work" / "01_backprop" / "backprop.ipynb"
    solved = learner_copy(course, "01_backprop", "backprop", "solved", solutions)
    wrong_mul = mutate(
        solutions["value_core"],
        "self.grad += other.data * out.grad",
        "self.grad += self.data * out.grad",
    )
    buggy = learner_copy(
        course, "01_backprop", "backprop", "buggy", {**solutions, "value_core": wrong_mul}
    )
    broken = solutions["value_functions_solution"].replace("def tanh(self):", "def tanh(self)")
    syntax = learner_copy(
        course,
        "01_backprop",
        "backprop",
        "syntax",
        {**solutions, "value_functions_solution": broken},
    )

    proc = validate(course, solved)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "every cell ran and every check it passed" in proc.stdout

    proc = validate(course, blank)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Exercise 1.1: write Value.__add__" in proc.stdout
    assert "Exercise 2.2: write eval_numerical_gradient_array" in proc.stdout
    checks = sum("with check_it(" in c.source for c in nbformat.read(blank, as_version=4).cells)
    assert checks >= 6
    assert proc.stdout.count("FAILED  with check_it(") == checks  # every one, each on its own
    # Walk 53: the training runs an exercise not written yet; it says so in one line, and
    # Run All goes on: the plot of its losses says which exercise it waits for.
    assert (
        "`losses` was never made, since its cell stopped: not written yet: Exercise 1.1"
        in proc.stdout
    )

    proc = validate(course, buggy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [line for line in proc.stdout.splitlines() if line.startswith("FAILED")]
    assert 'FAILED  with check_it("Exercise 1.4"):' in failed
    assert "df/da" in proc.stdout and "Exercises 1.1 and 1.2" not in proc.stdout

    proc = validate(course, syntax)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "SyntaxError: expected ':'" in proc.stdout
    # Issue 53, item 3: the training failed on a real error (no tanh: its cell did not
    # compile), and the plot of its losses failed only because the training did; it says
    # so, and names the cell to fix by its heading.
    assert "name 'losses' is not defined: an earlier cell that sets it failed" in proc.stdout
    assert 'follows from the cell that failed under "4 · A tiny MLP on your engine"' in proc.stdout

    # nbgrader's own command, with the course's nbgrader_config.py, agrees (its exit status
    # is 0 either way: nbgrader's choice, hence `course validate`).
    nbgrader = [str(Path(sys.executable).with_name("nbgrader")), "validate"]
    assert (
        "Success! Your notebook passes all the tests." in validate(course, solved, *nbgrader).stdout
    )
    out = validate(course, buggy, *nbgrader).stdout
    assert "VALIDATION FAILED ON" in out and "Exercise 1.4, check it FAILED" in out


@pytest.mark.slow
def test_validate_prints_only_the_courses_words(tmp_path):
    """Issue 33's third walk: under every Validate, ipykernel warned "Kernel is running over
    TCP without encryption". `nbgrader validate` in the course directory reads the same
    settings as the lab's Validate button."""
    notebook = tmp_path / "mine" / "notes.ipynb"
    notebook.parent.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('hello')")]
    nbformat.write(nb, notebook)
    root = course_root()
    env = tool_env(COURSE_ROOT=str(root))
    nbgrader = str(Path(sys.executable).with_name("nbgrader"))
    for command in ([sys.executable, "-m", "course.cli"], [nbgrader]):
        proc = subprocess.run(
            [*command, "validate", str(notebook)], env=env, capture_output=True, text=True, cwd=root
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "without encryption" not in proc.stderr + proc.stdout
        assert "WARNING" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_validate_catches_a_wrong_relu_backward(course):
    solutions = solution_sources(course.source_notebook("03_multilayer", "multilayer"))
    wrong = mutate(
        solutions["relu_backward_solution"], "dx = dout * (x > 0)", "dx = dout * (x < 0)"
    )
    (course.root / "work" / "03_multilayer").mkdir(parents=True)
    buggy = learner_copy(
        course,
        "03_multilayer",
        "multilayer",
        "buggy",
        {**solutions, "relu_backward_solution": wrong},
    )
    proc = validate(course, buggy)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "Exercise 1.3, check it FAILED: AssertionError: relu_backward's dx is wrong" in proc.stdout
    )


def make_dry_run(target: str, tmp_path) -> str:
    """What `make <target>` would run on a fresh clone (no .venv yet), without running it."""
    root = course_root()
    proc = subprocess.run(
        ["make", "-n", "-C", str(root), target, f"VENV={tmp_path / 'fresh-venv'}"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_learners_install_the_runtime_only_and_see_progress(tmp_path):
    """Issue 22, item 11: `make lab` installs what learning needs, with pip's progress
    shown; the test tools and the cluster extra come with `make test`."""
    lab = make_dry_run("lab", tmp_path)
    installs = [line for line in lab.splitlines() if "pip install" in line or "-e " in line]
    assert installs and all("[dev" not in line and "cluster" not in line for line in installs)
    assert "--quiet" not in lab and "course lab" in lab
    test = make_dry_run("test", tmp_path)
    assert "-e '.[dev,cluster]'" in test and "pytest" in test


def test_a_self_learner_gets_an_exchange_and_a_class_is_told(course, monkeypatch, capsys):
    """Issue 22, item 6: the private exchange exists before the lab lists assignments."""
    monkeypatch.delenv("NBGRADER_EXCHANGE", raising=False)
    (course.root / ".nbgrader").mkdir(mode=0o755, exist_ok=True)
    (course.root / ".nbgrader").chmod(0o755)  # as an earlier version left it
    workspace.ensure_exchange(course.root)
    assert (course.root / ".nbgrader" / "exchange").is_dir()
    # Walk 53, finding 18: `nbgrader release_assignment` changed the private exchange from
    # 0755 to 0777 with a warning. It is made 0777, as nbgrader's release wants it, and only
    # its account can reach it: .nbgrader/ is 0700.
    assert stat.S_IMODE((course.root / ".nbgrader" / "exchange").stat().st_mode) == 0o777
    assert stat.S_IMODE((course.root / ".nbgrader").stat().st_mode) == 0o700
    shared = course.root / "no-such-shared-exchange"
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(shared))
    workspace.ensure_exchange(course.root)
    assert not shared.exists() and "does not exist" in capsys.readouterr().out


@pytest.mark.slow
def test_an_instructor_alone_is_their_own_student_between_release_and_collect(course, monkeypatch):
    """Walk 53, findings 18 and 19: the README's loop on one machine. After `course lab`
    has made the private exchange, release changes no permission (it said "Permissions for
    exchange directory ... are invalid, changing them from 0o755 to 0o777"), and the
    README's `nbgrader submit 01_backprop --Exchange.assignment_dir=work` sends the work in
    work/, which `nbgrader collect` takes under the account's name."""
    import getpass

    monkeypatch.delenv("NBGRADER_EXCHANGE", raising=False)
    workspace.prepare(course.root)
    workspace.ensure_exchange(course.root)  # what `course lab` does first
    mine = course.root / "work" / "01_backprop" / "backprop.ipynb"
    mine.write_text(mine.read_text().replace("YOUR CODE HERE", "my own work", 1))
    said = []
    for command in (
        "release_assignment 01_backprop",
        "submit 01_backprop --Exchange.assignment_dir=work",
        "collect 01_backprop",
    ):
        run = course.nbgrader(*command.split())
        said.append(run.stdout + run.stderr)
    assert not any("WARNING" in log for log in said), said
    collected = course.root / "submitted" / getpass.getuser() / "01_backprop" / "backprop.ipynb"
    assert collected.read_text() == mine.read_text()
    assert not (course.root / "01_backprop").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "assignment, name",
    [("02_linear", "linear"), ("03_multilayer", "multilayer"), ("04_optimisers", "optimisers")],
)
def test_validate_passes_the_other_solved_notebooks(course, assignment, name):
    """Every check it holds on the solutions (01 is validated above)."""
    (course.root / "work" / assignment).mkdir(parents=True)
    if assignment == "04_optimisers":  # it carries the learner's 03: done, and right
        (course.root / "work" / "03_multilayer").mkdir()
        earlier = solution_sources(course.source_notebook("03_multilayer", "multilayer"))
        learner_copy(course, "03_multilayer", "multilayer", "multilayer", earlier)
    solutions = solution_sources(course.source_notebook(assignment, name))
    solved = learner_copy(course, assignment, name, "solved", solutions)
    proc = validate(course, solved)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_validate_starts_again_when_its_kernel_could_not_bind_a_port(tmp_path):
    """A port taken between jupyter_client's pick and its bind (a second Validate, a grading
    run beside it) failed the learner's Validate; it is started again, other errors are not."""
    import errno

    import zmq

    from course.selfcheck import _validated

    class Flaky:
        calls = 0

        def validate(self, path):
            self.calls += 1
            if self.calls == 1:
                raise zmq.error.ZMQError(errno.EADDRINUSE)
            return {"ok": path}

    flaky = Flaky()
    assert _validated(flaky, tmp_path / "a.ipynb") == {"ok": str(tmp_path / "a.ipynb")}
    assert flaky.calls == 2

    class Broken:
        def validate(self, path):
            raise zmq.error.ZMQError(errno.EACCES)

    with pytest.raises(zmq.error.ZMQError):
        _validated(Broken(), tmp_path / "a.ipynb")


def test_one_cause_is_said_once_and_each_exercise_points_to_it(capsys, monkeypatch):
    """Issue 53, item 2: with one function of 05 written, `course check` listed up to five
    CAUSE lines under each later exercise. The earliest cause is said once, first; under
    each exercise it explains, one line points to it; another cause keeps one line."""
    from course import selfcheck

    missing_03 = (
        "  CAUSE your code from 03_multilayer is missing from this submission: do "
        "03_multilayer, then re-run this notebook's import cell (or `course export`)."
    )
    wrong_04 = (
        "  CAUSE your adam from 04_optimisers fails its own check there (adam: its m is "
        "wrong); fix it in 04_optimisers, save, then re-run this notebook's import cell."
    )
    own = (
        "  CAUSE your layernorm_forward fails its own hidden check, layernorm (its out is "
        "wrong); this check runs through it: fix it first; the points it costs here come back "
        "once layernorm_forward is fixed."
    )

    def failed(grade_id, *causes):
        report = "\n".join([f"{grade_id}: 0 of 3 points", *causes, "  FAIL out: it is wrong."])
        return selfcheck.Exercise(grade_id, 0.0, 3.0, report, f"Exercise on {grade_id}")

    results = [
        selfcheck.Exercise("batchnorm", 3.0, 3.0, "batchnorm: 3 of 3 points", "Exercise 1"),
        failed("layernorm_backward", own),
        failed("finished_net", own, wrong_04, missing_03),
        failed("normalised_training", wrong_04, missing_03, own),
    ]
    monkeypatch.setenv("COLUMNS", "200")  # one line each, whatever runs the test
    selfcheck.print_table("normalisation", results, [])
    out = capsys.readouterr().out
    assert out.startswith("Fix first: your code from 03_multilayer is missing")
    assert out.count("CAUSE") == 3 and out.count("03_multilayer is missing") == 1
    pointer = 'CAUSE your code from 03_multilayer: see "Fix first" above.'
    assert out.count(pointer) == 2
    assert out.count("CAUSE your layernorm_forward fails its own hidden check") == 1
    lines = out.splitlines()
    for grade_id in ("finished_net", "normalised_training"):
        row = next(i for i, line in enumerate(lines) if line.startswith(grade_id))
        assert lines[row + 1].strip() == pointer and "FAIL out" in lines[row + 2]
