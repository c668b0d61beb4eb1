"""A throwaway copy of the course (config, source/, release/, references/) in a folder of
its own, where nbgrader runs for real: `course check` grades a learner's work in one, and
the demo, the benchmarks and the tests run the real `nbgrader` commands in one as an
instructor does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import nbformat

from course.grader.autograde import CellGrade, cell_grades, nbgrader
from course.paths import course_root, tool_env

COURSE_FILES = ["nbgrader_config.py", "source", "release", "references"]


class ScratchCourse:
    """A throwaway course directory where nbgrader runs for real."""

    def __init__(self, root: Path, origin: Path | None = None):
        self.root = Path(root)
        origin = origin or course_root()
        self.root.mkdir(parents=True, exist_ok=True)
        for name in COURSE_FILES:
            src = origin / name
            if src.is_dir():
                shutil.copytree(src, self.root / name, dirs_exist_ok=True)
            else:
                shutil.copy2(src, self.root / name)

    @property
    def env(self) -> dict:
        return tool_env(COURSE_ROOT=str(self.root))  # kernels read references/ of this copy

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return nbgrader(self.root, *args, check=check, env=self.env)

    def register(self, assignment: str) -> None:
        """Add the assignment and its grade cells to the gradebook (regenerates release/)."""
        self.nbgrader("generate_assignment", assignment, "--force")

    def release_notebook(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "release" / assignment / f"{notebook}.ipynb", as_version=4)

    def source_notebook(self, assignment: str, notebook: str) -> nbformat.NotebookNode:
        return nbformat.read(self.root / "source" / assignment / f"{notebook}.ipynb", as_version=4)

    def submit(self, student: str, assignment: str, files: dict[str, object]) -> Path:
        """Write a submission: {file name: notebook, str or bytes}."""
        folder = self.root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            path = folder / name
            if isinstance(content, nbformat.NotebookNode):
                nbformat.write(content, path)
            elif isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return folder

    def autograde(self, assignment: str, *args: str) -> subprocess.CompletedProcess:
        return self.nbgrader("autograde", assignment, "--force", *args, check=False)

    def grades(self, assignment: str, notebook: str) -> dict[str, list[CellGrade]]:
        """{student: [grade of each grade cell]} from the gradebook, for graded submissions."""
        return cell_grades(self.root, assignment, notebook)
