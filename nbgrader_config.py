"""nbgrader settings for the Everything Leaks course.

Every path is relative to this file, so a copy of the course directory (a grader's
machine, a test's temporary folder) grades itself. Per-assignment knobs that change
how a check judges live in `course.grading`, not here.
"""

import os
from pathlib import Path

from nbgrader.preprocessors import ClearHiddenTests, GetGrades
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (injected by traitlets)

c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.course_id = "everything-leaks"

# The jupytext twin of each source notebook is the reviewable text of the same content;
# it holds the solutions, so it must never be copied into release/ (nor into autograded/).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.pct.py"]

# Gradebook: SQLite with a busy timeout, so a second grader waits for the lock instead
# of failing with a misleading "run nbgrader db upgrade". For PostgreSQL set, e.g.,
#   COURSE_DB_URL=postgresql+psycopg://grader:secret@127.0.0.1:5432/everything_leaks
# (and `pip install "psycopg[binary]"`); nbgrader creates the schema on first use.
c.CourseDirectory.db_url = os.environ.get(
    "COURSE_DB_URL", f"sqlite:///{ROOT / 'gradebook.db'}?timeout=30"
)

# Exchange for release/fetch/submit/collect. A class sets NBGRADER_EXCHANGE to its shared
# folder (nbgrader's default is /srv/nbgrader/exchange); a self-learner gets a private one.
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", str(ROOT / ".nbgrader" / "exchange"))

# Per-cell timeouts: the grade cells that train a model get longer.
CELL_TIMEOUT = 60
GRADE_CELL_TIMEOUTS = {
    "mlp_training": 180,
}


def _cell_timeout(cell):
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return GRADE_CELL_TIMEOUTS.get(grade_id, CELL_TIMEOUT)


c.Execute.timeout = CELL_TIMEOUT
c.Execute.timeout_func = _cell_timeout

# A student who deletes or retags a test cell gets it back, and it is graded.
c.OverwriteCells.add_missing_cells = True

# Feedback shows what the checks printed, never the hidden checks themselves.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTests, CSSHTMLHeaderPreprocessor]

# Fixed BLAS threads: float results then do not depend on the grading machine's cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
