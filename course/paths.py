"""Where the course directory is: the folder holding nbgrader_config.py."""

import os
from pathlib import Path


def course_root() -> Path:
    """The course directory: $COURSE_ROOT if set, else the checkout this package lives in."""
    if "COURSE_ROOT" in os.environ:
        return Path(os.environ["COURSE_ROOT"]).resolve()
    return Path(__file__).resolve().parent.parent


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
