"""Every source notebook runs top to bottom with its solutions, every hidden check passing."""

import os
import time

import nbformat
import pytest

from course.authoring import build
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta
from course.grader.kernel_client import PromptNotebookClient
from course.grader.nbgrader_ext import judge_notebook
from course.paths import course_root

ROOT = course_root()


@pytest.mark.slow
@pytest.mark.xdist_group("notebooks")
@pytest.mark.parametrize("text", build.text_sources(ROOT), ids=lambda p: p.parent.name)
def test_source_notebook_runs_with_full_marks(text):
    path = build.notebook_path(text)
    nb = nbformat.read(path, as_version=4)
    os.environ["COURSE_ROOT"] = str(ROOT)
    start = time.perf_counter()
    PromptNotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    print(f"{path.relative_to(ROOT)}: {time.perf_counter() - start:.1f} s")  # see `make bench`
    judge_notebook(nb)  # as nbgrader's autograde does, outside the kernel
    for cell in nb.cells:
        if grade_id_of_test_cell(cell) is None:
            continue
        meta = nbgrader_meta(cell)
        outputs = cell.outputs
        assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
        results = [o for o in outputs if o.output_type == "execute_result"]
        assert len(results) == 1, f"{meta['grade_id']}: no points reported"
        assert float(results[0].data["text/plain"]) == float(meta["points"]), meta["grade_id"]
