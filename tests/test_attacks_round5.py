"""Round 5 of attacks (a helper that had not read the defences), as a student would make
them, run with the real `course grade` (sandbox on) in a scratch course. Each test FAILS
while its finding stands; the lead flips them as the findings are fixed."""

import json
from pathlib import Path

import nbformat
import pytest

from tests.harness import Batch

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"


def blank_with(batch, answers: dict[str, str], extra_cells: tuple[str, ...] = ()):
    """The release, blank but for the solution cells in `answers` (grade id: code), with
    `extra_cells` (code) inserted after the first cell."""
    nb = nbformat.from_dict(json.loads(json.dumps(batch.release)))
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    for i, code in enumerate(extra_cells):
        nb.cells.insert(1 + i, nbformat.v4.new_code_cell(code))
    return nb


def cell_text(batch, student: str, marker: str) -> str:
    """What the graded notebook's cell whose source holds `marker` printed."""
    path = batch.course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    cell = next(c for c in nbformat.read(path, as_version=4).cells if marker in c.source)
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


# The probe computes the analytic gradient of its test function in the kernel (`exact`, a
# closure variable of _record_checker's `compute`), one frame above the student's
# checker: a "checker" that climbs the stack and returns it is held to the reference's
# centred differences (grad, rtol 1e-7) and to the analytic gradient, and passes both at
# the default step. Only the h=1e-2 case fails: 2.57 of 3 points, twice.
FRAME_WALK = """
def _trusted(f, x):
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        names = frame.f_locals
        if "exact" in names and "original" in names:
            return names["exact"](names["original"])
        frame = frame.f_back
    raise NotImplementedError("no probe above")
"""


def test_a_checker_cannot_return_the_probes_analytic_gradient(graded_class):
    """Found in round 5: a blank notebook whose two gradient checkers only read the probe's
    `exact` from the call stack scores 5.14 / 24 (2.57 on each checker). Fix: the kernel
    probe computes no trusted value (the analytic gradient is the reference run's own:
    compute it only when probing the source solutions, or in the grader from x)."""
    batch = graded_class
    scores = batch.scores()["frame_walker"]
    assert scores["eval_numerical_gradient"] == 0, scores
    assert scores["eval_numerical_gradient_array"] == 0, scores


# Each kernel process is capped at 4 GB of address space (RLIMIT_AS), and a kernel may
# start about 50 processes, but nothing bounds the memory of the kernel's processes
# together (no memory cgroup): each child of a fork gets its own 4 GB. 50 children of
# 4 GB are 200 GB: the machine's OOM killer then picks among the grader, the other
# students' kernels (graded at the same time by other workers) and anything else there.
# Kept small here: three children of 1.6 GB each, 4.8 GB in all, above one kernel's cap,
# each held until all three have answered, and counted as held only if it is still alive
# then: on a loaded machine the children allocate one after another, and the cgroup's OOM
# killer takes the largest, a child that had already said "held" (two fresh clones of stop
# 45 failed so, dmesg showing the kill; the three never held 4.8 GB together).
FORK_MEMORY = r"""
import os, time
import numpy as np
release, hold_on = os.pipe()
children = []
for _ in range(3):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(hold_on)
        try:
            block = np.ones(200_000_000)  # 1.6 GB, every page touched
            os.write(w, b"held")
            os.read(release, 1)  # held until every child has said how it went
        except BaseException as exc:
            os.write(w, type(exc).__name__.encode())
        os._exit(0)
    os.close(w)  # a child killed for its memory: its pipe ends, and reads as ""
    children.append((pid, r))
held = [os.read(r, 64).decode() for _, r in children]
time.sleep(1)  # a child the OOM killer chose is gone within milliseconds
alive = [os.waitpid(pid, os.WNOHANG) == (0, 0) for pid, _ in children]
os.close(hold_on)
for (pid, _), living in zip(children, alive):
    if living:
        os.waitpid(pid, 0)
print("FORK_MEMORY", [h if living else "killed" for h, living in zip(held, alive)])
"""


def test_a_kernels_processes_together_cannot_exceed_its_memory_cap(graded_class):
    """Found in round 5: the three children all hold their 1.6 GB at once (4.8 GB, above
    the kernel's 4 GB); so 50 children could take the grading machine's memory, and the
    OOM killer other students' grading. Fix: a memory limit on the sandbox as a whole (a
    cgroup: systemd-run --scope -p MemoryMax=4G, or a delegated cgroup v2 folder, around
    bwrap), or a watchdog that sums the RSS of the kernel's process tree."""
    batch = graded_class
    printed = cell_text(batch, "forker", "FORK_MEMORY")
    assert printed.count("held") < 3, f"4.8 GB held by one kernel's processes: {printed!r}"
    assert batch.scores()["zoe"] == batch.max_scores()


def _inbound_submission(batch, claimed: str, owner: str, stamp: str, nb) -> None:
    """A folder in the course's exchange inbound, as nbgrader's ExchangeSubmit makes one
    (`<student>+<assignment>+<timestamp>+<random>`, with timestamp.txt), written by the
    Unix account `owner`: the inbound folder is writable by every student (733)."""
    import os
    import pwd

    inbound = batch.course.root / ".nbgrader" / "exchange" / "everything-leaks" / "inbound"
    inbound.mkdir(parents=True, exist_ok=True)
    folder = inbound / f"{claimed}+{ASSIGNMENT}+{stamp}+{os.urandom(4).hex()}"
    folder.mkdir()
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    (folder / "timestamp.txt").write_text(stamp)
    uid = pwd.getpwnam(owner).pw_uid
    for path in [folder, *folder.iterdir()]:
        os.chown(path, uid, uid)


def _needs_root():
    import os

    if os.geteuid() != 0:
        pytest.skip("chown to another account needs root")


def test_a_student_cannot_replace_another_students_submission(tmp_path):
    """Found in round 5: on the hub, every student may write into the exchange's inbound
    (733), and the folder's name says whose submission it is. Here the account `nobody`
    drops a blank notebook named `daemon+01_backprop+<a later time>+...`: `nbgrader collect`
    only logs "claims to be submitted by daemon but is owned by nobody; cheating attempt?"
    and collects it as daemon's latest, so daemon's full marks become 0 / 24 (any student
    can zero any classmate, or submit for them). Fix: a collect step of the course that
    skips (and reports) an inbound folder whose owner is not the student it names
    (nbgrader's CollectApp.check_owner only warns), e.g. `course collect`."""
    _needs_root()
    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    _inbound_submission(
        batch, "daemon", "daemon", "2026-11-30 10:00:00.000000 UTC", batch.answered(trim=True)
    )
    _inbound_submission(batch, "daemon", "nobody", "2026-11-30 11:00:00.000000 UTC", batch.release)
    batch.course.nbgrader("collect", ASSIGNMENT, check=False)
    batch.course_grade("--workers", "1")
    assert batch.scores()["daemon"] == batch.max_scores()


def test_a_late_submission_cannot_date_itself_before_the_deadline(tmp_path):
    """Found in round 5: the submission's time is what the student's own files say (the
    inbound folder's name and timestamp.txt, both written by the student's account), so
    work submitted now, after a due date in the past, dated before it, is graded on time:
    with a late penalty of "zero" it keeps its 24 / 24. Fix: at collect, date a submission
    no earlier than its inbound folder's ctime (which no student can set back) and say so
    when its timestamp.txt claims earlier."""
    _needs_root()
    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    config = batch.course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    batch.course.nbgrader("db", "assignment", "add", ASSIGNMENT, "--duedate=2026-01-10 12:00:00")
    _inbound_submission(
        batch, "daemon", "daemon", "2026-01-09 12:00:00.000000 UTC", batch.answered(trim=True)
    )
    batch.course.nbgrader("collect", ASSIGNMENT, check=False)
    batch.course_grade("--workers", "1")
    late, penalty = _lateness(batch, "daemon")
    assert late > 0 and penalty == 24, f"submitted after the due date: {late} s late, {penalty}"


def _lateness(batch, student: str) -> tuple[float, float]:
    """(seconds late, late penalty in points) of a student's submission, in the gradebook."""
    from nbgrader.api import Gradebook

    from course.paths import gradebook_url

    with Gradebook(gradebook_url(batch.course.root)) as gb:
        sub = gb.find_submission(ASSIGNMENT, student)
        return sub.total_seconds_late, sum(nb.late_submission_penalty or 0 for nb in sub.notebooks)


XSS = r"""
from IPython.display import HTML, display
display(HTML("<script>window.PWNED_BY_A_STUDENT = 1</script>"))
"""


def formgrader_page(root: Path, notebook: Path) -> str:
    """An autograded notebook rendered as the formgrader's SubmissionHandler renders it: with
    the course's nbgrader_config.py, then the formgrader's template
    (nbgrader.server_extensions.formgrader.formgrader.build_extra_config)."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from traitlets.config import Config

    config = Config()
    course_config = root / "nbgrader_config.py"
    namespace = {"c": config, "get_config": lambda: config, "__file__": str(course_config)}
    exec(compile(course_config.read_text(), str(course_config), "exec"), namespace)  # noqa: S102
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"base_url": "/", "mathjax_url": "", "index": 0, "total": 1}
    return HTMLExporter(config=config).from_filename(str(notebook), resources=resources)[0]


def test_a_students_output_runs_no_script_in_the_instructors_formgrader(graded_class):
    """Found in round 5: an output a student's cell displays (text/html) is kept in the
    autograded notebook, and nbgrader's formgrader renders that notebook with nbconvert's
    HTMLExporter (template "formgrade", sanitize_html off): the <script> lands as is in a
    page of the instructor's own Jupyter server, where it runs with the instructor's
    session (its _xsrf cookie): it can call /formgrader/api to change any grade, read
    source/ and .nbgrader/secret through /api/contents, or open a terminal. The feedback
    HTML carries it too. A <script> in a markdown cell the student adds does the same.
    Rendered here as the formgrader's SubmissionHandler does. Fix: for outputs,
    `c.HTMLExporter.sanitize_html = True` in nbgrader_config.py (the formgrader and
    generate_feedback read it; measured: it strips the output's script); it does NOT
    cover markdown, which nbgrader's formgrade template renders without sanitizing
    (`markdown2html | strip_files_prefix`): clean the student's markdown cells (and
    text/html, javascript, widget outputs) in the autograded notebook itself."""
    batch = graded_class
    path = batch.course.root / "autograded" / "scripter" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    html = formgrader_page(batch.course.root, path)
    assert "<script>window.PWNED_BY_A_STUDENT" not in html
    assert "<script>window.MARKDOWN_PWNED" not in html
    batch.course.nbgrader("generate_feedback", ASSIGNMENT, check=False)
    feedback = batch.course.root / "feedback" / "scripter" / ASSIGNMENT / f"{NOTEBOOK}.html"
    assert "<script>window.PWNED_BY_A_STUDENT" not in feedback.read_text()


# One process, no fork: memory files (memfd_create) are shared memory, outside the address
# space once unmapped, so RLIMIT_AS does not count them; each is capped at 64 MB by
# RLIMIT_FSIZE, but 512 open files make 32 GB. Kept small here: 80 of 60 MB, 4.8 GB.
MEMFD = r"""
import mmap, os, time
held = []
try:
    for i in range(80):
        fd = os.memfd_create(f"block{i}")
        os.ftruncate(fd, 60 << 20)
        with mmap.mmap(fd, 60 << 20) as view:
            for offset in range(0, 60 << 20, 4096):
                view[offset] = 1
        held.append(fd)
except OSError as exc:
    print("refused:", exc)
print("MEMFD_MB", len(held) * 60)
time.sleep(2)
"""


def test_a_kernel_cannot_hold_memory_files_beyond_its_memory_cap(graded_class):
    """Found in round 5: one kernel process holds 4.8 GB in memfd files (prints MEMFD_MB
    4800), above its 4 GB cap; a watchdog that sums the RSS of the kernel's processes would
    not see it either (unmapped shared memory is in no process's RSS). Fix: a memory cgroup
    around the sandbox (it counts shmem), or memfd_create refused by the seccomp filter."""
    batch = graded_class
    printed = cell_text(batch, "memfd", "MEMFD_MB")
    held = int(printed.split("MEMFD_MB")[1].split()[0])
    assert held <= 4096, f"{held} MB of memory files held by one kernel process"


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """One real `course grade --workers 1` of 01 for the attacks that need no set-up of
    their own (once graded apart, a run each): each test asserts its own student."""
    batch = Batch(tmp_path_factory.mktemp("round5") / "course", ASSIGNMENT, NOTEBOOK)
    walker = {
        "eval_numerical_gradient_solution": FRAME_WALK
        + "\ndef eval_numerical_gradient(f, x, h=1e-5):\n    return _trusted(f, x)\n",
        "eval_numerical_gradient_array_solution": FRAME_WALK
        + "\ndef eval_numerical_gradient_array(f, x, df, h=1e-5):\n"
        "    return _trusted(f, x)\n",
    }
    batch.submit("frame_walker", blank_with(batch, walker))
    batch.submit("forker", blank_with(batch, {}, (FORK_MEMORY,)))
    batch.submit("zoe", batch.answered(trim=True))
    scripter = blank_with(batch, {}, (XSS,))
    scripter.cells.insert(
        1, nbformat.v4.new_markdown_cell("<script>window.MARKDOWN_PWNED = 1</script>")
    )
    batch.submit("scripter", scripter)
    batch.submit("memfd", blank_with(batch, {}, (MEMFD,)))
    done = batch.course_grade("--workers", "1")
    assert "zoe" in done.stdout, done.stdout + done.stderr
    return batch
