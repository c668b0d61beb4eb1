"""The one writer: graded submissions into the course directory and its gradebook.

Workers (course.grader.parallel) grade in scratch folders and return each submission's
autograded folder. Here, in the parent process only, each folder is installed under
`autograded/` and its grades are recorded with nbgrader's own code: `SaveAutoGrades`'s
cell logic (auto scores, "needs manual grade", "No response." comments) and
`AssignLatePenalties`'s plugin, as `nbgrader autograde` does. All of one submission's
rows are one transaction, and its folder is swapped in only once they are committed: a
crash leaves the old grades and folder, or the new ones, never half of either.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import nbformat

from course.grader.nbgrader_internals import (
    checked_late_penalty,
    one_transaction,
    save_cell_grades,
)


class Recorder:
    """Installs autograded folders and records their grades, for one assignment."""

    def __init__(self, root: Path, assignment: str, config):
        from nbgrader.api import Gradebook
        from nbgrader.coursedir import CourseDirectory
        from nbgrader.preprocessors import AssignLatePenalties, SaveAutoGrades

        self.root, self.assignment = Path(root), assignment
        self.coursedir = CourseDirectory(config=config)
        self.gb = Gradebook(self.coursedir.db_url, self.coursedir.course_id)
        self.save = SaveAutoGrades(config=config)
        self.late = AssignLatePenalties(config=config)
        self.late.init_plugin()
        # The assignment's notebooks, as the gradebook knows them: a notebook under any
        # other name is not graded, as nbgrader skips it.
        self.notebooks = {nb.name for nb in self.gb.find_assignment(assignment).notebooks}

    def close(self) -> None:
        self.gb.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def record(self, student: str, files: dict[str, tuple[bytes, int]]) -> None:
        """Install `files` as the student's autograded folder and record its grades."""
        dest = self.root / "autograded" / student / self.assignment
        staging = dest.with_name(f".{self.assignment}.incoming")
        shutil.rmtree(staging, ignore_errors=True)
        for rel, (data, mode) in files.items():
            if "/" in rel or rel.startswith(".") or not rel.endswith(".ipynb"):
                raise ValueError(f"a worker returned {rel!r}: only graded notebooks are kept")
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            os.chmod(path, mode)
        submitted = self.root / "submitted" / student / self.assignment
        for name in BOOKKEEPING:
            data = small_regular_file(submitted / name)
            if data is not None:
                staging.mkdir(parents=True, exist_ok=True)
                (staging / name).write_bytes(data)
        try:
            notebooks = {
                Path(rel).stem: nbformat.reads(data.decode("utf-8"), as_version=4)
                for rel, (data, _) in files.items()
                if "/" not in rel and rel.endswith(".ipynb") and Path(rel).stem in self.notebooks
            }
            # Without autoflush, nbgrader's add_submission does not flush a half-built
            # submission; flushes happen where nbgrader commits.
            with one_transaction(self.gb), self.gb.db.no_autoflush:
                self._grades(student, notebooks)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        old = dest.with_name(f".{self.assignment}.replaced")
        shutil.rmtree(old, ignore_errors=True)
        if dest.exists():
            dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old, ignore_errors=True)

    def _grades(self, student: str, notebooks: dict) -> None:
        """What `nbgrader autograde` writes to the gradebook for one submission."""
        gb, assignment = self.gb, self.assignment
        gb.update_or_create_student(student)
        submitted = self.coursedir.format_path(
            self.coursedir.submitted_directory, student, assignment
        )
        timestamp = self.coursedir.get_existing_timestamp(submitted)
        when = {"timestamp": timestamp} if timestamp else {}
        submission = gb.update_or_create_submission(assignment, student, **when)
        for name in self.notebooks - set(notebooks):  # not submitted: zero, as nbgrader does
            for grade in gb.find_submission_notebook(name, assignment, student).grades:
                grade.auto_score, grade.needs_manual_grade = 0, False
        for name, nb in notebooks.items():
            save_cell_grades(self.save, gb, nb, name, assignment, student)
            gb.db.commit()  # held back by one_transaction: flushes, so scores reload
            notebook = gb.find_submission_notebook(name, assignment, student)
            notebook.late_submission_penalty = None
            late = submission.total_seconds_late
            if late > 0:
                penalty = self.late.plugin_inst.late_submission_penalty(
                    student, notebook.score, late
                )
                if penalty is not None:
                    notebook.late_submission_penalty = checked_late_penalty(
                        self.late, notebook, penalty
                    )


# What nbgrader's own autograde copies from submitted/ to autograded/ besides notebooks, and
# its feedback steps need: release_feedback and fetch_feedback name a student's feedback by
# a hash of the notebook with the submission's secret and its timestamp's exact text.
BOOKKEEPING = ("timestamp.txt", "submission_secret.txt")
BOOKKEEPING_BYTES = 4096


def small_regular_file(path: Path, limit: int = BOOKKEEPING_BYTES) -> bytes | None:
    """The bytes of `path` if it is a regular file of at most `limit` bytes, read without
    following a link (a submission's folder is the student's); None otherwise."""
    try:
        # Non-blocking: opening a fifo must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        data = handle.read(limit + 1)
    return data if len(data) <= limit else None
