"""`course check <notebook>`: grade one notebook locally, exactly as the instructor would.

The notebook, with the learner's code carried from earlier assignments (course.carry, exported
again first when the notebook is in work/), is submitted to a scratch copy of the course
and graded by the same `course grade` path (real `nbgrader autograde`, every kernel
sandboxed, verdicts decided outside the kernel). Prints a table per exercise: points, pass
or fail, and for a failure what is wrong and the likely mistake (never an expected value).
Writes the HTML feedback next to the notebook (`<name>.feedback.html`) and the results
(`<name>.check.json`, read by the start page). Exits 0 only when every exercise earned full
marks.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import nbformat
from tqdm import tqdm

from course.carry import export, module_name
from course.grader import autograde
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta
from course.grader.nbgrader_ext import check_sections, section_of
from course.grader.scratch import ScratchCourse
from course.notebook import first_line
from course.paths import course_root, is_course_directory
from course.terminal import bar_size, wrapped
from course.workspace import write_start_page

STUDENT = "me"


@dataclass
class Exercise:
    grade_id: str
    points: float
    max_points: float
    report: str  # what the hidden check printed: failures and likely mistakes
    section: str = ""  # the notebook's heading above the check: what it grades

    @property
    def passed(self) -> bool:
        return self.points >= self.max_points


def found_notebook(notebook: Path) -> Path:
    """The notebook's real path, or FileNotFoundError saying what to give instead."""
    notebook = notebook.resolve()
    if notebook.is_dir():
        inside = sorted(p.name for p in notebook.glob("*.ipynb"))
        example = f"{notebook / inside[0]}" if inside else "work/01_backprop/backprop.ipynb"
        raise FileNotFoundError(f"{notebook} is a folder: give its notebook, e.g. {example}")
    if not notebook.is_file():
        raise FileNotFoundError(
            f"no notebook at {notebook}: give the path of one of yours, "
            "e.g. work/01_backprop/backprop.ipynb"
        )
    return notebook


def locate(notebook: Path, root: Path) -> tuple[str, str]:
    """(assignment, notebook name) of a learner's notebook, checked against release/."""
    assignment, name = notebook.parent.name, notebook.stem
    if not (root / "release" / assignment / f"{name}.ipynb").exists():
        known = sorted(
            p.relative_to(root / "release").as_posix() for p in (root / "release").glob("*/*.ipynb")
        )
        raise FileNotFoundError(
            f"{notebook} is not a notebook of this course: its folder and name must match one "
            f"of release/{{{', '.join(known)}}}"
        )
    return assignment, name


def exercises(graded: Path) -> list[Exercise]:
    nb = nbformat.read(graded, as_version=4)
    found, sections = [], check_sections(nb)
    for cell in nb.cells:
        if (grade_id := grade_id_of_test_cell(cell)) is None:
            continue
        section = sections[grade_id]
        meta = nbgrader_meta(cell)
        report = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
        points = next(
            (
                float(o["data"]["text/plain"])
                for o in cell.outputs
                if o.get("output_type") == "execute_result"
            ),
            None,
        )
        if points is None:  # a plain test cell, scored as nbgrader does
            failed = any(o.get("output_type") == "error" for o in cell.outputs)
            points = 0.0 if failed else float(meta["points"])
        found.append(
            Exercise(meta["grade_id"], points, float(meta["points"]), report.strip(), section)
        )
    return found


CAUSE = "CAUSE "
# What a CAUSE line blames, in a few words: "your relu_backward", "your code from 04_...".
BLAMED = re.compile(r"CAUSE (your .*?) (?:is missing|is not written yet|fails its own)")
ASSIGNMENT_NUMBER = re.compile(r"\bfrom (\d{2})_")


def first_cause(results: list[Exercise]) -> str | None:
    """The CAUSE line to fix first: one from the earliest assignment (code missing before
    code wrong), else the first in the notebook; None when no exercise names a cause."""
    causes = [
        line.strip()
        for e in results
        if not e.passed
        for line in e.report.splitlines()
        if line.strip().startswith(CAUSE)
    ]

    def rank(cause: str) -> tuple[int, int]:
        number = ASSIGNMENT_NUMBER.search(cause)
        return (int(number.group(1)) if number else 99, 0 if "is missing" in cause else 1)

    return min(causes, key=rank) if causes else None  # min keeps the first of equals


def print_table(name: str, results: list[Exercise], problems: list[str]) -> None:
    """The exercises, their points and what failed. One CAUSE explained once, first, and
    each exercise it explains points to it (issue 53, item 2: a learner with one function
    of 05 written read up to five CAUSE lines under each later exercise)."""
    width = max(len(e.grade_id) for e in results)
    first = first_cause(results)
    if first is not None:
        print("\n".join(wrapped(f"Fix first: {first.removeprefix(CAUSE)}")))
        print()
    blamed = m.group(1) if first and (m := BLAMED.match(first)) else "it"
    print(f"{'exercise':<{width}}  {'points':>9}  result  section")
    for e in results:
        verdict = "pass" if e.passed else "FAIL"
        row = f"{e.grade_id:<{width}}  {e.points:>4g} / {e.max_points:<3g} {verdict:<7} "
        print("\n".join(wrapped(row + e.section, hang=len(row))))  # under the section
        if e.passed:
            continue
        lines = e.report.splitlines()[1:]
        causes = [line for line in lines if line.strip().startswith(CAUSE)]
        if first is not None and any(line.strip() == first for line in causes):
            causes = [f'  {CAUSE}{blamed}: see "Fix first" above.']
        # The cause first, as the grader's report puts it (its failures follow from it).
        for line in causes[:1] + [line for line in lines if not line.strip().startswith(CAUSE)]:
            print("\n".join(wrapped(line, width + 4)))
    total, full = sum(e.points for e in results), sum(e.max_points for e in results)
    for problem in problems:
        print("\n".join(wrapped(f"note: {problem}")))
    print(f"{name}: {total:g} of {full:g} points")


def check(notebook: Path, sandboxed: bool = True) -> int:
    root = course_root()
    if not is_course_directory(root):
        # No path in it: on a class's hub the package's folder means nothing to a student.
        raise FileNotFoundError(
            "course check grades on the course's references and hidden checks, and this "
            "installation has no course directory: in a class they stay with your "
            "instructor, who grades what you submit. Press Validate, or run `course "
            f"validate {notebook}`, to run every check it cell."
        )
    notebook = found_notebook(notebook)
    for kept in ("release", "source"):  # the course's own copies: check writes beside it
        if notebook.is_relative_to((root / kept).resolve()):
            raise FileNotFoundError(
                f"{notebook} is the course's {kept}/ copy, which is not yours to grade "
                f"(its feedback would be written into {kept}/): check your copy, e.g. "
                f"work/{notebook.parent.name}/{notebook.name} (`make lab` makes it)"
            )
    assignment, name = locate(notebook, root)
    try:  # walk 60: a notebook that is not JSON ended in nbformat's traceback
        nbformat.read(notebook, as_version=4)
    except (ValueError, UnicodeDecodeError, nbformat.ValidationError) as error:
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise FileNotFoundError(
            f"{notebook} cannot be read as a notebook ({reason}): fix it, or start again "
            f"from a copy of release/{assignment}/{name}.ipynb"
        ) from error
    start = time.perf_counter()
    stages = tqdm(
        total=3,
        desc=f"checking {notebook.name}",
        disable=not sys.stderr.isatty(),
        **bar_size(sys.stderr),  # a terminal of no size still shows it
        bar_format="{desc}: {n}/{total} {postfix} [{elapsed}]",
    )
    with tempfile.TemporaryDirectory(prefix="course-check-") as scratch, stages:
        stages.set_postfix_str("copying the course")
        course = ScratchCourse(Path(scratch))
        # A learner's own work: the public inputs of the committed references/.
        with (course.root / "nbgrader_config.py").open("a") as config:
            config.write("\nc.SeedHiddenChecks.public = True  # course check\n")
        course.submit(STUDENT, assignment, {f"{name}.ipynb": notebook.read_bytes()})
        if notebook.parent.parent == root / "work":
            export(root, only=assignment, quiet=True)  # your latest earlier code
        carried = {p.name: p.read_bytes() for p in notebook.parent.glob(f"{module_name('*')}.py")}
        course.submit(STUDENT, assignment, {f"{name}.ipynb": notebook.read_bytes(), **carried})
        stages.update(1)
        stages.set_postfix_str("grading (nbgrader autograde, sandboxed)")
        [status] = autograde.grade(
            course.root, assignment, log=lambda _: None, sandboxed=sandboxed, workers=1
        )
        stages.update(1)
        if not status.graded:
            print(f"{notebook.name} could not be graded: {'; '.join(status.problems)}")
            return 1
        graded = course.root / "autograded" / STUDENT / assignment / f"{name}.ipynb"
        results = exercises(graded)
        stages.set_postfix_str("feedback")
        course.nbgrader("generate_feedback", assignment, "--force")
        feedback = course.root / "feedback" / STUDENT / assignment / f"{name}.html"
        shutil.copyfile(feedback, notebook.with_suffix(".feedback.html"))
        stages.update(1)
    print_table(name, results, status.problems)
    record = {
        "assignment": assignment,
        "notebook": name,
        "checked_at": time.time(),
        "exercises": [asdict(e) for e in results],
    }
    notebook.with_suffix(".check.json").write_text(json.dumps(record, indent=1) + "\n")
    if notebook.parent.parent == root / "work":
        write_start_page(root)  # the start page shows the learner's progress
    print(
        f"feedback: {notebook.with_suffix('.feedback.html')} ({time.perf_counter() - start:.0f} s)"
    )
    return 0 if all(e.passed for e in results) and not status.problems else 1


def _validated(validator, notebook: Path, tries: int = 3) -> dict:
    """validator.validate(notebook), started again when its kernel could not bind a port:
    jupyter_client picks free TCP ports and binds them a moment later, and another process
    (a second Validate, a grading run) can take one in between. Validate writes nothing, so
    running it again loses nothing."""
    import errno

    import zmq

    for attempt in range(tries):
        try:
            return validator.validate(str(notebook))
        except zmq.error.ZMQError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def validate(notebook: Path, out=None) -> int:
    """`course validate <notebook>`: nbgrader's Validate, as the lab's button runs it.

    Restarts a kernel, runs every cell, and lists each cell that raised or wrote to stderr
    (a failed "check it"), with the course's settings (`Validator.validate_all`). Unlike
    `nbgrader validate`, which exits 0 whatever it finds, exits 1 when any cell failed.
    """
    from nbgrader.validator import Validator

    out = out or sys.stdout
    notebook = found_notebook(notebook)
    results = _validated(Validator(config=validate_settings(course_root())), notebook)
    if results.get("type_changed"):
        print(f"{notebook.name}: a cell's type was changed; restore it:", file=out)
        for cell in results["type_changed"]:
            print(
                f"  {cell['old_type']} -> {cell['new_type']}: {first_line(cell['source'])}",
                file=out,
            )
        return 1
    if results.get("changed"):
        print(f"{notebook.name}: {len(results['changed'])} locked cell(s) were edited:", file=out)
        for cell in results["changed"]:
            print(f"  {first_line(cell['source'])}", file=out)
        return 1
    failed = results.get("failed", [])
    headings = cell_headings(nbformat.read(notebook, as_version=4))
    for cell in failed:
        print(f"FAILED  {first_line(cell['source'])}", file=out)
        if m := KNOCK_ON.search(cell["raw_error"]):
            heading = headings.get(m.group(1), "")
            print(
                f"        follows from the cell that failed {heading or 'above'}: fix it first",
                file=out,
            )
        for line in last_lines(cell["raw_error"]):
            print(f"        {line}", file=out)
    if failed:
        print(f"{notebook.name}: validation failed on {len(failed)} cell(s)", file=out)
        return 1
    print(f"{notebook.name}: every cell ran and every check it passed", file=out)
    return 0


def validate_settings(root: Path):
    """The nbgrader settings Validate runs with: the course directory's nbgrader_config.py,
    as the lab's button reads it there; with no course directory (a student on a class's
    hub), the nbgrader_config.py of the Jupyter set-up the hub gave them (JUPYTER_CONFIG_PATH),
    as the button reads it there."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    if is_course_directory(root):
        folders = [root]
    else:  # lowest priority first, each merged over the one before
        folders = [Path(p) for p in reversed(jupyter_config_path())]
    config = Config()
    for folder in folders:
        if (folder / "nbgrader_config.py").is_file():
            config.merge(PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config())
    return config


# A NameError that follows from an earlier failed cell says which (course.notebook).
KNOCK_ON = re.compile(r"an earlier cell that sets it failed \(`(.*?)`\)")


def cell_headings(nb) -> dict[str, str]:
    """{a code cell's first line: "under <the heading above it>"}, as a learner finds it."""
    headings, label = {}, ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            label = section_of(cell.source, label)
        elif label:
            headings.setdefault(first_line(cell.source), f'under "{label}"')
    return headings


def last_lines(error: str, keep: int = 3) -> list[str]:
    """The end of an error: the exception and its message, not the whole traceback."""
    plain = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", error)
    lines = [line.rstrip() for line in plain.splitlines() if line.strip()]
    return lines[-keep:]
