"""Grade a class fast: execute submissions on many workers, record them with one writer.

nbgrader grades one submission after another, and the notebooks' execution is nearly all
of the cost. So `course grade --workers N` (or `--scheduler tcp://host:8786` for a Dask
cluster) splits the work in two:

1. **Execute, in parallel.** Submissions go to workers in chunks. A chunk is
   self-contained (the course's files for the assignment plus the chunk's submissions, as
   bytes, with a gradebook that knows only the assignment), so a worker needs the
   `course` package installed (with nbgrader and bubblewrap) but not the course
   directory. The worker runs the real `nbgrader autograde` in a scratch folder, kernels
   sandboxed, verdicts decided by `JudgeHiddenChecks` in the worker's own process (never
   in a student kernel), and returns the graded notebooks.
2. **Record, once.** The parent runs one `nbgrader autograde` over those submissions with
   `GuardedExecute.replay_from` set: every step of the usual pipeline runs (overwriting
   test cells, saving grades, late penalties), except that each cell's outputs are taken
   from the worker's copy instead of executing and judging again. So the scores and
   autograded notebooks are those of a sequential run, and only this one process writes
   the gradebook.

A chunk that fails (a worker killed, the scheduler lost) leaves its submissions reported
as not graded, with the reason; nothing of it reaches the gradebook.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from course.build import nbgrader
from course.paths import tool_env

CHUNK_LIMIT = 10  # submissions per chunk at most
PASSED_ENV = ("COURSE_CELL_TIMEOUT",)


def course_files(root: Path, assignment: str) -> dict[str, bytes]:
    """What a worker needs of the course directory to grade `assignment`."""
    files = {"nbgrader_config.py": (root / "nbgrader_config.py").read_bytes()}
    for top in ("source", "release", "references"):
        folder = root / top / assignment
        for path in sorted(folder.rglob("*")) if folder.exists() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


def submission_files(root: Path, assignment: str, student: str) -> dict[str, bytes]:
    folder = root / "submitted" / student / assignment
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def template_gradebook(files: dict[str, bytes], assignment: str) -> bytes:
    """A gradebook that knows the assignment and its grade cells, and no student: made once
    per run, so that workers need not run `nbgrader generate_assignment` for each chunk."""
    with tempfile.TemporaryDirectory(prefix="course-template-") as scratch:
        root = Path(scratch)
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        private_db = f"sqlite:///{root / 'gradebook.db'}?timeout=30"
        env = tool_env(COURSE_ROOT=str(root), COURSE_DB_URL=private_db)
        nbgrader(root, "generate_assignment", assignment, "--force", env=env)
        return (root / "gradebook.db").read_bytes()


def make_payload(
    root: Path,
    assignment: str,
    students: list[str],
    sandboxed: bool,
    course: dict[str, bytes],
    gradebook: bytes,
) -> dict:
    return {
        "assignment": assignment,
        "course": course,
        "gradebook": gradebook,
        "submissions": {s: submission_files(root, assignment, s) for s in students},
        "sandboxed": sandboxed,
        "env": {k: os.environ[k] for k in PASSED_ENV if k in os.environ},
    }


def execute(payload: dict) -> dict:
    """On a worker: execute a chunk of submissions; return their executed notebooks.

    Returns {"executed": {student: {notebook file: bytes}}, "failed": {student: reason}}.
    """
    assignment = payload["assignment"]
    with tempfile.TemporaryDirectory(prefix="course-worker-") as scratch:
        root = Path(scratch)
        for rel, data in payload["course"].items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        for student, files in payload["submissions"].items():
            for rel, data in files.items():
                path = root / "submitted" / student / assignment / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        # A private gradebook: the course's own is written by the parent alone.
        private_db = f"sqlite:///{root / 'gradebook.db'}?timeout=30"
        env = tool_env(COURSE_ROOT=str(root), COURSE_DB_URL=private_db, **payload["env"])
        (root / "gradebook.db").write_bytes(payload["gradebook"])  # the assignment, no one else
        sandbox = f"--GuardedExecute.sandbox={payload['sandboxed']}"
        proc = nbgrader(root, "autograde", assignment, "--force", sandbox, env=env, check=False)
        executed, failed = {}, {}
        for student in payload["submissions"]:
            out = root / "autograded" / student / assignment
            if out.is_dir():
                executed[student] = {p.name: p.read_bytes() for p in sorted(out.glob("*.ipynb"))}
            else:
                failed[student] = "the worker could not grade it: " + last_error(proc.stderr)
        return {"executed": executed, "failed": failed}


def last_error(log: str) -> str:
    errors = [line.strip() for line in log.splitlines() if "ERROR" in line]
    return errors[-1][:300] if errors else "no reason in nbgrader's log"


def chunks(students: list[str], workers: int) -> list[list[str]]:
    """Chunks of at most CHUNK_LIMIT submissions, as many for each worker: balanced, and a
    lost worker loses little. Each chunk costs one nbgrader start-up on its worker."""
    if not students:
        return []
    rounds = math.ceil(len(students) / (workers * CHUNK_LIMIT))
    count = min(len(students), workers * rounds)
    return [c for c in (students[i::count] for i in range(count)) if c]


def run_local(payloads: list[dict], workers: int) -> Iterator[tuple[int, dict | Exception]]:
    """Execute payloads with `workers` at a time on this machine (each is a subprocess)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(execute, p): i for i, p in enumerate(payloads)}
        for future in concurrent.futures.as_completed(futures):
            try:
                yield futures[future], future.result()
            except Exception as exc:  # noqa: BLE001 (reported per submission)
                yield futures[future], exc


def run_dask(payloads: list[dict], scheduler: str) -> Iterator[tuple[int, dict | Exception]]:
    """Execute payloads on the workers of the Dask scheduler at `scheduler`."""
    from distributed import Client, as_completed

    with Client(scheduler, timeout="20s") as client:
        futures = client.map(execute, payloads, pure=False, retries=0)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in as_completed(futures):
            try:
                yield index[future.key], future.result()
            except Exception as exc:  # noqa: BLE001 (a killed worker, a lost connection)
                yield index[future.key], exc


def execute_all(
    root: Path,
    assignment: str,
    students: list[str],
    workers: int,
    scheduler: str | None,
    sandboxed: bool,
    progress: Callable[[int], None] = lambda n: None,
) -> tuple[Path, dict[str, str]]:
    """Execute submissions in parallel into the replay cache; return it and the failures."""
    cache = root / ".nbgrader" / "executed" / assignment
    for student in students:
        shutil.rmtree(cache / student, ignore_errors=True)
    groups = chunks(students, workers)
    course = course_files(root, assignment)
    gradebook = template_gradebook(course, assignment)
    payloads = [make_payload(root, assignment, g, sandboxed, course, gradebook) for g in groups]
    runs = run_dask(payloads, scheduler) if scheduler else run_local(payloads, workers)
    failed: dict[str, str] = {}
    try:
        for index, result in runs:
            if isinstance(result, Exception):
                reason = f"its worker failed ({type(result).__name__}: {str(result)[:200]})"
                failed.update(dict.fromkeys(groups[index], reason))
            else:
                failed.update(result["failed"])
                for student, notebooks in result["executed"].items():
                    (cache / student).mkdir(parents=True, exist_ok=True)
                    for name, data in notebooks.items():
                        (cache / student / name).write_bytes(data)
            progress(len(groups[index]))
    except Exception as exc:  # noqa: BLE001 (the scheduler itself went away)
        reason = f"the cluster failed ({type(exc).__name__}: {str(exc)[:200]})"
        for student in students:
            if not (cache / student).exists():
                failed.setdefault(student, reason)
    return cache, failed
