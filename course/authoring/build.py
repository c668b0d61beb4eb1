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
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat

from course.grader import judge, model, probe
from course.paths import tool_env

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBGRADER_KEYS = {"grade", "grade_id", "locked", "points", "schema_version", "solution"}
TEXT_SUFFIX = ".pct.py"


def text_sources(root: Path) -> list[Path]:
    """Every notebook's text source, sorted: source/<assignment>/<name>.pct.py."""
    return sorted((root / "source").glob(f"*/*{TEXT_SUFFIX}"))


def assignments(root: Path) -> list[str]:
    return sorted({path.parent.name for path in text_sources(root)})


def notebook_path(text_path: Path) -> Path:
    return text_path.with_name(text_path.name.removesuffix(TEXT_SUFFIX) + ".ipynb")


def notebook_key(text_path: Path) -> str:
    """ "<assignment>/<name>": how checks and references name a notebook."""
    return f"{text_path.parent.name}/{text_path.name.removesuffix(TEXT_SUFFIX)}"


def notebook_from_text(text: str) -> nbformat.NotebookNode:
    """A clean notebook from py:percent text: nbgrader metadata only, stable cell ids."""
    nb = jupytext.reads(text, fmt="py:percent")
    cells = []
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader")
        if meta is not None:
            unknown = set(meta) - NBGRADER_KEYS
            if unknown:
                raise ValueError(f"cell {index}: unknown nbgrader keys {sorted(unknown)}")
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(cell.source)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(cell.source)
        else:
            new = nbformat.v4.new_raw_cell(cell.source)
        if meta is not None:
            new.metadata["nbgrader"] = dict(meta)
        new.id = f"c{index:03d}" + (f"-{meta['grade_id']}" if meta and "grade_id" in meta else "")
        cells.append(new)
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    nbformat.validate(out)
    return out


def write_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    path.write_text(nbformat.writes(nb) + "\n")


def validate_grade_cells(nb: nbformat.NotebookNode, key: str) -> None:
    """Each grade cell that runs a hidden check is worth what the check scores."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if not meta.get("grade") or meta.get("solution"):
            continue
        chk = (
            model.get_check(meta["grade_id"])
            if f'check("{meta["grade_id"]}"' in cell.source
            else None
        )
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


def nbgrader(
    root: Path, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run an nbgrader command in course directory `root`, output captured.

    check: raise RuntimeError, with nbgrader's output, if the command fails.
    """
    proc = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        env=env or tool_env(),
        capture_output=True,
        text=True,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def build_release(root: Path) -> None:
    """Regenerate release/ with nbgrader, without touching the gradebook."""
    for assignment in assignments(root):
        target = root / "release" / assignment
        if target.exists():
            shutil.rmtree(target)
        nbgrader(root, "generate_assignment", assignment, "--force", "--no-db")


def solution_namespace(
    nb: nbformat.NotebookNode, origin: str, answers: dict[str, str] | None = None
) -> dict:
    """Execute a source notebook's first code cell (its imports) and its solution cells.

    That is all a hidden check needs of the solutions, and it skips the plots and training.
    answers: {grade id: code} run instead of those solution cells (a student variant);
    then a cell that raises is skipped, as a kernel goes on to the next cell.
    """
    code = [c for c in nb.cells if c.cell_type == "code"]
    wanted = code[:1] + [c for c in code[1:] if c.metadata.get("nbgrader", {}).get("solution")]
    namespace: dict = {"__name__": "__solutions__"}
    os.environ.setdefault("MPLBACKEND", "Agg")
    for cell in wanted:
        source = (answers or {}).get(cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
        try:
            exec(compile(source, f"<{origin}:{cell.id}>", "exec"), namespace)  # noqa: S102
        except Exception:
            if answers is None:  # the solutions themselves must run
                raise
    return namespace


def compute_references(
    root: Path, seeds: dict[str, int] | None = None, assignment: str | None = None
) -> dict[str, dict]:
    """{notebook key: {check name: encoded outputs}} from the source solutions, run in
    this process (trusted code, never a student's kernel).

    seeds: {check name: seed} of a grading run's inputs (course.grader.inputs); None for
    the public seeds of the committed references/. assignment: only its notebooks.
    """
    model._load_checks()
    result = {}
    for text_path in text_sources(root):
        key = notebook_key(text_path)
        if assignment is not None and text_path.parent.name != assignment:
            continue
        checks = [c for c in model.CHECKS.values() if c.notebook == key]
        if not checks:
            continue
        namespace = solution_namespace(notebook_from_text(text_path.read_text()), key)
        refs = {}
        for chk in sorted(checks, key=lambda c: c.name):
            outputs = probe.probe(chk, namespace, None if seeds is None else seeds[chk.name])
            failed = {k: v.why for k, v in outputs.items() if isinstance(v, model.Broken)}
            if failed:
                raise RuntimeError(f"the solution fails check {chk.name!r}: {failed}")
            results = judge.judge(chk, outputs, outputs)
            if not all(r.passed for r in results):
                bad = [r.message for r in results if not r.passed]
                raise RuntimeError(f"the solution breaks an invariant of {chk.name!r}: {bad}")
            refs[chk.name] = {k: model.encode(v) for k, v in outputs.items()}
        result[key] = refs
    return result


def write_references(root: Path, references: dict[str, dict]) -> None:
    for key, refs in references.items():
        path = root / "references" / f"{key}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_dump_references(refs))


def _dump_references(refs: dict) -> str:
    """JSON with one line per output: reviewable, diffable, and exact (floats round-trip)."""
    lines = []
    for name in sorted(refs):
        entries = [
            f"  {json.dumps(key)}: {json.dumps(value)}" for key, value in sorted(refs[name].items())
        ]
        lines.append(f" {json.dumps(name)}: {{\n" + ",\n".join(entries) + "\n }")
    return "{\n" + ",\n".join(lines) + "\n}\n"
