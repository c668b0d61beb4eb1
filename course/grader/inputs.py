"""Inputs nobody knows in advance: each grading run's hidden checks draw their inputs from
a secret of the instructor's course, and the grader computes the references itself.

- The secret: `.nbgrader/secret` in the course directory (created on first use, mode 0600;
  `.nbgrader/` is in .gitignore, so it is never committed nor released). The sandbox hides
  the course directory from every kernel.
- A check's seed: HMAC-SHA256(secret, check name + a digest of the submission's regular
  files, submission_salt), drawn again (from the secret, in order) where the source
  solution itself fails the check on it. The same submission graded twice gets the same
  inputs, so the same scores, under `course grade` and plain `nbgrader autograde` alike;
  a changed one (a resubmission) gets new ones, so what its earlier feedback showed of its
  inputs is worth nothing; nobody without the secret can know them in advance.
- The references for those seeds: the source solutions (trusted code) probed in the
  grader's process by course.grader.sources.compute_references, once per set of seeds,
  sources and package version (cached in `.nbgrader/inputs/`, a grader-only place).
- In a kernel, a grade cell is told only its own check's seed: `SeedHiddenChecks`, before
  execution, puts one line in front of the cell's code; `JudgeHiddenChecks`, after it,
  judges against the references for that seed and puts the cell's code back. The grader
  never reads a seed back from the kernel: a kernel that changes its seed only gets inputs
  nobody graded.
- Workers (local or Dask) get their submission's seeds and references with the task
  (course.grader.parallel), as a file `SHIPPED` of their scratch course.

The committed `references/` (public seeds, course.grader.model.public_seed) serve only
`course check`, where a learner grades their own work (`SeedHiddenChecks.public`), and the
build-sync test.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import secrets
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

from course.checks import checks_by_name
from course.grader import model

SECRET = Path(".nbgrader") / "secret"
CACHE = Path(".nbgrader") / "inputs"
SHIPPED = ".nbgrader/inputs-shipped.json"  # in a worker's scratch course only
REDRAWS = 4  # draws of a check's inputs after the first, where the solution fails it
PACKAGE = Path(__file__).resolve().parent.parent  # the `course` package: its probes


class InputsError(RuntimeError):
    """The grader cannot establish a run's inputs or references: nothing is graded."""


@dataclass
class Inputs:
    """A run's seeds and references: {check name: seed}, {check name: encoded outputs}."""

    public: bool
    seeds: dict[str, int] = field(default_factory=dict)
    references: dict[str, dict] = field(default_factory=dict)

    def reference(self, name: str) -> dict:
        if name not in self.references:
            where = "references/ (run `course references`)" if self.public else "this run"
            raise InputsError(f"no reference values for hidden check {name!r} in {where}")
        return {key: model.decode(value) for key, value in self.references[name].items()}

    def to_json(self) -> str:
        return json.dumps(
            {"public": self.public, "seeds": self.seeds, "references": self.references}
        )

    @classmethod
    def from_json(cls, text: str) -> Inputs:
        data = json.loads(text)
        return cls(bool(data["public"]), dict(data["seeds"]), dict(data["references"]))


# ---------------------------------------------------------------- the secret and seeds


def secret(root: Path) -> bytes:
    """The course's secret, created on first use (mode 0600, never overwritten)."""
    path = Path(root) / SECRET
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
    text = path.read_text().strip()
    if len(text) < 32:
        raise InputsError(f"{path} is not a secret made by the course (delete it to make one)")
    return text.encode()


def seed_of(key: bytes, name: str, salt: str = "") -> int:
    """A check's seed: HMAC-SHA256(secret, check name + salt), as a 63-bit integer; the salt
    is the digest of the submission (submission_salt)."""
    message = name.encode() + b"\0" + salt.encode()
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest()[:8], "big") >> 1


def submission_salt(files: dict[str, bytes]) -> str:
    """A digest of a submission's files (names and bytes): what a student changes when they
    resubmit, a notebook or any file it reads."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return digest.hexdigest()


def checks_of(assignment: str) -> list[model.Check]:
    return sorted(
        (c for c in checks_by_name().values() if c.notebook.split("/")[0] == assignment),
        key=lambda c: c.name,
    )


def _digest(root: Path, assignment: str) -> str:
    """What the references depend on: the assignment's sources and the package's code."""
    digest = hashlib.sha256()
    files = sorted((Path(root) / "source" / assignment).glob("*.pct.py"))
    files += sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    for path in files:
        digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def secret_inputs(root: Path, assignment: str, salt: str = "") -> Inputs:
    """The seeds of grading a submission of `assignment` whose files have `salt`
    (submission_salt), and the references for them (cached)."""
    from course.grader.sources import SolutionFails, compute_references

    root = Path(root)
    key = secret(root)
    seeds = {c.name: seed_of(key, c.name, salt) for c in checks_of(assignment)}
    version = hashlib.sha256(key + b"\0" + _digest(root, assignment).encode()).hexdigest()[:20]
    folder = root / CACHE / f"{assignment}-{version}"
    tag = hashlib.sha256(json.dumps(seeds, sort_keys=True).encode()).hexdigest()[:20]
    cache = folder / f"{tag}.json"
    if cache.exists():
        return Inputs.from_json(cache.read_text())
    # A draw on which the solution itself fails a check (a kink, a near-zero divisor the
    # check's guards missed: the inputs sweep measures how rare) is not the student's
    # doing: that check draws again, from the secret too, so one submission's salt never
    # stops the class.
    redraws = {
        name: [seed_of(key, name, f"{salt}\0redraw {k}") for k in range(1, REDRAWS + 1)]
        for name in seeds
    }
    seeds = dict(seeds)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # what the solution cells print
            computed = compute_references(root, seeds, assignment, redraws)
    except SolutionFails as exc:
        raise InputsError(f"{exc}, on {REDRAWS + 1} draws of its inputs") from exc
    references = {
        name: refs for per_notebook in computed.values() for name, refs in per_notebook.items()
    }
    missing = set(seeds) - set(references)
    if missing:
        raise InputsError(f"the source solutions of {assignment} compute no {sorted(missing)}")
    inputs = Inputs(False, seeds, references)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in (root / CACHE).glob(f"{assignment}-*"):  # other sources, or another secret
        if stale != folder:
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    fd = os.open(cache, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(inputs.to_json())
    return inputs


def public_inputs(root: Path, assignment: str) -> Inputs:
    """The committed references/ and the public seeds: `course check` only."""
    references = {}
    for path in sorted((Path(root) / "references" / assignment).glob("*.json")):
        references.update(json.loads(path.read_text()))
    seeds = {c.name: c.seed() for c in checks_of(assignment)}
    return Inputs(True, seeds, references)


def for_run(root: Path, assignment: str, public: bool, salt: str = "") -> Inputs:
    if public:
        return public_inputs(root, assignment)
    return secret_inputs(root, assignment, salt)


# ---------------------------------------------------------------- in nbgrader's pipeline


def _check_of_cell(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    if meta.get("grade") and not meta.get("solution") and cell.get("cell_type") == "code":
        name = meta.get("grade_id")
        return name if name in checks_by_name() else None
    return None


def seed_line(name: str, seed: int) -> str:
    return f'__import__("course.grader.probe", fromlist=["use_seed"]).use_seed({name!r}, {seed})'


class SeedHiddenChecks(NbGraderPreprocessor):
    """Before Execute: tell each hidden check's grade cell the seed of this run's inputs,
    and hand the run's references to JudgeHiddenChecks (in `resources`)."""

    public = Bool(
        False,
        help="Grade on the public inputs of the committed references/ (`course check`, a "
        "learner's own work); never for a class.",
    ).tag(config=True)
    shipped = Unicode(
        "", help="A file of seeds and references made by the parent (a worker's task)."
    ).tag(config=True)

    course_root = Unicode(
        "",
        help="The course directory whose secret and source solutions make the run's "
        "inputs (nbgrader_config.py sets its own folder; default: $COURSE_ROOT, else the "
        "checkout the package lives in).",
    ).tag(config=True)

    def inputs(self, resources) -> Inputs:
        from course.paths import course_root

        if self.shipped:
            return Inputs.from_json(Path(self.shipped).read_text())
        assignment = resources.get("nbgrader", {}).get("assignment")
        if not assignment:
            raise InputsError("SeedHiddenChecks: nbgrader did not say which assignment this is")
        root = Path(self.course_root) if self.course_root else course_root()
        salt = "" if self.public else self.salt(root, resources)
        return for_run(root, assignment, self.public, salt)

    def salt(self, root: Path, resources) -> str:
        """Where nbgrader itself runs the pipeline (plain `nbgrader autograde`): the salt
        of the submission's folder, as `course grade` computes it from the same files."""
        from nbgrader.coursedir import CourseDirectory

        from course.grader.files import folder_files

        meta = resources.get("nbgrader", {})
        coursedir = CourseDirectory(config=self.config, root=str(root))
        folder = coursedir.format_path(
            coursedir.submitted_directory, meta.get("student", ""), meta.get("assignment", "")
        )
        if not Path(folder).is_dir():
            raise InputsError(f"SeedHiddenChecks: no submission at {folder} to draw inputs for")
        return submission_salt(folder_files(Path(folder)))

    def preprocess(self, nb, resources):
        inputs = self.inputs(resources)
        resources["hidden_inputs"] = inputs
        originals = {}
        for cell in nb.cells:
            name = _check_of_cell(cell)
            if name is None or inputs.public:
                continue
            if name not in inputs.seeds:
                raise InputsError(f"no seed for hidden check {name!r}")
            originals[name] = cell.source
            cell.source = seed_line(name, inputs.seeds[name]) + "\n" + cell.source
        resources["hidden_sources"] = originals
        return nb, resources


def restore_sources(nb, resources) -> None:
    """After execution: each grade cell's code as it was (without the seed line)."""
    originals = resources.get("hidden_sources", {})
    for cell in nb.cells:
        name = _check_of_cell(cell)
        if name in originals:
            cell.source = originals[name]
