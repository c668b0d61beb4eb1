"""Round 6 of the attacks on the grader: each test reproduces one attack for real (a scratch
course, submissions as students, `course grade` with the sandbox on) and asserts what a
defended grader would give. A test that fails is a finding; one that passes, a defence.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest

from tests.harness import Batch

pytestmark = pytest.mark.slow

NUMERICAL = ("eval_numerical_gradient_solution", "eval_numerical_gradient_array_solution")
ZEROS = "    grad = np.zeros(x.shape, dtype=np.float64)\n"

# Markdown a student adds to their notebook; nbconvert renders it into the feedback page
# the instructor (formgrader) and the student open.
MARKDOWN_PAYLOAD = """\
[md link](javascript:alert(4))
![pixel](https://evil.example/track.png)
<a href="https://evil.example/x">click</a>
<script>alert(1)</script><style>body{display:none}</style>
"""

# Display outputs of a cell the student adds (kept in autograded/ and in the feedback).
DISPLAY_PAYLOAD = """\
from IPython.display import display
display({"text/html": '<a href="https://evil.example/h">h</a><script>alert(5)</script>'
         '<img src="https://evil.example/p.png">', "text/plain": "x"}, raw=True)
display({"text/markdown": "[out](javascript:alert(8))"}, raw=True)
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One graded 01 class: an honest student, a copy-nudging checker, feedback payloads."""
    batch = Batch(tmp_path_factory.mktemp("round6") / "course", "01_backprop", "backprop")
    batch.submit("honest", batch.answered())
    # A gradient checker that nudges a private copy of x, not x itself: Exercise 2.1 says
    # callers pass an f that reads x from outside, for which this returns zeros.
    copying = {
        cell: batch.solutions[cell].replace(
            ZEROS, "    x = np.array(x, dtype=np.float64)  # a copy\n" + ZEROS, 1
        )
        for cell in NUMERICAL
    }
    assert all(copying[c] != batch.solutions[c] for c in NUMERICAL)
    batch.submit("copier", batch.answered(copying))
    payload = batch.answered()
    payload.cells.insert(3, nbformat.v4.new_markdown_cell(MARKDOWN_PAYLOAD))
    payload.cells.insert(4, nbformat.v4.new_code_cell(DISPLAY_PAYLOAD))
    batch.submit("payload", payload)
    done = batch.course_grade()
    assert "honest" in done.stdout, done.stdout + done.stderr
    batch.course.nbgrader("generate_feedback", "01_backprop", "--force")
    return batch


# An attribute of a live element (the code cell's own source shows the payload escaped).
LIVE = r"""<[a-z]+\b[^<>]*\b{attr}\s*=\s*["']?\s*{to}"""


def feedback(batch, student: str) -> str:
    return (batch.course.root / "feedback" / student / "01_backprop" / "backprop.html").read_text()


def test_honest_student_scores_full(graded):
    """Baseline: the honest solution scores every point (the attacks did not hurt it)."""
    assert graded.scores()["honest"] == graded.max_scores()


def test_checker_that_nudges_a_copy_does_not_score_full(graded):
    """FINDING: a checker that nudges a copy of x (wrong by the exercise's own words: "nudging
    x itself, not a copy, is what makes it work") scores 3 + 3: every hidden case's f reads
    its argument, so nothing tells the two apart.
    Fix: add a case whose f ignores its argument and reads x from its closure."""
    scores = graded.scores()["copier"]
    assert scores["eval_numerical_gradient"] < 3
    assert scores["eval_numerical_gradient_array"] < 3


def test_control_a_copy_checker_gives_zeros_for_an_f_reading_x_from_outside():
    """The same copy checker, run as the notebook's own later cells run it (an f reading x
    from outside), returns zeros: the control that makes the finding above a wrong answer."""
    import numpy as np

    def eval_numerical_gradient(f, x, h=1e-5):
        x = np.array(x, dtype=np.float64)  # the copier's bug
        grad = np.zeros(x.shape, dtype=np.float64)
        for ix in np.ndindex(x.shape):
            old = x[ix]
            x[ix] = old + h
            f_plus = f(x)
            x[ix] = old - h
            f_minus = f(x)
            x[ix] = old
            grad[ix] = (f_plus - f_minus) / (2 * h)
        return grad

    outside = np.arange(1.0, 5.0)
    assert not np.any(eval_numerical_gradient(lambda _: np.sum(outside**2), outside))


def test_feedback_has_no_javascript_link(graded):
    """FINDING: `[md link](javascript:alert(4))` in a student's markdown cell becomes
    <a href="javascript:alert(4)"> in the feedback page: one click by the instructor runs
    the student's script in the page's origin (the formgrader's Jupyter server).
    Fix: drop href/src values whose scheme is not http(s), mailto or #fragment."""
    page = feedback(graded, "payload")
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", page, re.I)


def test_feedback_loads_nothing_from_elsewhere(graded):
    """FINDING: `![pixel](https://evil.example/track.png)` and an <img> in a text/html output
    survive sanitising: opening the feedback fetches the student's URL (tells them when and
    from where it was read; a tracking pixel in every page the grader renders).
    Fix: keep only data: (or relative) image sources in student content."""
    page = feedback(graded, "payload")
    assert not re.search(LIVE.format(attr="src", to="https?://evil"), page, re.I)


def test_feedback_has_no_link_of_the_student(graded):
    """FINDING: <a href="https://evil.example/..."> from a markdown cell and from a
    text/html output stays a live link in the feedback (the brief's "a link into feedback").
    Fix: render student links as text (or strip href) when sanitising."""
    page = feedback(graded, "payload")
    assert not re.search(LIVE.format(attr="href", to="https?://evil"), page, re.I)


def test_feedback_runs_no_script_or_style_of_the_student(graded):
    """Defended: <script> and <style> of the student are escaped in the feedback."""
    page = feedback(graded, "payload")
    assert "<script>alert" not in page
    assert "<style>body{display:none}" not in page


def test_formgrader_page_has_no_javascript_link(graded):
    """FINDING: the same markdown link in the formgrader's view of the autograded notebook
    (rendered as nbgrader's SubmissionHandler does): a javascript: URL in a page of the
    instructor's own Jupyter server, one click from running with their session (_xsrf):
    /formgrader/api can then change any grade, /api/contents read source/ and the secret.
    Fix: sanitise link targets of the student's markdown in the autograded notebook."""
    from tests.test_attacks_round5 import formgrader_page

    root = graded.course.root
    html = formgrader_page(root, root / "autograded" / "payload" / "01_backprop" / "backprop.ipynb")
    assert not re.search(r"""(href|src)\s*=\s*["']?\s*javascript:""", html, re.I)


# ---------------------------------------------------------------- the exchange


def _needs_root():
    import os

    if os.geteuid() != 0:
        pytest.skip("files owned by another account need root")


def _inbound(batch) -> Path:
    inbound = batch.course.root / ".nbgrader" / "exchange" / "everything-leaks" / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    return inbound


def _own(path: Path, account: str) -> None:
    """Give path (not what a link points to) to a Unix account, as if it had made it."""
    import os
    import pwd

    uid = pwd.getpwnam(account).pw_uid
    os.lchown(path, uid, uid)


STAMP = "2026-11-30 10:00:00.000000 UTC"


def test_a_linked_inbound_folder_does_not_collect_the_course_source(tmp_path):
    """FINDING: the student `daemon` puts in the inbound (733, not sticky) a symlink named
    `daemon+01_backprop+<time>+<random>` pointing at the instructor's
    <course>/source/01_backprop (a predictable path on the hub: ~<instructor>/everything-
    leaks). The owner check reads the link's owner (daemon); nbgrader only warns "owned by
    root; cheating attempt?"; collect copies the link's target: the source notebook, every
    solution in it, becomes daemon's submission: 24 / 24 for nothing, and the solutions
    come back to daemon in the feedback. Fix: in collect, refuse an inbound entry that is a
    link (os.lstat + S_ISDIR, and open it with O_NOFOLLOW / os.open(dir_fd=...))."""
    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    link = _inbound(batch) / f"daemon+01_backprop+{STAMP}+aa11bb22"
    link.symlink_to(batch.course.root / "source" / "01_backprop")
    _own(link, "daemon")
    batch.course.nbgrader("collect", "01_backprop", check=False)
    collected = batch.course.root / "submitted" / "daemon" / "01_backprop" / "backprop.ipynb"
    assert not (collected.exists() and "BEGIN SOLUTION" in collected.read_text())
    batch.course_grade("--workers", "1")
    assert sum(batch.scores().get("daemon", {}).values()) == 0


def test_a_link_inside_an_inbound_folder_is_not_followed(tmp_path):
    """FINDING: `nobody` submits a real folder of their own whose backprop.ipynb is a symlink
    to <course>/source/01_backprop/backprop.ipynb, plus `extra` -> <course>/source: collect
    (run by the instructor) copies the targets, so submitted/nobody holds the solution
    notebook (graded 24 / 24, shown back in the feedback) and the whole source/ tree;
    `course grade` refuses links but sees regular files by then. The same reads another
    student's submitted/ folder. Fix: copy inbound folders with symlinks=True and refuse
    (report) any link, or copy file by file with O_NOFOLLOW."""
    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    folder = _inbound(batch) / f"nobody+01_backprop+{STAMP}+cc33dd44"
    folder.mkdir()
    (folder / "backprop.ipynb").symlink_to(batch.course.root / "source/01_backprop/backprop.ipynb")
    (folder / "extra").symlink_to(batch.course.root / "source")
    (folder / "timestamp.txt").write_text(STAMP)
    for path in (*folder.iterdir(), folder):
        _own(path, "nobody")
    batch.course.nbgrader("collect", "01_backprop", check=False)
    submitted = batch.course.root / "submitted" / "nobody" / "01_backprop"
    assert not (submitted / "extra" / "01_backprop").exists()
    collected = submitted / "backprop.ipynb"
    assert not (collected.exists() and "BEGIN SOLUTION" in collected.read_text())
    batch.course_grade("--workers", "1")
    assert sum(batch.scores().get("nobody", {}).values()) == 0


def test_a_notebook_edited_in_place_after_the_deadline_is_late(tmp_path):
    """FINDING: collect dates a submission by its inbound folder's last change, but a
    student who owns the folder can rewrite a file in it after the deadline: the folder's
    entries do not change, so neither does its ctime. `daemon` submits a blank notebook on
    time, then after the due date overwrites it with a full one: collected on time, 24 / 24
    with the "zero" late penalty. Fix: date a submission by the newest ctime of the folder
    and of every entry in it (os.lstat of each, recursively)."""
    import time

    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    config = batch.course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    now = datetime.now(UTC)
    stamp = now.strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    folder = _inbound(batch) / f"daemon+01_backprop+{stamp}+ee55ff66"
    folder.mkdir()
    nbformat.write(batch.release, folder / "backprop.ipynb")
    (folder / "timestamp.txt").write_text(stamp)
    for path in (*folder.iterdir(), folder):
        _own(path, "daemon")
    due = now + timedelta(seconds=3)
    batch.course.nbgrader(
        "db", "assignment", "add", "01_backprop", f"--duedate={due:%Y-%m-%d %H:%M:%S.%f} UTC"
    )
    time.sleep(5)  # not a timing assertion: the edit must come after the due date
    late_edit = nbformat.writes(batch.answered())
    with open(folder / "backprop.ipynb", "r+") as notebook:  # in place: same inode
        notebook.truncate(0)
        notebook.write(late_edit)
    assert datetime.fromtimestamp((folder / "backprop.ipynb").stat().st_ctime, UTC) > due
    batch.course.nbgrader("collect", "01_backprop", check=False)
    batch.course_grade("--workers", "1")
    from nbgrader.api import Gradebook

    from course.paths import gradebook_url

    with Gradebook(gradebook_url(batch.course.root)) as gb:
        sub = gb.find_submission("01_backprop", "daemon")
        late = sub.total_seconds_late
        score = sub.score - sum(nb.late_submission_penalty or 0 for nb in sub.notebooks)
    assert late > 0 or score == 0, f"edited after the due date, graded on time: {score}"


def test_a_fifo_in_one_submission_does_not_stop_collecting_the_others(tmp_path):
    """FINDING: `nobody` adds a named pipe (data.csv) to their inbound folder; collect's
    shutil.copytree raises shutil.Error ("is a named pipe") and `nbgrader collect` stops
    there: `daemon`'s on-time submission, in the inbound beside it, is never collected
    (any student can stop the collection of the students after them). Fix: in collect,
    skip (and report) any entry that is not a regular file or folder, per submission, and
    go on with the others."""
    import os

    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    for student, tag, fifo in (("nobody", "bb22", True), ("daemon", "cc33", False)):
        folder = _inbound(batch) / f"{student}+01_backprop+{STAMP}+{tag}"
        folder.mkdir()
        nbformat.write(batch.answered(), folder / "backprop.ipynb")
        (folder / "timestamp.txt").write_text(STAMP)
        if fifo:
            os.mkfifo(folder / "data.csv")
        for path in (*folder.iterdir(), folder):
            _own(path, student)
    batch.course.nbgrader("collect", "01_backprop", check=False)
    assert (batch.course.root / "submitted" / "daemon" / "01_backprop" / "backprop.ipynb").exists()


def test_a_folder_with_a_bad_date_in_its_name_does_not_stop_collect(tmp_path):
    """FINDING: any student can `mkdir 'x+01_backprop+not a date+y'` in the inbound (733):
    `nbgrader collect` parses every folder's name before any owner check
    (CollectApp.init_src -> parse_utc), raises dateutil's ParserError and collects nobody:
    the whole class's submissions stay in the exchange. Fix: in the course's collect, skip
    (and report) a folder whose name does not parse, before nbgrader's init_src sees it."""
    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    for name, owner in (
        (f"daemon+01_backprop+{STAMP}+cc33", "daemon"),
        ("nobody+01_backprop+not a date+dd44", "nobody"),
    ):
        folder = _inbound(batch) / name
        folder.mkdir()
        nbformat.write(batch.answered(), folder / "backprop.ipynb")
        (folder / "timestamp.txt").write_text(STAMP)
        for path in (*folder.iterdir(), folder):
            _own(path, owner)
    batch.course.nbgrader("collect", "01_backprop", check=False)
    assert (batch.course.root / "submitted" / "daemon" / "01_backprop" / "backprop.ipynb").exists()


def test_collect_prints_no_escape_codes_of_a_student(tmp_path):
    """FINDING: inbound folder names are the student's text, and collect logs them raw to
    the instructor's terminal ("... is dated ... dated by the change", "... claims to be
    submitted by <name> but is owned by nobody: not collected"): a name holding
    ESC]0;...BEL ESC[2J retitles and clears the terminal, and ESC[1A ESC[2K can erase the
    very warning that reports the cheat. Fix: log names with repr() or strip C0/C1
    control characters (a logging filter on the collect app)."""
    _needs_root()
    batch = Batch(tmp_path, "01_backprop", "backprop")
    folder = _inbound(batch) / f"\x1b]0;PWNED\x07\x1b[2J\x1b[1A\x1b[2K+01_backprop+{STAMP}+r1"
    folder.mkdir()
    nbformat.write(batch.release, folder / "backprop.ipynb")
    (folder / "timestamp.txt").write_text(STAMP)
    for path in (*folder.iterdir(), folder):
        _own(path, "nobody")
    done = batch.course.nbgrader("collect", "01_backprop", check=False)
    assert "\x1b" not in done.stdout + done.stderr


def test_a_student_cannot_take_over_the_courses_exchange_folder(tmp_path):
    """FINDING: hub/install makes the exchange root mode 777 without the sticky bit, so any
    student may rename the course's folder in it (`mv exchange/everything-leaks x`: only
    the parent's write permission is checked) and make their own `everything-leaks`: the
    classmates then fetch the attacker's assignment (code that runs in their kernels) and
    submit into an inbound the attacker owns, lists and reads (their work stolen, or
    deleted before collect). Fix: `chmod 1777` the exchange root in hub/install (the
    sticky bit: only an entry's owner renames or deletes it)."""
    import os
    import shutil
    import subprocess
    import tempfile

    _needs_root()
    if not shutil.which("runuser"):
        pytest.skip("runuser is missing")
    # The exchange's mode as hub/install sets it.
    install = (Path(__file__).resolve().parents[1] / "hub" / "install").read_text()
    mode = re.search(r'chmod (\d+) "\$exchange"', install).group(1)
    place = Path(tempfile.mkdtemp(prefix="round6-exchange-", dir="/tmp"))  # others may enter
    try:
        os.chmod(place, 0o755)
        exchange = place / "exchange"
        exchange.mkdir()
        os.chmod(exchange, int(mode, 8))
        batch = Batch(tmp_path, "01_backprop", "backprop")
        batch.course.nbgrader(
            "release_assignment",
            "01_backprop",
            "--force",
            f"--Exchange.root={exchange}",
            "--CourseDirectory.course_id=everything-leaks",
        )
        assert (exchange / "everything-leaks" / "outbound" / "01_backprop").is_dir()
        moved = subprocess.run(
            ["runuser", "-u", "nobody", "--", "mv", "everything-leaks", "taken"],
            cwd=exchange,
            capture_output=True,
            text=True,
        )
        assert moved.returncode != 0, "a student renamed the course's exchange folder"
        assert (exchange / "everything-leaks" / "outbound" / "01_backprop").is_dir()
    finally:
        shutil.rmtree(place, ignore_errors=True)


def test_plain_autograde_prints_no_escape_codes_of_a_student(tmp_path):
    """FINDING: a submission is a folder, and its file names are the student's: with an
    extra file named ESC]0;pwned BEL ESC[31m ... .ipynb, plain `nbgrader autograde` logs
    "Skipping unknown notebook: <name>" raw to the instructor's terminal (`course grade`
    itself prints repr()). Fix: one logging filter for every nbgrader app, set in
    nbgrader_config.py, that escapes C0/C1 control characters in log records."""
    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("mallory", batch.answered())
    batch.course.submit(
        "mallory", "01_backprop", {"\x1b]0;pwned\x07\x1b[2J\x1b[31mRED.ipynb": batch.release}
    )
    done = batch.grade()
    assert "\x1b" not in done.stdout + done.stderr


BORROWED = {
    "eval_numerical_gradient_solution": """\
from course.grader.probe import nudged as _nudged


class _Borrowed:  # an object, not a function: the probe's guard wraps only functions
    def __call__(self, f, x, h=1e-5):
        plus, minus = _nudged(f, x, h=h)
        return (plus - minus) / (2 * h)


eval_numerical_gradient = _Borrowed()
""",
    "eval_numerical_gradient_array_solution": """\
class _BorrowedArray:
    def __call__(self, f, x, df, h=1e-5):
        plus, minus = _nudged(f, x, df, h=h)
        return (plus - minus) / (2 * h)


eval_numerical_gradient_array = _BorrowedArray()
""",
}


def test_a_checker_object_cannot_borrow_the_probes_nudging(tmp_path):
    """FINDING (round 5's fix bypassed): `nudged` refuses to run while the probe is inside a
    student function, but the probe counts that only for a types.FunctionType
    (probe.Student wraps nothing else): eval_numerical_gradient = an object whose __call__
    returns the grader's own nudged differences scores 3 + 3 with no checker written.
    Fix: wrap any callable the probe takes from the namespace (or count depth in nudged by
    inspecting the stack for frames outside course/), and refuse non-function checkers."""
    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("mallory", batch.answered(BORROWED))
    batch.course_grade("--workers", "1")
    scores = batch.scores()["mallory"]
    assert scores["eval_numerical_gradient"] + scores["eval_numerical_gradient_array"] == 0


NUMERICAL_DW = """
_analytic_{name} = {name}


def {name}(W, X, y, reg):  # the loss as written, dW by centred differences of it
    loss, _ = _analytic_{name}(W, X, y, reg)
    W = np.array(W, dtype=np.float64)
    dW = np.zeros_like(W)
    for ix in np.ndindex(W.shape):
        old = W[ix]
        W[ix] = old + 1e-5
        up = _analytic_{name}(W, X, y, reg)[0]
        W[ix] = old - 1e-5
        down = _analytic_{name}(W, X, y, reg)[0]
        W[ix] = old
        dW[ix] = (up - down) / 2e-5
    return loss, dW
"""


@pytest.mark.xfail(
    strict=True,
    reason="declined (README, 'Not protected'): a dW by centred differences of the student's "
    "own loss is their own computation, right to within 1e-8; telling it apart would grade "
    "precision below what float64 alternates are promised",
)
def test_a_numerical_dW_does_not_earn_the_softmax_gradient_points():
    """FINDING: in 02, a softmax loss whose dW is centred differences of its own loss (the
    gradient, the point of the exercise, never derived) keeps every point of
    softmax_loss_naive (1 / 1) and softmax_loss_vectorized (2 / 2): at the hidden inputs
    centred differences agree with the analytic dW within rtol 1e-8 (the SVM's kinks and
    the scores near 1e3 do catch it). Judged in process (judge_in_process, the mutation
    harness's path, which agrees with nbgrader). Fix: as 01's checker cases do, add an
    ordinary case whose truncation error (h^2 f'''/6) exceeds the tolerance (larger W or
    X, so the softmax curves sharply), or compare dW at rtol below that truncation."""
    from course.authoring.classroom import judge_in_process, solution_sources
    from course.paths import course_root

    source = nbformat.read(course_root() / "source/02_linear/linear.ipynb", as_version=4)
    answers = solution_sources(source)
    for name in ("softmax_loss_naive", "softmax_loss_vectorized"):
        answers[f"{name}_solution"] += NUMERICAL_DW.format(name=name)
    honest = judge_in_process(source, solution_sources(source))
    numerical = judge_in_process(source, answers)
    for name in ("softmax_loss_naive", "softmax_loss_vectorized"):
        assert honest[name] > 0
        assert numerical[name] < honest[name], f"{name}: {numerical[name]} of {honest[name]}"


# ---------------------------------------------------------------- the exchange, round 8


def test_a_classmates_file_in_a_submission_refuses_it(tmp_path):
    """Round 8: nbgrader's submit leaves a submission's folder at 0777, and a classmate who
    learnt its name replaced the notebook in it with their own; collect checked only the
    folder's owner. Now every file and folder in it must be the folder's owner's."""
    from course.grader.exchange import irregular_entry

    _needs_root()
    folder = tmp_path / f"daemon+01_backprop+{STAMP}+aa11bb22"
    (folder / "sub").mkdir(parents=True)
    (folder / "backprop.ipynb").write_text("{}")
    (folder / "sub" / "data.txt").write_text("1")
    for path in (folder, folder / "sub", folder / "backprop.ipynb", folder / "sub" / "data.txt"):
        _own(path, "daemon")
    assert irregular_entry(str(folder)) is None
    _own(folder / "sub" / "data.txt", "nobody")  # a classmate's file, deep inside
    assert "owned by nobody" in irregular_entry(str(folder))
    _own(folder / "sub" / "data.txt", "daemon")
    _own(folder / "sub", "nobody")  # a classmate's folder
    assert "owned by nobody" in irregular_entry(str(folder))


def test_collecting_strips_setuid_setgid_and_execute_bits(tmp_path):
    """Round 8: a student's setuid 4755 file became a setuid program of the collecting
    account. A collected file keeps its read and write bits only."""
    import os
    import stat

    from course.grader.exchange import OwnerCheckedCollect

    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\nid\n")
    os.chmod(tool, 0o6755)
    here = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        uid = os.lstat(tool).st_uid
        assert OwnerCheckedCollect._copy_file(here, "tool", str(tmp_path / "copy"), uid)
        assert not OwnerCheckedCollect._copy_file(here, "tool", str(tmp_path / "no"), uid + 1)
    finally:
        os.close(here)
    assert stat.S_IMODE(os.stat(tmp_path / "copy").st_mode) == 0o644
    assert not (tmp_path / "no").exists()
