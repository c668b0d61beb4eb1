"""Student variants, for the mutation harness (tests/test_mutants.py) and `course bench
--bands` (course.authoring.bands): what a variant is, the code it submits, the cells it
changes, and each assignment's variants.

A mutant is a realistic bug, written as text edits of the reference solution; it must
lose points in the grade cells named by `loses`. An alternate is a different correct
implementation, written out in full; it must keep full marks. Each assignment declares its
variants in the checkout's tests/variants_<checks module>.py (MUTANTS, ALTERNATES and, for
some, CONVENTIONS), which `of_module` reads as data: the package never imports the tests.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from dataclasses import dataclass, field

from course.paths import course_root


@dataclass(frozen=True)
class Mutant:
    name: str
    cell: str  # grade id of the solution cell it edits
    edits: tuple[tuple[str, str], ...]  # (old, new); each old must occur exactly once
    loses: frozenset[str] = field(default_factory=frozenset)  # grade cells that must lose points
    code: str | None = None  # a whole replacement of the cell, instead of edits
    # Grade cells (of `loses`) where the bug is a wrong value (an output, a gradient, a
    # state): they may keep at most WRONG_VALUE_CAP of their points, not merely lose some
    # (course.grader.model.Rule.cap).
    capped: frozenset[str] = field(default_factory=frozenset)
    # Other solution cells the bug spans, as (grade id, full code): a forward whose cache
    # changes with the backward that reads it.
    more: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Alternate:
    name: str
    answers: dict  # {grade id of a solution cell: full code}


def m(name, cell, loses, *edits):
    return Mutant(name, cell, tuple(edits), frozenset(loses))


def wrong(name, cell, loses, *edits, capped=None):
    """A mutant whose bug is a wrong value: each cell of `capped` (all of `loses` unless
    given) keeps at most WRONG_VALUE_CAP of its points, not just less than all of them."""
    loses = frozenset(loses)
    capped = loses if capped is None else frozenset(capped)
    assert capped <= loses, f"{name}: a capped cell must be one it loses points in"
    return Mutant(name, cell, tuple(edits), loses, capped=capped)


@dataclass(frozen=True)
class Convention:
    """Code in a well-known convention other than the course's (PyTorch's momentum, the
    AdamW paper's decay, Glorot's fans): it must lose points in the grade cells `loses`,
    since the course's convention is the API, and each of those cells' report must name
    it (`names`, case-insensitive) rather than misdiagnose it."""

    name: str
    answers: dict  # {grade id of a solution cell: full code}
    loses: frozenset[str]
    names: str


# ------------------------------------------------------------ the code a variant submits


@functools.cache
def source_notebook(assignment: str, notebook: str):
    """An assignment's source notebook (source/<assignment>/<notebook>.pct.py), read once."""
    from course.authoring.build import notebook_from_text

    text = course_root() / "source" / assignment / f"{notebook}.pct.py"
    return notebook_from_text(text.read_text())


def answers_of(module, variant) -> dict[str, str]:
    """{solution cell: code} that a variant submits in place of the reference."""
    from course.authoring.classroom import mutate, solution_sources

    if hasattr(variant, "answers"):
        return variant.answers
    solutions = solution_sources(source_notebook(module.ASSIGNMENT, module.NOTEBOOK))
    code = variant.code if variant.code is not None else solutions[variant.cell]
    for old, new in variant.edits:
        code = mutate(code, old, new)
    return {**dict(variant.more), variant.cell: code}


def binds(code: str) -> set[str] | None:
    """The names a cell's top level binds, or None unless all it does is define functions
    and classes (undecorated), import, and hold docstrings, with no `global` anywhere."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    if any(isinstance(node, ast.Global | ast.Nonlocal) for node in ast.walk(tree)):
        return None
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.decorator_list:
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return None
    return names


def changed_cells(module, variant) -> set[str] | None:
    """The solution cells a variant changes, or None where judging only the checks that
    run them would not be sound (tests/test_mutants.py, in_process_affected)."""
    from course.authoring.classroom import solution_sources

    solutions = solution_sources(source_notebook(module.ASSIGNMENT, module.NOTEBOOK))
    answers = answers_of(module, variant)
    changed = {cell for cell, code in answers.items() if code != solutions.get(cell)}
    for cell in changed:
        ours = binds(solutions[cell]) if cell in solutions else None
        if ours is None or binds(answers[cell]) != ours:
            return None
    return changed


def traced(check, nb, namespace, seed=None, label: str = "solution"):
    """(the probe's outputs, the solution cells whose code ran in it): `namespace` is
    course.grader.sources.solution_namespace(nb, label, ...), whose cells' code runs under
    the file names "<label:cell id>"."""
    import threading

    from course.grader.cells import solution_cell_id
    from course.grader.probe import probe

    cell_of_file = {f"<{label}:{c.id}>": solution_cell_id(c) for c in nb.cells}
    ran = set()

    def note(frame, event, arg):
        if event == "call" and frame.f_code.co_filename in cell_of_file:
            ran.add(cell_of_file[frame.f_code.co_filename])

    before = sys.getprofile()
    sys.setprofile(note)
    threading.setprofile(note)
    try:
        outputs = probe(check, namespace, seed)
    finally:
        sys.setprofile(before)
        threading.setprofile(None)
    return outputs, frozenset(c for c in ran if c)


# ------------------------------------------------------------ each assignment's variants


@functools.cache
def of_module(name: str):
    """The variants of the checks module `name` ("backprop"): the checkout's
    tests/variants_<name>.py, read as data (loaded from its file, under a name of its own,
    not imported as part of the tests)."""
    path = course_root() / "tests" / f"variants_{name}.py"
    spec = importlib.util.spec_from_file_location(f"course_variants_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
