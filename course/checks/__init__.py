"""Hidden checks, one module per assignment, named after its notebook.

A module that declares `ASSIGNMENT` (a `course.grader.model.Assignment`) is an assignment's
checks module; importing it registers its checks. Modules whose names start with `_` hold
shared probe helpers. Nothing here is listed by hand: a new module is found by its file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from course.grader.model import Assignment


@cache
def assignment_modules() -> tuple:
    """Every assignment's checks module, in the order of the assignments' ids."""
    modules = [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
        if not info.name.startswith("_")
    ]
    declared = [m for m in modules if isinstance(getattr(m, "ASSIGNMENT", None), Assignment)]
    return tuple(sorted(declared, key=lambda m: m.ASSIGNMENT.id))


def assignments() -> dict[str, Assignment]:
    """Every assignment's declaration, by id ("04_optimisers"), in order."""
    return {m.ASSIGNMENT.id: m.ASSIGNMENT for m in assignment_modules()}


def slow_grade_cells() -> frozenset[str]:
    """Grade cells that train a model, over every assignment: they get a longer timeout."""
    return frozenset().union(*(a.slow_cells for a in assignments().values()))


def load_all() -> None:
    assignment_modules()
