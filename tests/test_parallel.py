"""Grading a class in parallel: identical to nbgrader's sequential run, one gradebook writer,
re-runs that grade only what changed, a real Dask cluster on loopback, and faults."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import nbformat
import pytest

from course.paths import tool_env
from tests.harness import Batch, postgres_server, tls_local_cluster, tree_digest

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"


DUE = "2026-01-10 12:00:00"


def submit_class(batch):
    """Five students: right, blank, two classic bugs, and one cut off by a crash. Dora
    submits late, and late work scores zero in this course's copy (nbgrader's "zero"
    late-penalty method), so that the penalty's path is compared too."""
    config = batch.course.root / "nbgrader_config.py"
    config.write_text(config.read_text() + '\nc.LateSubmissionPlugin.penalty_method = "zero"\n')
    # One course graded several ways: the same secret, so the same inputs (issue 14).
    secret = batch.course.root / ".nbgrader" / "secret"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("0123456789abcdef" * 4 + "\n")
    secret.chmod(0o600)
    batch.course.nbgrader("db", "assignment", "add", ASSIGNMENT, f"--duedate={DUE}")
    solutions = batch.solutions
    overwrite = solutions["value_core"].replace(
        "self.grad += out.grad\n            other.grad += out.grad",
        "self.grad = out.grad\n            other.grad = out.grad",
    )
    forward = solutions["eval_numerical_gradient_solution"].replace(
        "(f_plus - f_minus) / (2 * h)", "(f_plus - f_minus) / h"
    )
    batch.submit("ada", batch.answered(trim=True))
    batch.submit("blaise", batch.release)
    batch.submit("carl", batch.answered({"value_core": overwrite}, trim=True))
    batch.submit("dora", batch.answered({"eval_numerical_gradient_solution": forward}, trim=True))
    (batch.course.root / "submitted" / "dora" / ASSIGNMENT / "timestamp.txt").write_text(
        "2026-01-11 09:30:00"
    )
    for student in ("ada", "carl"):  # on time
        (batch.course.root / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(
            "2026-01-09 17:00:00"
        )
    batch.submit("emmy", batch.answered({"value_more_ops": "import os\nos._exit(1)"}, trim=True))


WIDGET = "application/vnd.jupyter.widget-view+json"  # a random model id in every run


def comparable(path):
    """A graded notebook's cells as (source, outputs), without volatile parts."""

    def steady(output):
        output = {k: v for k, v in output.items() if k != "metadata"}
        if "data" in output:
            output["data"] = {k: v for k, v in output["data"].items() if k != WIDGET}
        return output

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)  # a markdown cell given outputs broke the feedback page's schema
    return [(c.source, [steady(o) for o in c.get("outputs", [])]) for c in nb.cells]


# A kernel that sends each write to stderr as its own message: `print(..., file=sys.stderr)`
# writes the line, then its newline, and a loaded machine's flush timer can fall between
# them (issue 55: one fresh clone's run in three split 01's "check it FAILED" line so).
# (IPython puts back each cell's `write` after it, so the flush is hooked one level down.)
SPLIT_STDERR = "import sys; sys.stderr._schedule_flush = sys.stderr.flush"


def split_every_stderr_write(batch):
    config = batch.course.root / "nbgrader_config.py"
    line = f"c.Execute.extra_arguments = ['--IPKernelApp.exec_lines={SPLIT_STDERR}']\n"
    config.write_text(config.read_text() + line)


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """The same class graded twice: plain sequential nbgrader, and `course grade --workers 2`
    with every write to stderr flushed on its own (chunked as a loaded machine may)."""
    sequential = Batch(tmp_path_factory.mktemp("sequential"), ASSIGNMENT, NOTEBOOK)
    parallel = Batch(tmp_path_factory.mktemp("parallel"), ASSIGNMENT, NOTEBOOK)
    for batch in (sequential, parallel):
        submit_class(batch)
    split_every_stderr_write(parallel)
    sequential.course.nbgrader("autograde", ASSIGNMENT, "--force")
    proc = parallel.course_grade("--workers", "2")
    return sequential, parallel, proc


def test_parallel_scores_equal_sequential_nbgrader(twins):
    sequential, parallel, proc = twins
    assert parallel.scores() == sequential.scores()
    assert parallel.scores()["ada"] == parallel.max_scores()
    assert sum(parallel.scores()["blaise"].values()) == 0


def gradebook_rows(batch) -> dict[str, tuple]:
    """{student: (timestamp, seconds late, score, late penalty, needs manual grade)}."""
    from nbgrader.api import Gradebook

    from course.paths import gradebook_url

    with Gradebook(gradebook_url(batch.course.root)) as gb:
        return {
            s.student.id: (
                s.timestamp,
                s.total_seconds_late,
                s.score,
                [nb.late_submission_penalty for nb in s.notebooks],
                s.needs_manual_grade,
            )
            for s in gb.find_assignment(ASSIGNMENT).submissions
        }


def test_parallel_gradebook_equals_sequential_with_late_penalties(twins):
    sequential, parallel, _ = twins
    rows = gradebook_rows(parallel)
    assert rows == gradebook_rows(sequential)
    assert rows["dora"][1] > 0 and rows["dora"][3] == [rows["dora"][2]]  # late: scored zero
    assert rows["ada"][1] == 0 and rows["ada"][3] == [None]


def test_parallel_autograded_notebooks_equal_sequential(twins):
    sequential, parallel, _ = twins
    for student in ("ada", "blaise", "carl", "dora", "emmy"):
        rel = f"autograded/{student}/{ASSIGNMENT}/{NOTEBOOK}.ipynb"
        assert comparable(parallel.course.root / rel) == comparable(sequential.course.root / rel)


def test_the_formgraders_generate_feedback_logs_no_warning_or_error(twins):
    """Issue 53, item 6: Generate Feedback in the formgrader (nbgrader's API, its log as
    the page shows it) printed warnings an instructor reads as errors."""
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    _, parallel, _ = twins
    root = parallel.course.root
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    done = NbGraderAPI(config=config).generate_feedback(ASSIGNMENT, "ada", force=True)
    assert done["success"], done
    said = [line for line in done["log"].splitlines() if line.startswith("[")]
    assert said and not [line for line in said if not line.startswith("[INFO]")], done["log"]
    assert (root / "feedback" / "ada" / ASSIGNMENT / f"{NOTEBOOK}.html").is_file()


def test_the_table_reports_the_cut_off_and_exits_one(twins):
    _, _, proc = twins
    assert proc.returncode == 1
    assert "cut off in value_more_ops" in next(
        line for line in proc.stdout.splitlines() if line.startswith("emmy ")
    )


def test_a_rerun_grades_only_new_or_changed_submissions(twins):
    _, parallel, _ = twins
    before = parallel.scores()
    graded = parallel.course.root / "autograded"
    stamp = {s: (graded / s / ASSIGNMENT / f"{NOTEBOOK}.ipynb").stat().st_mtime_ns for s in before}
    fixed = parallel.answered(trim=True)  # carl fixes his bug
    parallel.submit("carl", fixed)
    proc = parallel.course_grade("--workers", "2")
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()[1:-1]}
    assert "kept" in lines["ada"] and "kept" not in lines["carl"]
    after = parallel.scores()
    assert after["carl"] == parallel.max_scores()
    for student in ("ada", "blaise", "dora"):
        assert after[student] == before[student]
        mtime = (graded / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb").stat().st_mtime_ns
        assert mtime == stamp[student], f"{student} was regraded"


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    pytest.importorskip("distributed")
    with tls_local_cluster(2, tmp_path_factory.mktemp("certs")) as scheduler:
        yield scheduler


def test_a_dask_cluster_grades_the_same(twins, dask_cluster, tmp_path):
    sequential, _, _ = twins
    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    submit_class(batch)
    proc = batch.course_grade(*dask_cluster.flags())
    assert proc.returncode == 1, proc.stdout + proc.stderr  # emmy is cut off
    assert batch.scores() == sequential.scores()


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--scheduler", "tcp://127.0.0.1:9"], "is not a TLS address"),
        (["--scheduler", "127.0.0.1:9"], "is not a TLS address"),
        (["--scheduler", "tls://127.0.0.1:9"], "needs the cluster's certificates"),
        (["--scheduler", "tls://127.0.0.1:9", "--tls", "nowhere"], "course cluster-certs"),
    ],
)
def test_a_scheduler_without_tls_is_refused(flags, said, tmp_path):
    """Round 4: a Dask scheduler over TCP runs any client's code on its workers, outside
    the sandbox; `course grade` grades nothing there, and says why."""
    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    batch.submit("ada", batch.release)
    proc = batch.course_grade(*flags)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert batch.scores() == {}


def test_a_lost_scheduler_grades_nothing_and_says_so(tmp_path):
    pytest.importorskip("distributed")
    from course.grader.cluster import Scheduler, make_certificates

    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    submit_class(batch)
    before = tree_digest(batch.course.root / "submitted")
    make_certificates(tmp_path / "certs")
    nowhere = Scheduler("tls://127.0.0.1:9", tmp_path / "certs")  # nothing listens there
    proc = batch.course_grade(*nowhere.flags())
    assert proc.returncode == 1
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("ada ", "carl "))]
    assert lines and all("NOT GRADED" in line and "cluster failed" in line for line in lines)
    assert batch.scores() == {}  # nothing half-written
    assert tree_digest(batch.course.root / "submitted") == before


def test_a_scheduler_lost_mid_run_loses_nothing(twins, tmp_path):
    """The scheduler is killed while its worker grades: whatever was graded is recorded
    right, everything else is reported as not graded, with the reason; nothing half."""
    pytest.importorskip("distributed")
    from course.authoring.bench import dask_cluster

    sequential, _, _ = twins
    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    submit_class(batch)
    with dask_cluster(1) as (found, scheduler):
        grading = subprocess.Popen(
            [sys.executable, "-m", "course.cli", "grade", ASSIGNMENT, *found.flags()],
            env=tool_env(COURSE_ROOT=str(batch.course.root)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        graded = batch.course.root / "autograded"
        for _ in range(1200):  # until the first submission is recorded
            if list(graded.glob(f"*/{ASSIGNMENT}/{NOTEBOOK}.ipynb")) or grading.poll() is not None:
                break
            time.sleep(0.1)
        scheduler.kill()
        out, _ = grading.communicate(timeout=600)
    assert grading.returncode == 1
    rows = {line.split()[0]: line for line in out.splitlines()[1:-1]}
    assert sorted(rows) == ["ada", "blaise", "carl", "dora", "emmy"]  # nobody dropped
    recorded = batch.scores()
    for student, line in rows.items():
        if "NOT GRADED" in line:
            assert any(
                w in line for w in ("scheduler was lost", "worker failed", "cluster failed")
            ), line
            assert student not in recorded
        else:
            assert recorded[student] == sequential.scores()[student]
    assert 1 <= len(recorded) < 5, out


def test_only_the_parent_writes_the_gradebook(twins):
    _, parallel, _ = twins
    # Workers grade in scratch folders of their own; the course's gradebook holds exactly
    # one submission per student, recorded by the parent.
    db = sqlite3.connect(parallel.course.root / "gradebook.db")
    rows = db.execute("select count(*) from submitted_assignment").fetchone()[0]
    assert rows == 5
    digests = json.loads(
        (parallel.course.root / ".nbgrader" / "graded" / f"{ASSIGNMENT}.json").read_text()
    )
    assert set(digests) == {"ada", "blaise", "carl", "dora", "emmy"}


@pytest.fixture
def postgres():
    """A real PostgreSQL server on loopback, for one test; its URL."""
    with postgres_server() as (url, _, _):
        yield url


def test_the_pipeline_runs_on_a_postgresql_gradebook(twins, postgres, tmp_path, monkeypatch):
    sequential, _, _ = twins
    monkeypatch.setenv("COURSE_DB_URL", postgres)  # read by nbgrader_config.py
    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    submit_class(batch)
    proc = batch.course_grade("--workers", "2")
    assert "5 graded" in proc.stdout or "4 graded" in proc.stdout, proc.stdout + proc.stderr
    assert batch.scores() == sequential.scores()
    assert not (batch.course.root / "gradebook.db").exists()


def test_a_recording_that_fails_half_way_leaves_no_trace(twins, tmp_path, monkeypatch):
    from course.grader.parallel import load_config
    from course.grader.recording import Recorder

    _, parallel, _ = twins
    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    batch.submit("ada", batch.answered(trim=True))
    graded = parallel.course.root / "autograded" / "ada" / ASSIGNMENT
    # What a worker returns: the graded notebooks.
    files = {p.name: (p.read_bytes(), 0o444) for p in graded.glob("*.ipynb")}
    monkeypatch.setenv("COURSE_ROOT", str(batch.course.root))
    with Recorder(batch.course.root, ASSIGNMENT, load_config(batch.course.root)) as recorder:
        real, calls = recorder.save._add_score, []

        def fails_on_the_third_cell(cell, resources):
            calls.append(cell)
            if len(calls) == 3:
                raise OSError("the disk is full")
            return real(cell, resources)

        monkeypatch.setattr(recorder.save, "_add_score", fails_on_the_third_cell)
        with pytest.raises(OSError):
            recorder.record("ada", files)
        assert len(calls) == 3
    assert batch.scores() == {}  # not two cells of three: nothing
    db = sqlite3.connect(batch.course.root / "gradebook.db")
    assert db.execute("select count(*) from submitted_assignment").fetchone()[0] == 0
    assert not list((batch.course.root / "autograded").rglob("*.ipynb"))


def kills_its_worker_for_victim(job, course):
    """A stand-in for grading: the victim's worker process is killed mid-grade."""
    if job["student"] == "victim":
        os.kill(os.getpid(), signal.SIGKILL)
    return {"student": job["student"], "files": {}, "log": ""}


def test_a_killed_worker_loses_no_submission(tmp_path):
    from course.grader.parallel import run_local

    students = ["a", "b", "victim", "c", "d", "e"]
    jobs = [{"student": s} for s in students]
    runs = run_local(jobs, {}, 2, tmp_path / "log", task=kills_its_worker_for_victim)
    results = [(job["student"], result) for job, result in runs]
    assert sorted(s for s, _ in results) == sorted(students)  # each exactly once
    outcome = dict(results)
    assert all("error" not in outcome[s] for s in students if s != "victim")
    assert "its worker process died, twice" in outcome["victim"]["error"]


def reports_its_checks(job, course):
    """A stand-in for grading that starts two hidden checks, as GuardedExecute reports them."""
    from course.grader.nbgrader_ext import ON_CHECK

    for rank, check in enumerate(("value_ops", "backward"), 1):
        for report in ON_CHECK:
            report("backprop", check, rank, 2)
        time.sleep(2.5 if rank == 1 else 0)  # over two polls of the parent's watch
    return {"student": job["student"], "files": {}, "log": ""}


def test_local_workers_say_which_check_they_are_at(tmp_path):
    from course.grader.parallel import run_local

    seen = []
    runs = run_local(
        [{"student": "ada"}],
        {},
        1,
        tmp_path / "log",
        task=reports_its_checks,
        on_progress=seen.append,
    )
    assert [job["student"] for job, _ in runs] == ["ada"]
    assert {"ada": "backprop.ipynb: value_ops (check 1 of 2)"} in seen


@pytest.mark.parametrize("terminal", [True, False])
def test_course_grade_shows_progress_on_a_terminal_only(tmp_path, monkeypatch, terminal):
    """Which submission, which check, how many graded, the time so far: on a terminal only
    (issue 33, item 8); a log or a pipe gets the table alone."""
    import contextlib
    import io

    from course.grader import autograde, parallel, recording

    class Stderr(io.StringIO):
        def isatty(self):
            return terminal

    def grade_all(root, assignment, students, *args, on_progress):
        on_progress({"ada": "backprop.ipynb: value_ops (check 1 of 9)", "bob": ""})
        yield {"student": "ada"}, {"student": "ada", "files": {}, "log": ""}
        on_progress({"ada": "backprop.ipynb: value_ops (check 1 of 9)", "bob": ""})
        yield {"student": "bob"}, {"student": "bob", "files": {}, "log": ""}

    monkeypatch.setattr(parallel, "grade_all", grade_all)
    monkeypatch.setattr(parallel, "load_config", lambda root: {})
    monkeypatch.setattr(recording, "Recorder", lambda *a: contextlib.nullcontext())
    monkeypatch.setattr(sys, "stderr", Stderr())
    # A wide terminal: the whole line fits (a terminal of no size is 88 columns, where the
    # bar cuts this line off: course/terminal.py).
    monkeypatch.setenv("COLUMNS", "200")
    statuses = {s: autograde.Status(s) for s in ("ada", "bob")}
    autograde.grade_and_record(tmp_path, "01_backprop", ["ada", "bob"], statuses, 2, None, True)
    shown = sys.stderr.getvalue()
    if not terminal:
        assert shown == ""
        return
    assert "grading 01_backprop: 0/2 graded [00:00<?], ada: backprop.ipynb: value_ops" in shown
    assert "(check 1 of 9); bob: starting" in shown
    last = shown.split("\r")[-1]
    assert last.startswith("grading 01_backprop: 2/2 graded [")
    assert "bob: starting" in last and "ada:" not in last  # graded: no longer at a check


def test_the_in_process_schema_version_is_what_alembic_heads_says():
    from nbgrader.dbutil import _temp_alembic_ini

    from course.grader.nbgrader_internals import alembic_head
    from course.paths import tool_env

    # What nbgrader.api.get_alembic_version runs (workers replace it with alembic_head).
    with _temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        heads = subprocess.check_output(["alembic", "-c", ini, "heads"], env=tool_env(), text=True)
    assert alembic_head() == heads.split()[0]
