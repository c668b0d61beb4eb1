"""Grade a class fast: grade submissions on many workers, record them with one writer.

nbgrader grades one submission after another, in one process. `course grade` splits the
work in two:

1. **Grade, in parallel.** Each submission is a task for a worker: a process of this
   machine (`--workers N`) or of a Dask cluster (`--scheduler tls://host:8786`). The worker
   runs nbgrader's own `Autograde` converter, in its own process (no interpreter start per
   submission), in a scratch copy of the assignment with a private gradebook: kernels
   sandboxed, verdicts decided by `JudgeHiddenChecks` in the worker (never in a student
   kernel). It returns the autograded folder, as bytes. A worker needs the `course`
   package installed (with nbgrader and bubblewrap) but not the course directory: each
   task carries the assignment's files and one submission.
2. **Record, once.** Only the parent process writes: it installs each autograded folder
   and records its grades with nbgrader's own `SaveAutoGrades` and late-penalty logic
   (course.grader.recording), one transaction per submission.

A task that fails (its worker killed, the scheduler lost, nbgrader raising) leaves its
submission reported as not graded, with the reason; nothing of it reaches the gradebook.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import hashlib
import logging
import multiprocessing
import os
import shutil
import stat
import tempfile
import threading
import traceback
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from course.grader.cluster import Scheduler
from course.grader.files import folder_files, read_regular

PASSED_ENV = ("COURSE_CELL_TIMEOUT", "COURSE_SUBMISSION_TIMEOUT")
MAX_NOTEBOOK_BYTES = 32 * 2**20  # what a graded notebook read back may weigh


# ---------------------------------------------------------------- what a task carries


def course_files(root: Path, assignment: str) -> dict[str, bytes]:
    """What a worker needs of the course directory to grade `assignment` (its release is
    made there, by GenerateAssignment), and the committed references of the earlier
    checks whose code the checks run through (an earlier assignment's, carried, or an
    earlier exercise of the same notebook: they only explain a failure, course.carry, and
    award nothing)."""
    from course.checks import checks_by_name

    files = {"nbgrader_config.py": (root / "nbgrader_config.py").read_bytes()}
    checks = checks_by_name()
    earlier = {
        checks[name].notebook.partition("/")[0]
        for chk in checks.values()
        if chk.notebook.startswith(f"{assignment}/")
        for name in chk.builds_on
    }
    # Its own assignment's too when a check runs through an earlier exercise of the same
    # notebook: the grader names a failing one from those committed (public) references.
    folders = [f"source/{assignment}"] + [f"references/{a}" for a in sorted(earlier)]
    for folder in (root / f for f in folders):
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def submission_files(root: Path, assignment: str, student: str) -> dict[str, bytes]:
    """A submission's regular files (links and special files are left out: the preflight
    reports them), at most MAX_SUBMISSION_BYTES in all."""
    return folder_files(root / "submitted" / student / assignment)


def make_job(
    root: Path,
    assignment: str,
    student: str,
    sandboxed: bool,
    public: bool,
    files: dict[str, bytes] | None = None,
) -> dict:
    """One submission's task: its files (or `files` in their place: a stand-in,
    course.grader.autograde.stand_in), and its seeds and references, computed here from
    the course's secret and the files' digest (course.grader.inputs): a worker never holds
    the secret."""
    from course.grader import inputs

    files = submission_files(root, assignment, student) if files is None else files
    salt = inputs.submission_salt(files)
    return {
        "assignment": assignment,
        "student": student,
        "files": files,
        "inputs": inputs.for_run(root, assignment, public, salt).to_json(),
        "sandboxed": sandboxed,
        "env": {k: os.environ[k] for k in PASSED_ENV if k in os.environ},
    }


# ---------------------------------------------------------------- on a worker

# One submission at a time per process: the course's nbgrader_config.py and the sandbox
# read the process's environment (COURSE_ROOT), so a Dask worker runs one task at a time.
_GRADING = threading.Lock()
_PREPARED: dict[str, Path] = {}
_SCRATCH: str | None = None  # where local workers prepare courses: removed by the parent


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def load_config(root: Path):
    """The course's nbgrader configuration, as `nbgrader` itself would load it at `root`.

    The file may set environment variables for the processes nbgrader starts ($COURSE_ROOT):
    here they are undone, so loading one course's settings changes nothing else in this
    process (a test process, or a grader that loads several courses).
    """
    from traitlets.config.loader import PyFileConfigLoader

    before = dict(os.environ)
    try:
        return PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    finally:
        os.environ.clear()
        os.environ.update(before)


def _prepared_course(course: dict[str, bytes], assignment: str) -> Path:
    """A scratch copy of the assignment, with a private gradebook that knows it (made by
    nbgrader's own GenerateAssignment): once per worker process and course version."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    from course.grader.nbgrader_internals import skip_the_alembic_subprocess

    digest = hashlib.sha256()
    for rel in sorted(course):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(course[rel]).digest())
    key = f"{assignment}-{digest.hexdigest()[:16]}"
    if key in _PREPARED:
        return _PREPARED[key]
    # Under the temporary folder, which the sandbox hides from every kernel.
    root = Path(tempfile.mkdtemp(prefix="course-worker-", dir=_SCRATCH))
    atexit.register(shutil.rmtree, root, ignore_errors=True)  # where a process ends normally
    skip_the_alembic_subprocess()
    _write_tree(root, course)
    warm_up()  # done already where this process was forked from the parent
    config = _worker_config(root)
    coursedir = CourseDirectory(config=config, assignment_id=assignment)
    generate = GenerateAssignment(coursedir=coursedir, config=config)
    generate.force = True
    made = capture_log(generate)
    if not made["success"]:
        raise RuntimeError(f"nbgrader generate_assignment failed: {_reason(made)}")
    _PREPARED[key] = root
    return root


def _worker_config(root: Path):
    from course.grader.inputs import SHIPPED
    from course.paths import tool_env

    # Kernels inherit this process's environment: they see the private gradebook's address,
    # never the course's (which may carry a PostgreSQL password).
    os.environ["COURSE_DB_URL"] = f"sqlite:///{root / 'gradebook.db'}?timeout=30"
    os.environ["PATH"] = tool_env()["PATH"]  # nbgrader runs `alembic` by name
    config = load_config(root)
    config.SeedHiddenChecks.shipped = str(root / SHIPPED)  # the parent's seeds and references
    return config


def grade_submission(job: dict, course: dict[str, bytes]) -> dict:
    """On a worker: autograde one submission; return its graded notebooks.

    Returns {"student", "files": {name: (bytes, mode)}, "interruptions" (what stopped cells,
    nbgrader_ext.INTERRUPTIONS), "log"}; {"student", "error", "log"}
    when nbgrader could not grade it; {"student", "fault", "log"} when the grader itself
    failed (course.grader.nbgrader_ext.GraderFault: the run must stop).
    """
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades
    from nbgrader.utils import capture_log
    from sqlalchemy.exc import SAWarning

    from course.grader.inputs import SHIPPED
    from course.grader.nbgrader_ext import FAULTS, INTERRUPTIONS

    assignment, student = job["assignment"], job["student"]
    with _GRADING, warnings.catch_warnings():
        # nbgrader's add_submission links rows before adding them to its session, which
        # SQLAlchemy 2 warns about, harmlessly, for every submission.
        warnings.filterwarnings("ignore", "Object of type", category=SAWarning)
        for name in PASSED_ENV:  # as the parent has them, for this submission
            os.environ.pop(name, None)
        os.environ.update(job["env"])
        root = _prepared_course(course, assignment)
        FAULTS.clear()
        INTERRUPTIONS.clear()
        submitted = root / "submitted" / student
        autograded = root / "autograded" / student
        try:
            _write_tree(submitted / assignment, job["files"])
            _write_tree(root, {SHIPPED: job["inputs"].encode()})  # its seeds and references
            config = _worker_config(root)
            config.GuardedExecute.sandbox = job["sandboxed"]
            # Grades are recorded by the parent, in the course's gradebook; the private one
            # needs none. Neither step changes the notebook.
            config.Autograde.autograde_preprocessors = [
                p
                for p in config.Autograde.autograde_preprocessors
                if p not in (SaveAutoGrades, AssignLatePenalties)
            ]
            coursedir = CourseDirectory(config=config, assignment_id=assignment, student_id=student)
            app = Autograde(coursedir=coursedir, config=config)
            app.force = True
            ran = capture_log(app)
            out = autograded / assignment
            if FAULTS:
                return {"student": student, "fault": FAULTS[0], "log": ran.get("log", "")}
            if not ran["success"] or not out.is_dir():
                reason = f"nbgrader could not grade it: {_reason(ran)}"
                return {"student": student, "error": reason, "log": ran.get("log", "")}
            # Only the graded notebooks come back (nothing else the student made reaches
            # autograded/ or feedback/), read without following links, capped.
            files = {
                p.name: (read_regular(p, MAX_NOTEBOOK_BYTES), 0o444)
                for p in sorted(out.iterdir())
                if p.suffix == ".ipynb" and stat.S_ISREG(p.lstat().st_mode)
            }
            return {
                "student": student,
                "files": files,
                "interruptions": list(INTERRUPTIONS),
                "log": ran.get("log", ""),
            }
        finally:
            shutil.rmtree(submitted, ignore_errors=True)
            shutil.rmtree(autograded, ignore_errors=True)


def _reason(ran: dict) -> str:
    """One line: what nbgrader said went wrong (its first error, or its exception)."""
    lines = [line.strip() for line in ran.get("log", "").splitlines() if "[ERROR]" in line]
    if lines:  # the first says what went wrong; the last ones, where to look
        return lines[0].removeprefix("[ERROR]").strip()[:300]
    error = (ran.get("error") or "no reason given").strip().splitlines()
    return error[-1][:300]


def guarded(job: dict, course: dict[str, bytes]) -> dict:
    """grade_submission, with any exception turned into a reason (it pickles, always)."""
    try:
        return grade_submission(job, course)
    except Exception as exc:  # noqa: BLE001 (reported for this submission)
        detail = traceback.format_exception_only(exc)[-1].strip()
        return {"student": job["student"], "error": f"its worker failed: {detail[:300]}"}


# ---------------------------------------------------------------- where the workers are


def start_worker(log: Path, scratch: str) -> None:
    """In a local worker process: prepare courses under `scratch`; what kernels print on
    their own (start-up notes, crashes) goes to `log`, not over the progress bar."""
    global _SCRATCH
    _SCRATCH = scratch
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def start(task, job: dict, course: dict[str, bytes]) -> dict:
    """In a local worker: say which submission this process has started, then grade it,
    writing into that same file which hidden check it is at (read by `watch`)."""
    from course.grader.nbgrader_ext import ON_CHECK

    marker = Path(_SCRATCH) / "started" / job["student"]
    marker.touch()

    def at_check(notebook: str, grade_id: str, rank: int, total: int) -> None:
        marker.write_text(f"{notebook}.ipynb: {grade_id} (check {rank} of {total})")

    ON_CHECK[:] = [at_check]
    try:
        return task(job, course)
    finally:
        ON_CHECK.clear()


def watch(started: Path, on_progress, stop: threading.Event, every: float = 1.0) -> None:
    """Call on_progress({student: which check it is at}) every `every` seconds until stop."""
    while not stop.wait(every):
        now = {}
        for marker in sorted(started.iterdir()):
            with contextlib.suppress(OSError):
                now[marker.name] = marker.read_text()
        on_progress(now)


def run_local(
    jobs: Iterable[dict],
    course: dict[str, bytes],
    workers: int,
    log: Path,
    task=guarded,
    on_progress=None,
) -> Iterator[tuple[dict, dict]]:
    """Grade jobs in `workers` processes of this machine; yield (job, result) as each ends.
    Jobs are taken as they come: workers grade the first while the next are made.
    on_progress: called about every second with {student: the check it is at} (`watch`).

    Workers are forked from this process, so they start with its imports done (nbgrader
    takes seconds to import). A worker that dies (killed, out of memory) breaks the pool:
    the submissions no worker had started go to a new pool as they are; one that was
    being graded when a pool broke is tried again, and reported after a second break.
    """
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    strikes: dict[str, int] = {}
    with (
        tempfile.TemporaryDirectory(prefix="course-grade-") as scratch,
        _watching(Path(scratch) / "started", on_progress),
    ):
        started = Path(scratch) / "started"
        pending: Iterable[dict] = jobs
        while pending:
            broken, why = [], None
            with concurrent.futures.ProcessPoolExecutor(
                workers if not isinstance(pending, list) else min(workers, len(pending)),
                mp_context=context,
                initializer=start_worker,
                initargs=(log, scratch),
            ) as pool:
                futures = {}
                for job in pending:
                    futures[pool.submit(start, task, job, course)] = job
                for future in concurrent.futures.as_completed(futures):
                    job = futures[future]
                    try:
                        yield job, future.result()
                    except BrokenProcessPool as exc:
                        broken.append(job)
                        why = exc
                    except Exception as exc:  # noqa: BLE001 (its result would not unpickle)
                        yield job, lost(job, exc)
            running = [job for job in broken if (started / job["student"]).exists()]
            for job in running or broken:  # nothing started: the pool itself is at fault
                strikes[job["student"]] = strikes.get(job["student"], 0) + 1
            pending = []
            for job in broken:
                (started / job["student"]).unlink(missing_ok=True)
                if strikes.get(job["student"], 0) >= 2:
                    yield job, lost(job, why, "its worker process died, twice")
                else:
                    pending.append(job)


@contextlib.contextmanager
def _watching(started: Path, on_progress):
    started.mkdir()
    stop = threading.Event()
    watcher = threading.Thread(target=watch, args=(started, on_progress, stop), daemon=True)
    if on_progress:
        watcher.start()
    try:
        yield
    finally:
        stop.set()
        if on_progress:
            watcher.join()


def run_dask(
    students: list[str], jobs: Iterable[dict], course: dict[str, bytes], scheduler: Scheduler
) -> Iterator[tuple[dict, dict]]:
    """Grade jobs (those of `students`, made as they are taken) on the workers of a Dask
    scheduler (over TLS: course.grader.cluster)."""
    from distributed import as_completed

    # The client logs its reconnection attempts as tracebacks; the table says what was lost.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    try:
        client = scheduler.client()
    except Exception as exc:  # noqa: BLE001 (nothing listens there)
        # Said at once: no job is made (each computes its submission's references).
        for student in students:
            job = {"student": student}
            yield job, lost(job, exc, "the cluster failed")
        return
    with client:
        shared = client.scatter(course, broadcast=True)  # sent once to each worker
        futures, unreported = [], {}
        for job in jobs:  # submitted as each is made
            futures.append(client.submit(guarded, job, shared, pure=False, retries=0))
            unreported[futures[-1].key] = job
        try:
            for future in as_completed(futures):
                job = unreported.pop(future.key)
                try:
                    yield job, future.result()
                except Exception as exc:  # noqa: BLE001 (a killed worker)
                    yield job, lost(job, exc)
        except Exception as exc:  # noqa: BLE001 (the scheduler went away)
            for job in unreported.values():
                yield job, lost(job, exc, "the cluster failed")


def lost(job: dict, exc: BaseException, what: str = "its worker failed") -> dict:
    """A not-graded result for `job`, with a one-line reason."""
    detail = (str(exc).strip().splitlines() or [""])[0][:200]
    if "scheduler-connection-lost" in detail:  # Dask cancels what was still to come
        what, detail = "the connection to the scheduler was lost", ""
    reason = f"{what} ({type(exc).__name__}: {detail})" if detail else what
    result = {"student": job["student"], "error": reason}
    if what.startswith(("the cluster", "the connection")):
        result["cluster"] = True  # not the submission's doing: no stand-in is graded for it
    return result


def warm_up() -> None:
    """Import and load what grading needs once, here: forked workers start with it."""
    import nbgrader.converters  # noqa: F401
    import nbgrader.preprocessors  # noqa: F401

    import course.grader.nbgrader_ext  # noqa: F401
    from course.checks import checks_by_name
    from course.grader import figures

    checks_by_name()  # every assignment's checks
    figures.warm_up()  # matplotlib's fonts


def grade_all(
    root: Path,
    assignment: str,
    students: list[str],
    workers: int,
    scheduler: Scheduler | None,
    sandboxed: bool,
    stand_ins: dict[str, dict[str, bytes]] | None = None,
    on_progress=None,
) -> Iterator[tuple[dict, dict]]:
    """Grade `students`' submissions (or their `stand_ins`) on local workers or a Dask
    cluster; yield (job, result) in the order they finish. Reads the course directory;
    writes nothing. on_progress: as for run_local (local workers only)."""
    course = course_files(root, assignment)
    public = bool(load_config(root).SeedHiddenChecks.get("public", False))
    # Made one by one (each computes its submission's references) while workers grade.
    jobs = (
        make_job(root, assignment, s, sandboxed, public, (stand_ins or {}).get(s)) for s in students
    )
    if scheduler:
        return run_dask(students, jobs, course, scheduler)  # Dask workers warm up on their own
    warm_up()
    log = root / ".nbgrader" / "logs" / f"workers-{assignment}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    workers = max(1, min(workers, len(students)))
    return run_local(jobs, course, workers, log, on_progress=on_progress)
