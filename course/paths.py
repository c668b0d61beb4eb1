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
