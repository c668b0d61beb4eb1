"""A learner's working copies: release/<assignment>/ -> work/<assignment>/, never overwritten.

release/ is generated and checked in CI, so nobody should type into it. `make lab` runs
this module first: a new assignment is copied into work/, an existing copy is left alone.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from course.catalogue import CATALOGUE
from course.paths import course_root

INTRO = """\
# Everything Leaks: start here

Every part of a machine-learning system leaks into the loss. In each assignment you build
one part by hand in NumPy, check it with gradient checks, and watch how it changes the loss.
"""

HOW_TO_WORK = """
**How to work.** Open an assignment, fill in each `YOUR CODE HERE`, run its "check it"
cell, and press **Validate** in the notebook's toolbar before you submit. Your copies live
in `work/` and are never overwritten; the pristine ones are in `release/`.
"""


def start_page(assignments: list[Path]) -> str:
    """The course map, one row per released assignment."""
    rows = ["| Assignment | You build | The leak it shows |", "|---|---|---|"]
    for folder in assignments:
        entry = CATALOGUE.get(folder.name)
        notebook = next(iter(sorted(folder.glob("*.ipynb"))), None)
        if entry is None or notebook is None:
            continue
        link = f"[{entry.title}]({folder.name}/{notebook.name})"
        rows.append(f"| {link} | {entry.builds} | {entry.leak} |")
    return INTRO + "\n" + "\n".join(rows) + "\n" + HOW_TO_WORK


def prepare(root: Path) -> list[str]:
    """Copy each released assignment that work/ lacks; (re)write the start page."""
    work = root / "work"
    work.mkdir(exist_ok=True)
    copied = []
    released = sorted(p for p in (root / "release").iterdir() if p.is_dir())
    for assignment in released:
        target = work / assignment.name
        if not target.exists():
            shutil.copytree(assignment, target)
            copied.append(assignment.name)
    # The course's page, not the learner's: regenerated each time.
    (work / "START.md").write_text(start_page(released))
    return copied


def main() -> int:
    copied = prepare(course_root())
    if copied:
        print(f"work/: new copies of {', '.join(copied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
