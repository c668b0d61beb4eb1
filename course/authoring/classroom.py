"""A course directory as nbgrader sees it: submissions in, grades out.

Used by `course demo`, the benchmarks and the tests, so that each of them runs the real
`nbgrader` commands the same way an instructor does, in a throwaway copy of the course
(course.grader.scratch.ScratchCourse).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import nbformat

from course.carry import is_carry_cell
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta, solution_cell_id

SOLUTION_MARKER = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def strip_solution_markers(source: str) -> str:
    """A solution cell's code as a student would have typed it: markers gone."""
    return "\n".join(line for line in source.splitlines() if not SOLUTION_MARKER.match(line))


def solution_sources(source_nb: nbformat.NotebookNode) -> dict[str, str]:
    """{grade id: solution code} for every solution cell of a source notebook."""
    return {
        solution_cell_id(c): strip_solution_markers(c.source)
        for c in source_nb.cells
        if solution_cell_id(c)
    }


def fill(release_nb: nbformat.NotebookNode, answers: dict[str, str], trim: bool = False):
    """A copy of a released notebook with solution cells answered.

    answers: {grade id: code}; cells not named keep the release's stub.
    trim: keep only the first code cell (imports), carry cells (course.carry), solution cells
    and grade cells; the
    hidden checks depend on nothing else, so a mutant need not pay for the plots.
    """
    nb = copy.deepcopy(release_nb)
    unknown = set(answers) - {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    if unknown:
        raise KeyError(f"no cells with grade ids {sorted(unknown)}")
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    kept = []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade_id") in answers:
            cell.source = answers[meta["grade_id"]]
        if (
            not trim
            or cell is first_code
            or meta.get("solution")
            or meta.get("grade")
            or is_carry_cell(cell)
        ):
            kept.append(cell)
    nb.cells = kept
    return nb


def carried_modules(root: Path, assignment: str) -> dict[str, str]:
    """{my_<a>.py: text} for each earlier assignment a that `assignment`'s source notebook
    carries (course.carry), as a learner who did a like its solutions would submit them.

    For tests and benchmarks only: a real submission carries the learner's own code.
    """
    from course.carry import carried_assignments, code_of, module_name, module_text, notebook_of

    source = notebook_of(root / "source" / assignment)
    todo = carried_assignments(code_of(nbformat.read(source, as_version=4))) if source else []
    modules: dict[str, str] = {}
    while todo:
        earlier = todo.pop(0)
        name = f"{module_name(earlier)}.py"
        if name in modules:
            continue
        nb = nbformat.read(notebook_of(root / "source" / earlier), as_version=4)
        modules[name] = module_text(nb, f"source/{earlier} (as a learner who solved it)")
        todo += carried_assignments(modules[name])
    return modules


def mutate(code: str, old: str, new: str) -> str:
    """Replace `old` by `new` in `code`; `old` must occur exactly once, or the mutant is void."""
    count = code.count(old)
    if count != 1:
        raise ValueError(f"mutation target occurs {count} times, expected once: {old!r}")
    return code.replace(old, new)


def judge_in_process(
    source_nb: nbformat.NotebookNode, answers: dict[str, str], inputs=None, only=None
) -> dict[str, float]:
    """{grade id: points} of every hidden check, with solution cells replaced by `answers`.

    No kernel and no nbgrader: the solution cells run in this process, each check probes
    them, and its outputs take the same way to the verdict as a kernel's display does (JSON
    in, decoded, judged). A fast path for the mutation harness, which also checks that it
    agrees with real nbgrader grading.
    inputs: a run's seeds and references (course.grader.inputs.Inputs); None: the public
    ones of the committed references/. only: the grade ids to judge (None: every one).
    """
    from course.checks import get_check
    from course.grader.judge import by_hand_failure, verdict, withheld, withhold
    from course.grader.model import encode
    from course.grader.probe import probe
    from course.grader.sources import solution_namespace

    namespace = solution_namespace(source_nb, "variant", answers)
    names = [n for n in map(grade_id_of_test_cell, source_nb.cells) if n is not None]

    def judged(name):
        seed = None if inputs is None else inputs.seeds[name]
        reference = None if inputs is None else inputs.reference(name)
        outputs = probe(get_check(name), namespace, seed)
        payload = {"check": name, "outputs": {k: encode(v) for k, v in outputs.items()}}
        payload = json.loads(json.dumps(payload))
        points, text = verdict(name, payload, "", reference)
        return points, text, by_hand_failure(get_check(name), payload, reference)

    scores, failures = {}, {}
    # As a grading run: the checks a training check trains through are judged first
    # (Check.trains_through), here also when `only` leaves them out.
    wanted = [n for n in names if only is None or n in only]
    needed = {e for n in wanted for e in get_check(n).trains_through if e in names}
    for name in sorted(set(wanted) | needed, key=lambda n: bool(get_check(n).trains_through)):
        points, text, failures[name] = judged(name)
        points, _ = withhold(get_check(name), points, text, withheld(get_check(name), failures))
        if name in wanted:
            scores[name] = points
    return {name: scores[name] for name in wanted}
