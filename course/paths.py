"""Where the course directory is: the folder holding nbgrader_config.py."""

import os
from pathlib import Path


def course_root() -> Path:
    """The course directory: $COURSE_ROOT if set, else the checkout this package lives in."""
    if "COURSE_ROOT" in os.environ:
        return Path(os.environ["COURSE_ROOT"]).resolve()
    return Path(__file__).resolve().parent.parent


def is_course_directory(root: Path) -> bool:
    """Whether `root` holds a course (its nbgrader_config.py). On a class's hub, a student's
    `course` is an installed package with no course beside it: the course stays with the
    instructor."""
    return (Path(root) / "nbgrader_config.py").is_file()


def learner_work(root: Path) -> Path:
    """Where a learner's assignment folders are: work/ of the course directory, or, with no
    course directory (a class's hub), the home folder, where nbgrader fetches them."""
    return Path(root) / "work" if is_course_directory(root) else Path.home()


def references_dir() -> Path:
    """Reference outputs of the source solutions: outside source/, so never released."""
    return course_root() / "references"


def gradebook_url(root: Path) -> str:
    """The gradebook of the course at `root`: $COURSE_DB_URL, else SQLite with a busy timeout.

    The timeout makes a second writer wait for the lock instead of failing with nbgrader's
    misleading "run nbgrader db upgrade". For PostgreSQL, e.g.
    COURSE_DB_URL=postgresql+psycopg://grader:secret@127.0.0.1:5432/everything_leaks
    """
    return os.environ.get("COURSE_DB_URL") or f"sqlite:///{Path(root) / 'gradebook.db'}?timeout=30"


def tool_env(**extra: str) -> dict:
    """os.environ with this interpreter's bin/ first on PATH: nbgrader runs `alembic` and
    `jupyter` by name, and a virtual environment that was never activated is not on PATH."""
    import sys

    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(extra)
    return env
