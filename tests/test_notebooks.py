"""Every source notebook runs top to bottom with its solutions, every hidden check and every
"check it" passing."""

import itertools
import os
import re
import time

import nbformat
import pytest

from course.authoring import build
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta
from course.grader.kernel_client import PromptNotebookClient
from course.grader.nbgrader_ext import judge_notebook
from course.paths import course_root

ROOT = course_root()
STUB = re.compile(
    r"raise NotImplementedError\(['\"](Exercise \d+\.\d+|Part \d+ \([^)]*\)): write .+['\"]\)"
)


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
    # Every "check it" holds on the solutions too (a failing one writes to stderr).
    failed = [
        o.text
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if o.output_type == "stream" and o.name == "stderr" and "check it FAILED" in o.text
    ]
    assert not failed, failed
    for cell in nb.cells:
        if grade_id_of_test_cell(cell) is None:
            continue
        meta = nbgrader_meta(cell)
        outputs = cell.outputs
        assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
        results = [o for o in outputs if o.output_type == "execute_result"]
        assert len(results) == 1, f"{meta['grade_id']}: no points reported"
        assert float(results[0].data["text/plain"]) == float(meta["points"]), meta["grade_id"]


@pytest.mark.parametrize("text", build.text_sources(ROOT), ids=lambda p: p.parent.name)
def test_released_stubs_name_their_exercise(text):
    """Issue 22, item 5: no bare `raise NotImplementedError()`; each stub names the
    exercise (or part) and, inside a function, the function to write."""
    release = ROOT / "release" / text.parent.name / f"{text.name.removesuffix('.pct.py')}.ipynb"
    nb = nbformat.read(release, as_version=4)
    stubs = [
        after.strip()
        for cell in nb.cells
        if nbgrader_meta(cell).get("solution")
        for line, after in itertools.pairwise(cell.source.splitlines())
        if line.strip() == "# YOUR CODE HERE"
    ]
    assert stubs
    for stub in stubs:
        assert STUB.fullmatch(stub), stub


def test_stub_messages_name_methods_and_their_class():
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    from course.authoring.stubs import NamedStubs

    solution = {
        "nbgrader": {
            "solution": True,
            "grade": False,
            "locked": False,
            "grade_id": "x",
            "schema_version": 3,
        }
    }
    nb = new_notebook(
        cells=[
            new_markdown_cell("### Exercise 1.3: functions"),
            new_code_cell(
                "class V:\n    def f(self):\n        ### BEGIN SOLUTION\n        return 1\n"
                "        ### END SOLUTION\n\n\n@add_to_class(V)\ndef g(self):\n"
                "    ### BEGIN SOLUTION\n    return 2\n    ### END SOLUTION",
                metadata=solution,
            ),
        ],
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
    )
    nb, _ = NamedStubs().preprocess(nb, {})
    assert "raise NotImplementedError('Exercise 1.3: write V.f')" in nb.cells[1].source
    assert "raise NotImplementedError('Exercise 1.3: write V.g')" in nb.cells[1].source
    assert "return" not in nb.cells[1].source
