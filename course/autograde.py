"""`course grade`: autograde every submission of an assignment and say what needs attention.

nbgrader grades what it can and logs the rest among hundreds of lines: a notebook saved
under another name is "skipped", an unreadable one is a traceback, a crashed kernel
deletes the student's autograded folder. This command runs the same `nbgrader autograde`,
then reports one line per submission: its score, or why it was not graded, and which
cells timed out. Submissions are only read, never changed.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.reader import NotJSONError

from course.build import nbgrader
from course.paths import gradebook_url, tool_env


@dataclass
class Status:
    student: str
    score: float | None = None  # None: not graded
    max_score: float = 0.0
    problems: list[str] = field(default_factory=list)
    kept: bool = False  # unchanged since it was last graded, so not regraded

    @property
    def graded(self) -> bool:
        return self.score is not None


def expected_notebooks(root: Path, assignment: str) -> list[str]:
    return sorted(p.name for p in (root / "release" / assignment).glob("*.ipynb"))


def preflight(folder: Path, expected: list[str]) -> list[str]:
    """Problems that stop a submission's notebooks from being graded, in words."""
    problems = []
    present = {p.name for p in folder.glob("*.ipynb")}
    strangers = sorted(present - set(expected))
    for name in expected:
        path = folder / name
        if name not in present:
            found = (
                f"; found {', '.join(repr(s) for s in strangers)}: rename it" if strangers else ""
            )
            problems.append(f"{name} is missing{found}")
            continue
        try:
            nbformat.validate(nbformat.read(path, as_version=4))
        except (NotJSONError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            problems.append(f"{name} is not valid JSON ({str(exc).splitlines()[0][:120]})")
        except Exception as exc:  # noqa: BLE001 (nbformat raises many kinds)
            problems.append(
                f"{name} is not a valid notebook ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160]})"
            )
    return problems


def interruptions(notebook: Path) -> list[str]:
    """What stopped cells of a graded notebook: timeouts, and where grading was cut off."""
    from course.nbgrader_ext import CUT_OFF

    found = []
    nb = nbformat.read(notebook, as_version=4)
    for index, cell in enumerate(nb.cells):
        name = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
        for out in cell.get("outputs", []):
            if out.get("output_type") != "error":
                continue
            if out.get("ename") == CUT_OFF:
                found.append(f"cut off in {name}: {out.get('evalue')}")
            elif "CellTimeoutError" in "".join([out.get("ename", "")] + out.get("traceback", [])):
                found.append(f"timed out in {name}")
    return found


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


def autograde_with_progress(root: Path, assignment: str, total: int, *flags: str):
    """`nbgrader autograde`, with a text progress bar on stderr fed by nbgrader's log."""
    from tqdm import tqdm

    cmd = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force", *flags]
    proc = subprocess.Popen(
        cmd, cwd=root, env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    done, lines = set(), []
    with tqdm(
        total=total,
        desc=f"grading {assignment}",
        unit="submission",
        disable=total < 2 or not sys.stderr.isatty(),
    ) as bar:
        for line in proc.stderr:
            lines.append(line)
            if "Writing" in line and (found := WRITTEN.search(line)) and found[1] not in done:
                done.add(found[1])
                bar.update(1)
        bar.update(total - bar.n)
    stdout = proc.stdout.read()
    proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, "".join(lines))


WRITTEN = re.compile(r"autograded/([^/]+)/")


def submission_digest(folder: Path) -> str:
    """A fingerprint of a submission's files: a re-run regrades only what changed."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def digests_path(root: Path, assignment: str) -> Path:
    return root / ".nbgrader" / "graded" / f"{assignment}.json"


def grade(
    root: Path,
    assignment: str,
    log=print,
    sandboxed: bool = True,
    workers: int = 1,
    scheduler: str | None = None,
    force: bool = True,
) -> list[Status]:
    """Autograde the submissions of `assignment` in course directory `root`.

    sandboxed: False grades with kernels outside the sandbox, on purpose only.
    workers, scheduler: execute on this many local workers, or on a Dask cluster
    (course.parallel); the gradebook is written by one process either way.
    force: False regrades only submissions that are new or changed since they were graded.
    Raises SandboxUnavailable, before grading anything, where no sandbox can start.
    """
    from course import parallel, sandbox

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
        p.parent.name: Status(p.parent.name, problems=preflight(p, expected)) for p in submitted
    }
    known = (
        json.loads(digests_path(root, assignment).read_text())
        if digests_path(root, assignment).exists()
        else {}
    )
    digests = {p.parent.name: submission_digest(p) for p in submitted}
    unchanged = {
        s
        for s, d in digests.items()
        if not force and known.get(s) == d and (root / "autograded" / s / assignment).is_dir()
    }
    todo = [s for s, st in statuses.items() if not st.problems and s not in unchanged]

    flags = [f"--GuardedExecute.sandbox={sandboxed}"]
    if todo and (workers > 1 or scheduler):
        cache, failed = parallel.execute_all(root, assignment, todo, workers, scheduler, sandboxed)
        for student, reason in failed.items():
            statuses[student].problems.append(f"not graded: {reason}")
        todo = [s for s in todo if s not in failed]
        flags = [f"--GuardedExecute.replay_from={cache}", "--JudgeHiddenChecks.enabled=False"]
    if todo:
        skip = sorted(set(statuses) - set(todo))
        if skip:
            flags.append(f"--CourseDirectory.student_id_exclude={','.join(skip)}")
        proc = autograde_with_progress(root, assignment, len(todo), *flags)
        log_path = root / ".nbgrader" / "logs" / f"autograde-{assignment}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(proc.stdout + proc.stderr)
        if "Exception while loading config file" in proc.stderr:
            # nbgrader then grades with its defaults: no sandbox, no verdicts. Never report it.
            raise RuntimeError(
                f"nbgrader_config.py failed to load; nothing was graded correctly. See {log_path}"
            )
    graded = scores(root, assignment)
    for student, status in statuses.items():
        out_dir = root / "autograded" / student / assignment
        if status.problems:
            continue  # not graded: the preflight or the worker says why
        if not out_dir.is_dir():
            status.problems.append(
                "the kernel died while grading (a crash, os._exit or out "
                "of memory); nbgrader removed its autograded copy"
            )
            continue
        for name in expected:
            status.problems += [f"{name}: {what}" for what in interruptions(out_dir / name)]
        if student in unchanged:
            status.kept = True
        else:
            known[student] = digests[student]
        status.score, status.max_score = graded.get(student, (0.0, 0.0))
    digests_path(root, assignment).parent.mkdir(parents=True, exist_ok=True)
    digests_path(root, assignment).write_text(json.dumps(known, indent=1, sort_keys=True))
    return [statuses[s] for s in sorted(statuses)]


def print_table(statuses: list[Status], out=sys.stdout) -> None:
    width = max([len(s.student) for s in statuses] + [7])
    print(f"{'student':<{width}}  {'score':>13}  notes", file=out)
    for s in statuses:
        score = f"{s.score:g} / {s.max_score:g}" if s.graded else "NOT GRADED"
        notes = s.problems + (["unchanged since it was graded: kept"] if s.kept else [])
        print(f"{s.student:<{width}}  {score:>13}  {'; '.join(notes)}", file=out)
    bad = [s for s in statuses if not s.graded]
    print(f"{len(statuses) - len(bad)} graded, {len(bad)} not graded", file=out)
