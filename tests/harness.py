"""Grading submissions for real, in a scratch copy of the course, from tests."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from course.authoring.classroom import carried_modules, fill, mutate, solution_sources
from course.grader.scratch import ScratchCourse
from course.paths import tool_env

# A folder that every xdist worker of this test session shares (set by tests/conftest.py);
# None outside pytest, where each scratch course is built from scratch.
SESSION_FOLDER: Path | None = None


def registered_course(root: Path, *assignments: str) -> ScratchCourse:
    """A ScratchCourse at `root` whose gradebook holds `assignments` (as `register` leaves it).

    `nbgrader generate_assignment` takes about 7 s; it runs once per test session for each
    set of assignments, into a template under SESSION_FOLDER that no test touches, and each
    test gets its own copy (milliseconds), free to write into. Built from scratch where a
    template cannot stand in: a PostgreSQL gradebook ($COURSE_DB_URL), or a `root` that
    already holds files.
    """
    root = Path(root)
    if (
        SESSION_FOLDER is None
        or "COURSE_DB_URL" in os.environ
        or (root.exists() and any(root.iterdir()))
    ):
        course = ScratchCourse(root)
        for assignment in assignments:
            course.register(assignment)
        return course
    template = _template(assignments)
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(template / "gradebook.db", root / "gradebook.db")
    return ScratchCourse(root, origin=template)  # copies the rest of the course


def _template(assignments: tuple[str, ...]) -> Path:
    """The session's registered course for `assignments`, built by whichever worker asks
    first while the others wait on a file lock; kept for the session, read only by copies."""
    from course.paths import course_root

    origin = course_root()
    key = hashlib.sha256(f"{origin}\0{assignments}".encode()).hexdigest()[:12]
    folder = SESSION_FOLDER / "registered-courses"
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / f"{'+'.join(assignments)}-{key}"
    with open(folder / f"{done.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            building = folder / f"{done.name}.building"
            shutil.rmtree(building, ignore_errors=True)
            course = ScratchCourse(building, origin)
            for assignment in assignments:
                course.register(assignment)
            building.rename(done)  # whole or not at all: a crash leaves only .building
    return done


class Batch:
    """One scratch course, one assignment: build submissions, grade them in one nbgrader run."""

    def __init__(self, root: Path, assignment: str, notebook: str):
        self.course = registered_course(root, assignment)
        self.assignment, self.notebook = assignment, notebook
        self.release = self.course.release_notebook(assignment, notebook)
        self.solutions = solution_sources(self.course.source_notebook(assignment, notebook))
        self.filename = f"{notebook}.ipynb"

    def answered(self, answers: dict[str, str] | None = None, trim: bool = False):
        """The release with every solution cell answered by the reference, then `answers`."""
        return fill(self.release, {**self.solutions, **(answers or {})}, trim=trim)

    def mutant(self, cell: str, edits, code: str | None = None, trim: bool = True):
        code = code if code is not None else self.solutions[cell]
        for old, new in edits:
            code = mutate(code, old, new)
        return self.answered({cell: code}, trim=trim)

    def submit(self, student: str, nb_or_files) -> Path:
        """A notebook is submitted with the earlier code it carries (course.carry), as a
        learner who solved those assignments would; a dict of files is submitted as is."""
        if isinstance(nb_or_files, nbformat.NotebookNode):
            carried = carried_modules(self.course.root, self.assignment)
            nb_or_files = {self.filename: nb_or_files, **carried}
        return self.course.submit(student, self.assignment, nb_or_files)

    def grade(self, cell_timeout: int | None = None):
        """Autograde everything submitted; return the nbgrader process."""
        if cell_timeout is not None:
            os.environ["COURSE_CELL_TIMEOUT"] = str(cell_timeout)
        try:
            return self.course.autograde(self.assignment)
        finally:
            os.environ.pop("COURSE_CELL_TIMEOUT", None)

    def course_grade(self, *flags: str, cell_timeout: int | None = None, env: dict | None = None):
        """Run `course grade` on this batch as an instructor would; the finished process."""
        extra = {"COURSE_CELL_TIMEOUT": str(cell_timeout)} if cell_timeout else {}
        env = env or tool_env(COURSE_ROOT=str(self.course.root), **extra)
        return subprocess.run(
            [sys.executable, "-m", "course.cli", "grade", self.assignment, *flags],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )

    def scores(self) -> dict[str, dict[str, float]]:
        """{student: {grade id: score}}."""
        return {
            student: {g.grade_id: g.score for g in grades}
            for student, grades in self.course.grades(self.assignment, self.notebook).items()
        }

    def max_scores(self) -> dict[str, float]:
        nb = self.course.source_notebook(self.assignment, self.notebook)
        return {
            c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
            for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade")
        }


def tree_digest(folder: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under folder."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def read_nb(path: Path):
    return nbformat.read(path, as_version=4)


@contextlib.contextmanager
def tls_local_cluster(workers: int, certs: Path):
    """A Dask LocalCluster over mutual TLS (the certificates made in `certs`); yields the
    Scheduler to pass to `course grade` (Scheduler.flags())."""
    import distributed

    from course.grader import cluster

    cluster.make_certificates(certs)
    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        protocol="tls",
        security=cluster.security(certs),
    ) as local:
        yield cluster.Scheduler(local.scheduler_address, certs)


@contextlib.contextmanager
def postgres_server(sockets_under: str | None = None):
    """A real PostgreSQL server on loopback, in a folder of its own: (URL, socket folder, port).

    Its Unix socket goes into a folder under `sockets_under` (say /run, where a packaged
    server puts /run/postgresql), or beside its data. Skips the test where Debian's
    postgresql (its binaries and its user) is missing or we are not root.
    """
    import pytest

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        bins = []  # the server's binaries without its user: not a usable install
    if not bins or os.geteuid() != 0 or not shutil.which("runuser"):
        pytest.skip("PostgreSQL's server (Debian: postgresql) is not installed")
    pytest.importorskip("psycopg")
    # Outside pytest's tmp_path, whose parents only root may enter.
    home = Path(tempfile.mkdtemp(prefix="everything-leaks-pg-", dir="/var/tmp"))
    sockets = (
        Path(tempfile.mkdtemp(prefix="everything-leaks-pg-", dir=sockets_under))
        if sockets_under
        else home / "sockets"
    )
    data, logs = home / "data", home / "logs"
    os.chmod(home, 0o755)
    for folder in (data, logs, sockets):
        folder.mkdir(exist_ok=True)
        os.chmod(folder, 0o755)
        shutil.chown(folder, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def as_postgres(*cmd):
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *cmd], capture_output=True, text=True
        )

    as_postgres(f"{bins[-1]}/initdb", "-D", str(data), "-A", "trust", "-U", "grader")
    log = str(logs / "server.log")
    options = f"-h 127.0.0.1 -p {port} -k {sockets}"
    started = as_postgres(
        f"{bins[-1]}/pg_ctl", "-D", str(data), "-w", "-l", log, "-o", options, "start"
    )
    assert started.returncode == 0, started.stderr
    try:
        yield f"postgresql+psycopg://grader@127.0.0.1:{port}/postgres", sockets, port
    finally:
        as_postgres(f"{bins[-1]}/pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(sockets, ignore_errors=True)


def released_points(assignment: str, notebook: str) -> float:
    """A released notebook's total points (what full marks are)."""
    from course.paths import course_root

    nb = nbformat.read(course_root() / "release" / assignment / f"{notebook}.ipynb", as_version=4)
    return sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells)
