"""`course grade`: autograde every submission of an assignment and say what needs attention.

nbgrader grades what it can and logs the rest among hundreds of lines: a notebook saved
under another name is "skipped", an unreadable one is a traceback, a crashed kernel
deletes the student's autograded folder. This command grades with nbgrader's own
Autograde converter, on parallel workers (course.grader.parallel), records the grades in one
process (course.grader.recording), then reports one line per submission: its score, or why it
was not graded, and which cells timed out. Submissions are only read, never changed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.reader import NotJSONError

from course.grader.cluster import Scheduler
from course.paths import gradebook_url, tool_env


@dataclass
class Status:
    student: str
    score: float | None = None  # None: not graded
    max_score: float = 0.0
    problems: list[str] = field(default_factory=list)
    kept: bool = False  # unchanged since it was last graded, so not regraded
    interrupted: list[str] = field(default_factory=list)  # cells timed out or cut off
    # Why it cannot be graded as submitted: it is recorded as 0 with these reasons (the
    # released notebook graded in its place, opening with them: stand_in).
    zeroed: list[str] = field(default_factory=list)

    @property
    def graded(self) -> bool:
        return self.score is not None


def expected_notebooks(root: Path, assignment: str) -> list[str]:
    return sorted(p.name for p in (root / "release" / assignment).glob("*.ipynb"))


def printable(text: object, limit: int = 300) -> str:
    """What a student wrote (an error message, a cell's metadata), made safe for the
    instructor's table and logs: one line, control characters and escape codes shown as
    escapes, at most `limit` characters."""
    text = str(text)
    safe = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return safe + ("..." if len(text) > limit else "")


def unreadable_bookkeeping(folder: Path) -> list[str]:
    """nbgrader's own files of a submission that it would read whole, through links,
    blocking: such a submission cannot even be recorded (not graded, with the reason)."""
    from course.grader.recording import BOOKKEEPING, BOOKKEEPING_BYTES

    problems = []
    for name in BOOKKEEPING:
        try:
            info = os.lstat(folder / name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size > BOOKKEEPING_BYTES:
            problems.append(
                f"{name} is not a regular file of at most {BOOKKEEPING_BYTES} bytes: "
                "nbgrader would read it whole (remove it, then collect again)"
            )
    return problems


def json_kind(value) -> str:
    for kind, words in ((bool, "a boolean"), (int | float, "a number"), (str, "a string"),
                        (dict, "an object"), (list, "a list")):  # fmt: skip
        if isinstance(value, kind):
            return words
    return "null"


def metadata_problems(nb) -> list[str]:
    """What in a notebook's nbgrader metadata stops nbgrader from grading it (a grade id
    that is not a string, points that are not a number, two cells with one grade id...),
    in words; the cells are counted from 1."""
    from course.grader.sanitize import NBGRADER_TYPES

    problems, seen = [], set()
    for number, cell in enumerate(nb.cells, start=1):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        if not isinstance(meta, dict):
            problems.append(f"cell {number}: its nbgrader metadata is not an object")
            continue
        for key, kind in NBGRADER_TYPES.items():
            value = meta.get(key)
            wrong = isinstance(value, bool) if kind is not bool else False
            if key in meta and (wrong or not isinstance(value, kind)):
                problems.append(
                    f"cell {number}: its nbgrader {key} is {json_kind(value)} "
                    f"{printable(json.dumps(value, default=str), 40)}"
                )
        graded = any(meta.get(k) is True for k in ("grade", "solution", "task"))
        grade_id = meta.get("grade_id")
        if graded and isinstance(grade_id, str):
            if grade_id in seen:
                problems.append(
                    f"cell {number}: a second cell with grade id {printable(grade_id, 60)!r}"
                )
            seen.add(grade_id)
        elif graded and "grade_id" not in meta:
            problems.append(f"cell {number}: a graded cell without a grade id")
        points = meta.get("points")
        if (
            meta.get("grade") is True
            and isinstance(points, int | float)
            and not (math.isfinite(points) and points >= 0)
        ):
            problems.append(f"cell {number}: its nbgrader points are {printable(points, 40)}")
    return problems[:5] + ([f"and {len(problems) - 5} more"] if len(problems) > 5 else [])


def preflight(folder: Path, expected: list[str]) -> list[str]:
    """Problems that stop a submission's notebooks from being graded as submitted, in words
    (the submission is then recorded as 0 with them). Nothing is read through a link, nor
    beyond the size a submission may have. nbgrader's own unreadable files are
    unreadable_bookkeeping's."""
    from course.grader.files import MAX_SUBMISSION_BYTES, read_regular, regular_files

    problems = []
    files, others = regular_files(folder)
    problems += [printable(o) for o in others if o.split("'")[1] in expected]
    present = {p.name for p in files if p.parent == folder and p.suffix == ".ipynb"}
    if sum(p.lstat().st_size for p in files) > MAX_SUBMISSION_BYTES:
        return [f"its files weigh more than {MAX_SUBMISSION_BYTES // 2**20} MB in all"]
    strangers = sorted(present - set(expected))
    for name in expected:
        path = folder / name
        if name not in present:
            if (folder / name).is_symlink() or (folder / name).exists():
                continue  # a link or a special file: said above
            found = (
                f"; found {', '.join(repr(printable(s, 60)) for s in strangers)}: rename it"
                if strangers
                else ""
            )
            problems.append(f"{name} is missing{found}")
            continue
        try:
            text = read_regular(path, MAX_SUBMISSION_BYTES).decode("utf-8")
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
            problems += [f"{name}: {p}" for p in metadata_problems(nb)]
        except (NotJSONError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            first = printable((str(exc).splitlines() or [""])[0], 120)
            problems.append(f"{name} is not valid JSON ({first})")
        except Exception as exc:  # noqa: BLE001 (nbformat raises many kinds)
            problems.append(
                f"{name} is not a valid notebook ({type(exc).__name__}: "
                f"{printable((str(exc).splitlines() or [''])[0], 160)})"
            )
    return problems


def described(interruptions: list[dict]) -> list[str]:
    """Notes for the instructor's table from what a worker saw stop cells (never read back
    from a notebook, where a student could write anything); grade ids and headings are
    escaped. A cell is named one way, as a person finds it in the notebook and in the
    report's section column: the heading above it, and its grade id if it has one (a cell
    number, "cell 12", named nothing the learner sees)."""
    notes = []
    for event in interruptions:
        cell, section = event.get("cell"), event.get("section")
        where = printable(cell, 60) if cell else "a cell"
        where += f' under "{printable(section, 80)}"' if section else " above the first heading"
        note = f"{printable(event.get('notebook', ''), 60)}.ipynb: {event.get('kind')} in {where}"
        why = event.get("why")
        notes.append(f"{note}: {printable(why, 160)}" if why else note)
    return notes


def nbgrader(
    root: Path, *args: str, check: bool = True, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run an nbgrader command in `root` (a course directory, or a student's home for
    fetch and submit), output captured: the one way the package runs nbgrader's CLI.

    check: raise RuntimeError, with nbgrader's output, if the command fails.
    """
    proc = subprocess.run(
        # `python -m nbgrader`, after `import course`: without the 1.5 s of CPU that an IRI
        # grammar nbformat never uses costs each process at import (course/__init__.py).
        [sys.executable, "-c", "import course, nbgrader.apps.nbgraderapp as a; a.main()", *args],
        cwd=root,
        env=env or tool_env(),
        capture_output=True,
        text=True,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@dataclass
class CellGrade:
    grade_id: str
    score: float
    max_score: float


def cell_grades(root: Path, assignment: str, notebook: str) -> dict[str, list[CellGrade]]:
    """{student: [grade of each grade cell, in the notebook's order]} from the gradebook,
    for the students with a graded submission."""
    from nbgrader.api import Gradebook, MissingEntry

    result = {}
    with Gradebook(gradebook_url(root)) as gb:
        order = [c.name for c in gb.find_notebook(notebook, assignment).grade_cells]
        for student in gb.students:
            try:
                nb = gb.find_submission_notebook(notebook, assignment, student.id)
            except MissingEntry:
                continue
            grades = {
                g.name: CellGrade(g.name, float(g.score), float(g.max_score)) for g in nb.grades
            }
            result[student.id] = [grades[name] for name in order if name in grades]
    return result


def scores(root: Path, assignment: str) -> dict[str, tuple[float, float]]:
    """{student: (score, max score)} over the assignment's notebooks, from the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    result = {}
    with Gradebook(gradebook_url(root)) as gb:
        for student in gb.students:
            try:
                sub = gb.find_submission(assignment, student.id)
            except MissingEntry:
                continue
            result[student.id] = (float(sub.score), float(sub.max_score))
    return result


def assignment_in_gradebook(root: Path, assignment: str) -> bool:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(gradebook_url(root)) as gb:
        try:
            return bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return False


def submission_digest(folder: Path) -> str:
    """A fingerprint of a submission's files: a re-run regrades only what changed. Links
    count by their target's name, never by what they point to."""
    from course.grader.files import regular_files

    digest = hashlib.sha256()
    files, others = regular_files(folder)
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for other in others:
        digest.update(other.encode() + b"\0")
    return digest.hexdigest()


FAILED = "its grading failed"


def stand_in(root: Path, assignment: str, reasons: list[str]) -> dict[str, bytes]:
    """What is graded in place of a submission that cannot be graded as submitted: the
    released notebooks, each opening with why. It scores 0, the student's feedback says
    why, and no earlier grade of that student stands for this newer submission."""
    from html import escape

    from nbformat.v4 import new_markdown_cell

    items = "".join(f"<li>{escape(printable(r, 400))}</li>" for r in reasons)
    why = new_markdown_cell(
        "<p><strong>This submission could not be graded as submitted, and is recorded as "
        f"0.</strong> Fix these, then submit again:</p><ul>{items}</ul>"
    )
    files = {}
    for name in expected_notebooks(root, assignment):
        nb = nbformat.read(root / "release" / assignment / name, as_version=4)
        nb.cells.insert(0, why)
        files[name] = nbformat.writes(nb).encode("utf-8")
    return files


def grade_and_record(
    root: Path,
    assignment: str,
    students: list[str],
    statuses: dict[str, Status],
    workers: int,
    scheduler: Scheduler | None,
    sandboxed: bool,
) -> None:
    """Grade `students` on workers (course.grader.parallel) and record each as it finishes, in
    this process alone (course.grader.recording); a text progress bar on stderr. nbgrader's log
    of every submission is kept in .nbgrader/logs/autograde-<assignment>.log. A student whose
    status is `zeroed` is graded by its stand_in. A submission whose grading fails is graded
    again by its stand_in, with the reason: no earlier grade stands for it. One the cluster
    failed (course.grader.parallel.lost) is reported not graded, and graded by the next run."""
    from tqdm import tqdm

    from course.grader import parallel
    from course.grader.nbgrader_ext import GraderFault
    from course.grader.recording import Recorder
    from course.terminal import bar_size

    try:
        config = parallel.load_config(root)
    except Exception as exc:
        # nbgrader would grade with its defaults: no sandbox, no verdicts. Never.
        raise RuntimeError(f"nbgrader_config.py failed to load; nothing was graded: {exc}") from exc
    logs = []
    with (
        Recorder(root, assignment, config) as recorder,
        tqdm(
            total=len(students),
            desc=f"grading {assignment}",
            unit="submission",
            disable=not sys.stderr.isatty(),  # a log or a pipe gets the table only
            **bar_size(sys.stderr),  # a terminal of no size still shows it
            bar_format="{desc}: {n}/{total} graded [{elapsed}<{remaining}]{postfix}",
        ) as bar,
    ):
        done: set[str] = set()

        def at(checks: dict[str, str]) -> None:  # each worker's submission and check
            now = [
                f"{printable(s, 40)}: {c or 'starting'}" for s, c in checks.items() if s not in done
            ]
            bar.set_postfix_str("; ".join(now))

        todo, failed = list(students), {}
        while todo:
            stand_ins = {
                s: stand_in(root, assignment, statuses[s].zeroed)
                for s in todo
                if statuses[s].zeroed
            }
            for job, result in parallel.grade_all(
                root, assignment, todo, workers, scheduler, sandboxed, stand_ins, on_progress=at
            ):
                student = job["student"]
                done.add(student)
                lines = result.get("log", "").splitlines()
                log = "\n".join(printable(line, 2000) for line in lines)
                logs.append(f"==> {printable(student)}\n{log}")
                if "fault" in result:
                    # The grader's own failure: stop, and say which check (exit status 2).
                    write_log(root, assignment, logs)
                    raise GraderFault(f"{result['fault']}; grading stopped at {student}")
                if "error" in result:
                    why = f"{FAILED}: {printable(result['error'])}"
                    # The released notebook failed too, or the cluster did: not the
                    # student's doing, and grading their stand-in would zero them for it.
                    if student in stand_ins or result.get("cluster"):
                        statuses[student].problems.append(f"not graded: {why}")
                        bar.update(1)  # done with, as not graded
                    else:
                        failed[student] = why  # graded again below, as its stand-in
                    continue
                try:
                    recorder.record(student, result["files"])
                    statuses[student].interrupted = described(result.get("interruptions", []))
                except Exception as exc:  # noqa: BLE001 (reported; the gradebook rolled back)
                    statuses[student].problems.append(
                        f"not graded: its grades could not be recorded ({type(exc).__name__}: "
                        f"{str(exc)[:200]})"
                    )
                bar.update(1)
            # A submission whose grading failed is graded again, as its stand-in.
            todo = sorted(failed)
            for student in todo:
                statuses[student].zeroed.append(failed.pop(student))
    write_log(root, assignment, logs)


def write_log(root: Path, assignment: str, logs: list[str]) -> None:
    log_path = root / ".nbgrader" / "logs" / f"autograde-{assignment}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("\n".join(sorted(logs)))


def digests_path(root: Path, assignment: str) -> Path:
    return root / ".nbgrader" / "graded" / f"{assignment}.json"


def grade(
    root: Path,
    assignment: str,
    log=print,
    sandboxed: bool = True,
    workers: int | None = None,
    scheduler: Scheduler | None = None,
    force: bool = False,
) -> list[Status]:
    """Autograde the submissions of `assignment` in course directory `root`.

    sandboxed: False grades with kernels outside the sandbox, on purpose only.
    workers, scheduler: grade on this many local worker processes (None: one per core), or
    on a Dask cluster (course.grader.parallel); only this process writes the gradebook
    (course.grader.recording). These defaults are the command line's (course.cli).
    force: False regrades only submissions that are new or changed since they were graded.
    Raises SandboxUnavailable, before grading anything, where no sandbox can start.
    """
    from course.grader import sandbox
    from course.grader.files import regular_files
    from course.grader.nbgrader_internals import skip_the_alembic_subprocess

    skip_the_alembic_subprocess()  # a new gradebook (course check's) asks for its schema
    workers = workers or os.cpu_count() or 1

    if sandboxed and not scheduler:
        sandbox.check_available()  # a cluster's workers check their own
    if not sandboxed:
        log("warning: grading WITHOUT the sandbox: student code runs with your rights")
    submitted = sorted(p for p in (root / "submitted").glob(f"*/{assignment}") if p.is_dir())
    if not submitted:
        raise FileNotFoundError(f"no submissions in {root / 'submitted'}/*/{assignment}")
    expected = expected_notebooks(root, assignment)
    if not expected:
        raise FileNotFoundError(f"no notebooks in release/{assignment}: run `make release`")
    if not assignment_in_gradebook(root, assignment):
        log(f"adding {assignment} and its grade cells to the gradebook")
        nbgrader(root, "generate_assignment", assignment, "--force")
    statuses = {
        p.parent.name: Status(
            p.parent.name, problems=unreadable_bookkeeping(p), zeroed=preflight(p, expected)
        )
        for p in submitted
    }
    known = (
        json.loads(digests_path(root, assignment).read_text())
        if digests_path(root, assignment).exists()
        else {}
    )
    # {student: {"digest", "interrupted"}} of the last run (a bare digest before 2026-12).
    known = {s: v if isinstance(v, dict) else {"digest": v} for s, v in known.items()}
    digests = {p.parent.name: submission_digest(p) for p in submitted}
    unchanged = {
        s
        for s, d in digests.items()
        if not force
        and known.get(s, {}).get("digest") == d
        and (root / "autograded" / s / assignment).is_dir()
    }
    todo = [s for s, st in statuses.items() if not st.problems and s not in unchanged]

    if todo:
        grade_and_record(root, assignment, todo, statuses, workers, scheduler, sandboxed)
    graded = scores(root, assignment)
    for student, status in statuses.items():
        out_dir = root / "autograded" / student / assignment
        if status.problems:
            continue  # not graded: the preflight or the worker says why
        if not out_dir.is_dir():
            status.problems.append("not graded: its autograded folder is missing")
            continue
        if student in unchanged:
            status.kept = True
            status.interrupted = list(known[student].get("interrupted", []))
            status.zeroed = list(known[student].get("zeroed", []))
        elif not any(why.startswith(FAILED) for why in status.zeroed):
            known[student] = {
                "digest": digests[student],
                "interrupted": status.interrupted,
                "zeroed": status.zeroed,
            }
        else:  # a 0 for a grading that failed is regraded by the next run, changed or not
            known.pop(student, None)
        status.problems += [f"graded as 0: {why}" for why in status.zeroed]
        status.problems += status.interrupted
        status.score, status.max_score = graded.get(student, (0.0, 0.0))
        links = regular_files(root / "submitted" / student / assignment)[1]
        status.problems += [printable(o) for o in links]  # said, never followed
    digests_path(root, assignment).parent.mkdir(parents=True, exist_ok=True)
    digests_path(root, assignment).write_text(json.dumps(known, indent=1, sort_keys=True))
    return [statuses[s] for s in sorted(statuses)]


def print_table(statuses: list[Status], out=sys.stdout) -> None:
    width = max([len(s.student) for s in statuses] + [7])
    print(f"{'student':<{width}}  {'score':>13}  notes", file=out)
    for s in statuses:
        score = f"{s.score:g} / {s.max_score:g}" if s.graded else "NOT GRADED"
        notes = s.problems + (["unchanged since it was graded: kept"] if s.kept else [])
        notes = [printable(n, 400) for n in notes]
        print(f"{printable(s.student):<{width}}  {score:>13}  {'; '.join(notes)}", file=out)
    bad = [s for s in statuses if not s.graded]
    zeroed = sum(1 for s in statuses if s.graded and s.zeroed)
    as_zero = f" ({zeroed} as 0: could not be graded as submitted)" if zeroed else ""
    print(f"{len(statuses) - len(bad)} graded{as_zero}, {len(bad)} not graded", file=out)
