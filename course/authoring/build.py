"""Build the course: text sources -> source notebooks -> release/ and reference values.

The source of truth of each notebook is a jupytext py:percent file beside it,
`source/<assignment>/<name>.pct.py`, whose `# %%` headers carry the nbgrader metadata.
From it:
- `source/<assignment>/<name>.ipynb`: the notebook nbgrader reads (no outputs, stable ids);
- `release/<assignment>/`: `nbgrader generate_assignment` (solutions and hidden checks gone);
- `references/<assignment>/<name>.json`: every hidden check's probe run on the solutions.
Every step is deterministic, so tests rebuild into a temporary folder and compare.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat

from course.carry import module_name
from course.checks import checks_by_name, get_check
from course.grader import judge, model
from course.grader.autograde import nbgrader
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta
from course.grader.sources import (  # noqa: F401 (build's public names, defined there)
    GENERATED_NOTE,
    KERNELSPEC,
    NBGRADER_KEYS,
    TEXT_SUFFIX,
    assignments,
    compute_references,
    notebook_from_text,
    notebook_key,
    notebook_path,
    solution_namespace,
    text_sources,
)


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    path.write_text(nbformat.writes(nb) + "\n")


def validate_grade_cells(nb: nbformat.NotebookNode, key: str) -> None:
    """Each grade cell that runs a hidden check is worth what the check scores."""
    for cell in nb.cells:
        if grade_id_of_test_cell(cell) is None:
            continue
        meta = nbgrader_meta(cell)
        chk = get_check(meta["grade_id"]) if f'check("{meta["grade_id"]}"' in cell.source else None
        if chk is None:
            raise ValueError(f"{key}: grade cell {meta['grade_id']!r} runs no check of that name")
        if float(meta["points"]) != float(chk.points):
            raise ValueError(
                f"{key}: grade cell {meta['grade_id']!r} is worth {meta['points']} "
                f"points, its check scores {chk.points}"
            )
        if chk.notebook != key:
            raise ValueError(f"{key}: check {chk.name!r} belongs to {chk.notebook}")


def build_sources(root: Path) -> list[Path]:
    written = []
    for text_path in text_sources(root):
        nb = notebook_from_text(text_path.read_text())
        validate_grade_cells(nb, notebook_key(text_path))
        write_notebook(nb, notebook_path(text_path))
        written.append(notebook_path(text_path))
    return written


def build_release(root: Path) -> None:
    """Regenerate release/ with nbgrader, without touching the gradebook."""
    for assignment in assignments(root):
        # nbgrader copies the source folder's files over a submission at autograde: a
        # carried module there would replace the learner's own (course.carry).
        clash = sorted((root / "source" / assignment).glob(f"{module_name('*')}.py"))
        if clash:
            raise ValueError(
                f"source/{assignment} holds {', '.join(p.name for p in clash)}: a learner's "
                "carried code is never part of the source (see course/carry.py); delete it"
            )
        target = root / "release" / assignment
        if target.exists():
            shutil.rmtree(target)
        nbgrader(root, "generate_assignment", assignment, "--force", "--no-db")


def write_references(root: Path, references: dict[str, dict]) -> None:
    """Write references/, keeping each stored value that the judge cannot tell from the fresh
    one: another processor rounds the last bits differently, and a rebuild there must not
    rewrite every file (nor a "below" value that is noise by construction)."""
    checks = checks_by_name()
    for key, refs in references.items():
        path = root / "references" / f"{key}.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        for name, outputs in refs.items():
            for out_key, value in outputs.items():
                old = stored.get(name, {}).get(out_key)
                rule = model.rule_for(checks[name], out_key)
                if old is not None and judge.same_for_the_judge(
                    model.decode(old), model.decode(value), rule
                ):
                    outputs[out_key] = old
        path.parent.mkdir(parents=True, exist_ok=True)
        # Replaced whole, never truncated then written: a grading run reading references/
        # while `course build` runs sees the old file or the new one, not an empty one.
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(_dump_references(refs))
        partial.replace(path)


def _dump_references(refs: dict) -> str:
    """JSON with one line per output: reviewable, diffable, and exact (floats round-trip)."""
    lines = []
    for name in sorted(refs):
        entries = [
            f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in sorted(refs[name].items())
        ]
        lines.append(f" {json.dumps(name)}: {{\n" + ",\n".join(entries) + "\n }")
    return "{\n" + ",\n".join(lines) + "\n}\n"
