"""nbgrader settings for the Everything Leaks course.

Every path is relative to this file, so a copy of the course directory (a grader's
machine, a test's temporary folder) grades itself. Per-assignment knobs that change
how a check judges live in `course.checks`, not here.
"""

import os
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ComputeChecksums,
    GetGrades,
    IgnorePattern,
    IncludeHeaderFooter,
    InstantiateTests,
    LimitOutput,
    LockCells,
    SaveAutoGrades,
    SaveCells,
)

from course.authoring.stubs import NamedStubs
from course.checks import slow_grade_cells
from course.grader.nbgrader_ext import (
    ExerciseFeedback,
    FeedbackClearHiddenTests,
    GuardedExecute,
    JudgeHiddenChecks,
    SanitizeStudentCells,
    SeedHiddenChecks,
    template_basedirs,
)
from course.grader.nbgrader_internals import skip_the_alembic_subprocess
from course.paths import gradebook_url

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (injected by traitlets)

# Each new gradebook records its schema version, which nbgrader asks an `alembic heads`
# subprocess for (about 3 s of CPU): every nbgrader app of the course answers in-process.
skip_the_alembic_subprocess()

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.course_id = "everything-leaks"

# The jupytext twin of each source notebook is the reviewable text of the same content;
# it holds the solutions, so it must never be copied into release/ (nor into autograded/).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.pct.py"]

# Gradebook: SQLite with a busy timeout as the embedded default; PostgreSQL through
# $COURSE_DB_URL (see course/paths.py and the README).
c.CourseDirectory.db_url = gradebook_url(ROOT)

# Exchange for release/fetch/submit/collect. A class sets NBGRADER_EXCHANGE to its shared
# folder (nbgrader's default is /srv/nbgrader/exchange); a self-learner gets a private one.
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", str(ROOT / ".nbgrader" / "exchange"))
# Collect only what the student it names owns, dated no earlier than it was made
# (course/grader/exchange.py: nbgrader's own only warns, and believes the folder's name).
c.ExchangeFactory.collect = "course.grader.exchange.OwnerCheckedCollect"
# Students name their folders and files, and nbgrader logs those names: their control
# characters reach the terminal escaped (course/grader/logsafe.py).
c.Application.logging_config = {
    "filters": {"printable": {"()": "course.grader.logsafe.Printable"}},
    "handlers": {"console": {"filters": ["printable"]}},
}

# Per-cell timeouts, in seconds: the grade cells that train a model get three times as
# long. COURSE_CELL_TIMEOUT scales them all (a slow grading machine, or a test of loops).
CELL_TIMEOUT = int(os.environ.get("COURSE_CELL_TIMEOUT", "60"))
# Which cells train is declared by each assignment (`slow_cells` in course/checks/<name>.py).
TRAINING_GRADE_CELLS = slow_grade_cells()


def _cell_timeout(cell):
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return 3 * CELL_TIMEOUT if grade_id in TRAINING_GRADE_CELLS else CELL_TIMEOUT


c.Execute.timeout = CELL_TIMEOUT
c.Execute.timeout_func = _cell_timeout
# After a timeout the kernel is interrupted; one that still answers nothing within this
# many seconds is stopped, and the notebook cut off there (course.grader.nbgrader_ext).
c.Execute.iopub_timeout = 10

# The sandbox's limits are settings too (course/grader/sandbox.py, SandboxedKernelManager:
# address_space, cpu_seconds, file_size, open_files, processes, memory, work_tmpfs, tmp_tmpfs,
# shm_tmpfs, written_bytes, written_files), e.g. for a course whose models need more memory:
# c.SandboxedKernelManager.address_space = 8 * 2**30  # bytes, per process

# Hidden checks only record results in the student's kernel; the verdict is decided here,
# in the grader's process, right after execution (course/grader/nbgrader_ext.py), on inputs
# drawn from this course's secret (.nbgrader/secret, course/grader/inputs.py).
c.Autograde.autograde_preprocessors = [
    SeedHiddenChecks,
    GuardedExecute,
    JudgeHiddenChecks,
    SanitizeStudentCells,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# Released stubs say which exercise and function they stand for (course/authoring/stubs.py):
# nbgrader's default preprocessors, with NamedStubs in place of ClearSolutions.
c.GenerateAssignment.preprocessors = [
    IncludeHeaderFooter,
    InstantiateTests,
    LockCells,
    NamedStubs,
    ClearOutput,
    CheckCellMetadata,
    ComputeChecksums,
    SaveCells,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
]

# Validate (the lab's button and `nbgrader validate`) fails on every cell that raises or
# writes to stderr, not only on grade cells: the hidden checks are hidden, so without this
# it had nothing to fail on. A "check it" cell reports a failure on stderr (course.notebook).
c.Validator.validate_all = True
# Its kernel's own log (ipykernel's, not the learner's code) says errors only: under every
# Validate it warned "Kernel is running over TCP without encryption", to the learner.
# (Unix sockets instead of TCP broke kernels run outside the notebook's folder: grading's
# without the sandbox, whose path to the sockets is relative.)
c.Validator.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]

# A student who deletes or retags a test cell gets it back, and it is graded.
c.OverwriteCells.add_missing_cells = True

# Feedback shows what the checks printed, never the hidden checks themselves, under a table
# of the exercises by name (course/grader/nbgrader_ext.py).
c.GenerateFeedback.preprocessors = [
    GetGrades,
    FeedbackClearHiddenTests,
    CSSHTMLHeaderPreprocessor,
    ExerciseFeedback,
]

# Feedback pages and the formgrader render maths offline: MathJax from the installed
# jupyter-server-mathjax package, never a CDN (course/grader/templates/base/mathjax.html.j2).
c.HTMLExporter.extra_template_basedirs = template_basedirs()
c.HTMLExporter.filters = {"course_mathjax_file_url": "course.grader.nbgrader_ext.mathjax_file_url"}

# The grading run's inputs and their references are this course's (its secret, its source
# solutions), wherever the `course` package was installed from. This file sets settings
# only: it changes nothing in the process that loads it (tests/test_layout.py).
c.SeedHiddenChecks.course_root = str(ROOT)
