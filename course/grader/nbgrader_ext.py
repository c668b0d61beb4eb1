"""nbgrader extensions, configured in nbgrader_config.py.

- `GuardedExecute`: nbgrader's Execute with every kernel in the sandbox, and a kernel that
  dies or will not stop cutting the notebook off instead of failing the whole submission.
- `SeedHiddenChecks` (course.grader.inputs): before execution, each hidden check is told
  the seed of this run's secret inputs.
- `JudgeHiddenChecks`: a preprocessor that runs after execution, in the grader's process,
  and turns each grade cell's probe output into a verdict (report and points). The
  student's kernel never sees a reference value and cannot print its own score.
- `ExerciseFeedback`: the feedback page names exercises and reads well (generate_feedback).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import stat
import tempfile
import time
from pathlib import Path

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import ClearHiddenTests, Execute, NbGraderPreprocessor
from traitlets import Bool, Float, Integer, List

from course.checks import checks_by_name, get_check
from course.grader import judge, model, probe
from course.grader.cells import grade_id_of_test_cell, nbgrader_meta
from course.grader.inputs import Inputs, InputsError, SeedHiddenChecks, restore_sources
from course.grader.kernel_client import PromptReplies
from course.grader.references import load_reference


class GraderFault(RuntimeError):
    """The grader itself failed (a missing or stale reference, a rule or a picture that
    cannot be computed): the run stops, naming the check; nobody scores zero for it."""


FAULTS: list[str] = []  # this process's grader faults, newest last (read by parallel.py)
# What stopped cells of this process's grading, as the grader saw it happen (never read back
# from a notebook a kernel wrote into): {"notebook", "cell" (grade id or None), "index",
# "kind" ("cut off" or "timed out"), "why", "section" (the heading above the cell)}; a
# worker returns them (parallel.py).
INTERRUPTIONS: list[dict] = []
# Called as each hidden check starts, with (notebook, grade id, its rank from 1, how many):
# a local worker shows the parent's progress bar which check it is at (parallel.py).
ON_CHECK: list = []


def probe_payloads(cell) -> list:
    return [
        out["data"][probe.PROBE_MIME]
        for out in cell.get("outputs", [])
        if out.get("output_type") == "display_data"
        and isinstance(out.get("data"), dict)
        and probe.PROBE_MIME in out["data"]
    ]


def well_formed(payload, grade_id: str) -> bool:
    """A payload shaped as the probe writes it: an object naming this check, with an object
    of outputs. Anything else (a list, a number, a string) is tampered output."""
    return (
        isinstance(payload, dict)
        and payload.get("check") == grade_id
        and isinstance(payload.get("outputs", {}), dict)
    )


def why_no_probe(cell, payloads: list[dict], grade_id: str) -> str:
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return f"the cell stopped with {errors[-1].get('ename', 'an error')} before the check ran"
    if len(payloads) > 1:
        return "the cell emitted more than one result: tampered output"
    if payloads and not isinstance(payloads[0], dict):
        return "its results could not be read: tampered output"
    if payloads:
        named = str(payloads[0].get("check"))[:40]
        return f"the cell emitted results for {named!r}, not {grade_id!r}"
    if cell.get("execution_count") is None:
        return "the cell was not run: the kernel had stopped earlier"
    return "the hidden check emitted no results"


def judge_cell(
    cell, inputs: Inputs | None = None, seconds: float | None = None, failures: dict | None = None
) -> None:
    """Replace a hidden-check grade cell's outputs by the grader's verdict, in place.

    inputs: the run's seeds and references (course.grader.inputs); None: the committed ones.
    seconds: how long the grader's executor saw the cell run (None: not timed); a check
    that is `timed` is judged on what the grader observes from it, never the kernel's.
    failures: {check: judge.by_hand_failure} of the notebook's cells judged before this one;
    this cell's is added (Check.trains_through).
    """
    grade_id = grade_id_of_test_cell(cell)
    if grade_id is None or grade_id not in checks_by_name():
        return
    payloads = probe_payloads(cell)
    ok = len(payloads) == 1 and well_formed(payloads[0], grade_id)
    payload = payloads[0] if ok else None
    why = "" if ok else why_no_probe(cell, payloads, grade_id)
    timed = get_check(grade_id).timed
    if payload is not None and timed is not None:
        observed = {key: model.encode(value) for key, value in timed(seconds).items()}
        payload = {**payload, "outputs": {**payload.get("outputs", {}), **observed}}
    # The grader's own reference (the run's, or the committed one): a failure here is loud
    # and stops the run, never a student's zero.
    try:
        if inputs is not None:
            reference = inputs.reference(grade_id)
        else:
            reference = None
            load_reference(get_check(grade_id))
    except Exception as exc:
        fault(grade_id, "its reference could not be loaded", exc)
    try:
        points, text, pngs = judge.verdict_with_pictures(grade_id, payload, why, True, reference)
    except UNREADABLE as exc:
        try:
            points, text = judge.verdict(grade_id, payload, why, reference)
        except UNREADABLE:
            # Results that do not even decode were not written by the probe: zero.
            points, text, pngs = judge.verdict_with_pictures(
                grade_id, None, "its results could not be read: tampered output", True, reference
            )
        else:
            fault(grade_id, "its feedback pictures failed", exc)
    except Exception as exc:
        fault(grade_id, "judging it failed", exc)
    if failures is not None:
        try:
            failures[grade_id] = judge.by_hand_failure(get_check(grade_id), payload, reference)
        except UNREADABLE:
            failures[grade_id] = "its results could not be read"
        points, text = judge.withhold(
            get_check(grade_id), points, text, judge.withheld(get_check(grade_id), failures)
        )
    cell.outputs = [
        new_output("stream", name="stdout", text=text + "\n"),
        *[
            new_output("display_data", data={"image/png": base64.b64encode(png).decode("ascii")})
            for png in pngs
        ],
        new_output(
            "execute_result",
            data={"text/plain": repr(points)},
            execution_count=cell.get("execution_count"),
        ),
    ]


# What a payload that does not decode raises (a list for an array, a huge integer...).
UNREADABLE = (
    TypeError,
    ValueError,
    KeyError,
    AttributeError,
    ArithmeticError,
    IndexError,
    RecursionError,
)


def fault(grade_id: str, what: str, exc: BaseException):
    message = f"check {grade_id!r}: {what} ({type(exc).__name__}: {str(exc)[:300]})"
    FAULTS.append(message)
    raise GraderFault(message) from exc


def judge_notebook(
    nb: NotebookNode, inputs: Inputs | None = None, seconds: dict[int, float] | None = None
) -> NotebookNode:
    """seconds: {cell index: seconds it ran}, as GuardedExecute timed them."""
    failures: dict = {}  # Check.trains_through: the training checks are judged last
    for index, cell in sorted(enumerate(nb.cells), key=lambda pair: _trains(pair[1])):
        judge_cell(cell, inputs, (seconds or {}).get(index), failures)
    return nb


def _trains(cell) -> bool:
    """Whether a cell is the grade cell of a check that trains through others."""
    grade_id = grade_id_of_test_cell(cell)
    return grade_id in checks_by_name() and bool(get_check(grade_id).trains_through)


class SanitizeStudentCells(NbGraderPreprocessor):
    """After judging: nothing a student wrote or displayed runs, loads or links anywhere in a
    page that shows the autograded notebook (the instructor's formgrader, in the
    instructor's own session, and the feedback pages): course.grader.sanitize's policy.
    Markdown cells as released (the instructor's) stay as they are; every other markdown
    or raw cell, and every output but plain text and PNG/JPEG pictures, goes through it. The
    grader's own outputs (verdicts: text and PNG) pass unchanged (rounds 5 and 6)."""

    SAFE = {"metadata", "text/plain", "image/png", "image/jpeg"}

    def preprocess(self, nb, resources):
        from course.grader import sanitize

        released_nb = self._released(resources)
        released = {
            c.source for c in getattr(released_nb, "cells", []) if c.cell_type == "markdown"
        }
        # Metadata too, to what the pages read, typed (round 8): the released notebook's
        # language, and each cell's nbgrader keys, tags and display flags.
        nb.metadata = sanitize.clean_notebook_metadata(
            nb.get("metadata"), getattr(released_nb, "metadata", None) or RELEASED_LANGUAGE
        )
        for cell in nb.cells:
            cell.metadata = sanitize.clean_cell_metadata(cell.get("metadata"))
            if cell.cell_type == "markdown" and cell.source not in released:
                attachments = cell.get("attachments")
                cleaned = sanitize.clean_markdown(cell.source, attachments)
                if cleaned is not None:
                    cell.source = cleaned  # pictures it used are now inside, as data
                    cell.pop("attachments", None)
            elif cell.cell_type == "raw":
                cell.source = sanitize.clean_html(cell.source)
            elif cell.cell_type == "code":
                cell.outputs = sanitize.clean_outputs(cell.outputs, self.SAFE)
            for bundle in cell.get("attachments", {}).values():  # pictures only
                for key in [k for k in bundle if k not in self.SAFE]:
                    del bundle[key]
        return nb, resources

    def _released(self, resources):
        """This notebook as released, read from the course's release/ (None where it cannot
        be read: then every markdown cell is judged)."""
        import nbformat
        from nbgrader.coursedir import CourseDirectory

        meta = resources.get("nbgrader", {})
        if not (meta.get("assignment") and meta.get("notebook")):
            return None
        coursedir = CourseDirectory(config=self.config)
        folder = coursedir.format_path(coursedir.release_directory, ".", meta["assignment"])
        try:
            return nbformat.read(Path(folder) / f"{meta['notebook']}.ipynb", as_version=4)
        except (OSError, ValueError):
            return None


# The language of every course notebook, where its release cannot be read.
RELEASED_LANGUAGE = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}


class JudgeHiddenChecks(NbGraderPreprocessor):
    """After Execute: the verdict of every hidden check, decided outside the kernel, against
    the references of the run's inputs (handed over by SeedHiddenChecks)."""

    def preprocess(self, nb, resources):
        if "hidden_inputs" not in resources:
            raise InputsError(
                "JudgeHiddenChecks needs SeedHiddenChecks before GuardedExecute "
                "(Autograde.autograde_preprocessors in nbgrader_config.py)"
            )
        restore_sources(nb, resources)
        seconds = resources.get("cell_seconds")
        return judge_notebook(nb, resources["hidden_inputs"], seconds), resources


# ---------------------------------------------------------------- execution

# Why a notebook was cut off: GradingCutOff outputs carry one of these, and only these
# are reported to the instructor (a student can raise an error of the same name).
WHY_DIED = (
    "the kernel died while running this cell (a crash, os._exit, or a memory, CPU or process limit)"
)
WHY_STUCK = "this cell did not stop when interrupted after its timeout; the kernel was stopped"
WHY_TIME = "the submission used up its time budget ({:g} s); the kernel was stopped"
WHY_OUTPUT = "the notebook's output passed its budget ({} MB); the kernel was stopped"
WHY_WRITES = "the kernel was stopped: {} (its write budget)"


def data_files(config, assignment: str | None) -> dict:
    """{name: path} of the assignment's own data files: what nbgrader copies from source/
    into every autograded folder (never a notebook, never a link). The kernel's working
    folder holds these, read-only, and nothing the student submitted."""
    import os

    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import find_all_files

    if not assignment:
        return {}
    coursedir = CourseDirectory(config=config)
    source = coursedir.format_path(coursedir.source_directory, ".", assignment)
    found = {}
    for path in find_all_files(source, coursedir.ignore + ["*.ipynb"]):
        if os.path.isfile(path) and not os.path.islink(path):
            found[os.path.relpath(path, source)] = path
    return found


CARRIED_MAX_BYTES = 2**20  # a learner's carried module is a few kB of their own code


def carried_names() -> list[str]:
    """The only carried modules a kernel is given: one per assignment of the course
    (`my_<assignment>.py`, 8 today), whatever else a submission holds. Each is a mount of
    the sandbox: 4,000 empty `my_*.py` files kept the kernel from starting (round 8)."""
    from course.carry import module_name
    from course.checks import assignments

    return [f"{module_name(a)}.py" for a in assignments()]


def carried_files(folder: str | None, scratch: Path) -> dict:
    """{name: path} of the learner's own carried modules (course.carry: `my_<assignment>.py`,
    carried_names) submitted beside the notebook: regular files only (read without
    following links), copied into the grader's `scratch` folder, so the kernel reads a copy
    the grader made."""
    found = {}
    if not folder or not os.path.isdir(folder):
        return found
    for path in (Path(folder) / name for name in carried_names()):
        if not os.path.lexists(path):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # a link or a special file: not the learner's code
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                continue
            data = handle.read(CARRIED_MAX_BYTES + 1)
        if len(data) > CARRIED_MAX_BYTES:
            continue
        copy = scratch / path.name
        copy.write_bytes(data)
        found[path.name] = str(copy)
    return found


class GuardedExecute(PromptReplies, Execute):
    """nbgrader's Execute, with each kernel in the sandbox (course.grader.sandbox), budgets
    per submission (total time, output bytes), and a kernel that dies, ignores the
    interrupt after a timeout or passes a budget cutting the notebook off there: the cells
    after it are not run (their hidden checks score zero, with the reason), the cells
    before it keep their grades, and the notebook says what happened. Replies are
    noticed promptly even where widgets hide them from the poll (course.grader.kernel_client)."""

    sandbox = Bool(
        True,
        help="Run grading kernels in the sandbox. Turn off only on purpose: "
        "`course grade --unsandboxed`, or `--GuardedExecute.sandbox=False`.",
    ).tag(config=True)
    submission_timeout = Float(
        0,
        help="Seconds all the cells of one submission may run in total (0: four cell "
        "timeouts, or $COURSE_SUBMISSION_TIMEOUT).",
    ).tag(config=True)
    output_limit = Integer(
        16 * 2**20, help="Bytes of output (all messages) one submission may produce."
    ).tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._spent: dict[str, float] = {}  # seconds run, per student
        if self.sandbox:
            from course.grader import sandbox

            sandbox.check_available()
            self.kernel_manager_class = sandbox.SandboxedKernelManager

    def budget(self) -> float:
        import os

        if self.submission_timeout > 0:
            return self.submission_timeout
        if os.environ.get("COURSE_SUBMISSION_TIMEOUT"):
            return float(os.environ["COURSE_SUBMISSION_TIMEOUT"])
        # A notebook is meant to run in about a minute with the solutions; a training cell
        # may take three cell timeouts, and the rest one more (240 s by default).
        return 4.0 * float(self.timeout or 60)

    def preprocess(self, nb, resources, retries=None):
        # How long each cell ran, by the grader's clock (JudgeHiddenChecks reads them: 06's
        # speed is timed here, where the kernel cannot reach the clock).
        self._seconds = resources["cell_seconds"] = {}
        self._cut_off = None
        self._student = resources.get("nbgrader", {}).get("student", "")
        self._notebook = resources.get("nbgrader", {}).get("notebook", "")
        self._where: tuple[str | None, int] = (None, 0)
        self._output_bytes = 0
        self._flooded = False
        self._checks = [g for g in map(grade_id_of_test_cell, nb.cells) if g is not None]
        self._sections, label = [], ""  # the heading above each cell, as a person finds it
        for cell in nb.cells:
            if cell.get("cell_type") == "markdown":
                label = section_of(cell.get("source", ""), label)
            self._sections.append(label)
        self._data = (
            data_files(self.config, resources.get("nbgrader", {}).get("assignment"))
            if self.sandbox
            else {}
        )
        scratch = None
        if self.sandbox:  # the learner's carried earlier code, as a copy the grader made
            scratch = tempfile.TemporaryDirectory(prefix="course-carried-")
            folder = resources.get("metadata", {}).get("path")
            self._data.update(carried_files(folder, Path(scratch.name)))
        try:
            return super().preprocess(nb, resources)
        finally:  # the kernel is gone: its copy too (round 8: one folder left per run)
            if scratch is not None:
                scratch.cleanup()

    def _with_env(self, kwargs: dict) -> dict:
        if not self.sandbox:  # the sandbox builds the kernel's whole environment itself
            from course.grader.sandbox import ONE_BLAS_THREAD

            kwargs.setdefault("env", {**os.environ, **ONE_BLAS_THREAD})
        return kwargs

    # nbclient's synchronous start_new_kernel wraps its own async one, not an override's.
    def start_new_kernel(self, **kwargs):
        return super().start_new_kernel(**self._with_env(kwargs))

    async def async_start_new_kernel(self, **kwargs):
        return await super().async_start_new_kernel(**self._with_env(kwargs))

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        if self.sandbox:
            km.data_files = self._data
        return km

    def _left(self) -> float:
        return self.budget() - self._spent.get(self._student, 0.0)

    def _get_timeout(self, cell):
        timeout = super()._get_timeout(cell)
        left = max(1, math.ceil(self._left()))
        return left if timeout is None else min(timeout, left)

    def process_message(self, msg, cell, cell_index):
        if msg.get("msg_type") not in ("status", "execute_input"):
            self._output_bytes += len(json.dumps(msg.get("content", {}), default=str))
            if self._output_bytes > self.output_limit:
                self._flooded = True
                return None  # dropped: the cell is cut off once it ends
        return super().process_message(msg, cell, cell_index)

    def _note(self, kind: str, why: str = "") -> None:
        grade_id, index = self._where
        section = self._sections[index] if index < len(self._sections) else ""
        INTERRUPTIONS.append(
            {
                "notebook": self._notebook,
                "cell": grade_id,
                "index": index,
                "kind": kind,
                "why": why,
                "section": section,
            }
        )

    async def _async_handle_timeout(self, timeout, cell=None):
        self._note("timed out")
        return await super()._async_handle_timeout(timeout, cell)

    def preprocess_cell(self, cell, resources, index):
        if self._cut_off is not None:
            return cell, resources  # not run: the kernel is gone
        self._where = (nbgrader_meta(cell).get("grade_id"), index)
        if grade_id_of_test_cell(cell) is not None:
            rank = self._checks.index(grade_id_of_test_cell(cell)) + 1
            for report in ON_CHECK:
                report(self._notebook, grade_id_of_test_cell(cell), rank, len(self._checks))
        if cell.get("cell_type") == "code" and self._left() <= 0:
            return self._cut(cell, resources, WHY_TIME.format(self.budget()), ran=False)
        started = time.monotonic()
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
            self._seconds[index] = time.monotonic() - started
        except (DeadKernelError, CellTimeoutError) as exc:
            over = getattr(self.km, "over_budget", None)
            if over:
                what = WHY_WRITES.format(over)
            elif self._flooded:
                what = WHY_OUTPUT.format(self.output_limit // 2**20)
            elif isinstance(exc, DeadKernelError):
                what = WHY_DIED
            elif self._left() - (time.monotonic() - started) <= 0:
                what = WHY_TIME.format(self.budget())
            else:
                what = WHY_STUCK
            return self._cut(cell, resources, what)
        finally:
            spent = self._spent.get(self._student, 0.0) + time.monotonic() - started
            self._spent[self._student] = spent
            self._final(index)
        if self._flooded:
            return self._cut(cell, resources, WHY_OUTPUT.format(self.output_limit // 2**20))
        if cell.get("cell_type") == "code":
            cell.outputs = coalesce_streams(cell.outputs)
        return cell, resources

    def _final(self, index: int) -> None:
        """A cell's outputs are final when it ends: no later cell may rewrite them through
        a display id (nbclient's `_display_id_map` lets any later `display` or
        `update_display` of the same id replace them in place). Round 15: a grade cell
        showed an empty result quickly, under the grader's clock, and a later cell wrote
        the real one into it. It also keeps coalesce_streams' merging from leaving the
        map's output positions stale."""
        for places in self._display_id_map.values():
            places.pop(index, None)

    def _cut(self, cell, resources, what, ran=True):
        self._cut_off = what
        cell.outputs = coalesce_streams(cell.get("outputs", []))  # a code cell's
        self._note("cut off", what)
        where = (
            "The cells after this one were not run"
            if ran
            else "This cell and the ones after it were not run"
        )
        cell.outputs.append(
            new_output(
                "error",
                ename=CUT_OFF,
                evalue=what,
                traceback=[f"{CUT_OFF}: {what}. {where}."],
            )
        )
        self._stop_kernel()
        return cell, resources

    def _stop_kernel(self):
        try:
            run_sync(self.km.shutdown_kernel)(now=True)
        except Exception:  # noqa: BLE001 (already dead is fine)
            pass


CUT_OFF = "GradingCutOff"


def coalesce_streams(outputs: list) -> list:
    """A cell's outputs with each run of consecutive stream outputs merged into one per
    stream, stdout before stderr.

    The kernel sends what a cell writes in chunks cut by its flush timer, and stdout and
    stderr on their own clocks: the same line arrives in one piece or two, and the order
    of the two streams within a run shifts with the machine's load (issue 55: one grading
    in three differed from another of the same submission). A figure or an error flushes
    both streams first, so runs end where the kernel's order is real. The learner reads one
    block instead of pieces, and two gradings of one submission are equal."""
    merged, run = [], {}

    def close_run():
        merged.extend(run[name] for name in ("stdout", "stderr") if name in run)
        merged.extend(out for name, out in run.items() if name not in ("stdout", "stderr"))
        run.clear()

    for out in outputs:
        if out.get("output_type") != "stream":
            close_run()
            merged.append(out)
        elif out.get("name") in run:
            run[out["name"]]["text"] += out.get("text", "")
        else:
            run[out.get("name")] = NotebookNode({**out, "text": out.get("text", "")})
    close_run()
    return merged


__all__ = ["GuardedExecute", "JudgeHiddenChecks", "SeedHiddenChecks"]


# ---------------------------------------------------------------- feedback

# A report's lines wrap inside their box (a "Likely mistake" line ran off its right edge,
# the formgrader clipped it), between words: Bootstrap, which both pages load, breaks a
# <pre> anywhere (`word-break: break-all`), "batchnorm_f" / "orward". A word longer than
# the line still breaks rather than overflow.
REPORT_CSS = """
div.output_area pre { white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; }
"""
# nbgrader's own table of contents, which calls every hidden check "Test cell" and lists a
# "Comment" per answer, gives way to ExerciseFeedback's table. In a narrow panel (Lab's) its
# "what it checks" column, the longest text, was squeezed to a strip while the others kept
# their width and the table ran past the page (walk 53): that column takes the widest share,
# a check's name breaks after an underscore (ExerciseFeedback's <wbr>), a section's long
# signature anywhere, and the table stays within the page.
FEEDBACK_CSS = (
    REPORT_CSS
    + """
div#toc { display: none; }
table.exercises { width: 100%; }
table.exercises td, table.exercises th { padding: 0.2em 0.6em; vertical-align: top; }
table.exercises th:nth-child(1) { width: 25%; }
table.exercises th:nth-child(3) { width: 45%; }
table.exercises td:nth-child(1) { overflow-wrap: anywhere; }
table.exercises td:last-child { white-space: nowrap; }
"""
)


class ReportCSS(NbGraderPreprocessor):
    """The formgrader's view of a submission: reports that wrap between words, as on the
    feedback page (ExerciseFeedback adds the same there). Run by the course's formgrade
    template settings (templates/formgrade/conf.json), after the classic template's
    CSSHTMLHeaderPreprocessor, which replaces the page's CSS."""

    def preprocess(self, nb, resources):
        resources.setdefault("inlining", {}).setdefault("css", []).append(REPORT_CSS)
        return nb, resources


HEADING = re.compile(r"^#{1,3}\s+(.+?)\s*#*\s*$")


def section_of(markdown: str, current: str) -> str:
    """The title of the last heading (levels 1 to 3) in a markdown cell, or `current`."""
    for line in markdown.splitlines():
        if m := HEADING.match(line):
            current = m.group(1).replace("`", "")
    return current


def check_sections(nb) -> dict[str, str]:
    """{grade id of a hidden check: the section it grades}: the heading above the solution
    cell it grades (`<grade id>_solution`, or one whose id starts with `<grade id>_`), else
    the heading above the check itself. 04 checks its four rules after the last of them,
    and all four were named "Exercise 3.4: adamw"."""
    from course.grader.cells import solution_cell_id

    above, solved, label = {}, {}, ""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            label = section_of(cell.source, label)
        if (solution := solution_cell_id(cell)) is not None:
            solved.setdefault(solution, label)
        if (grade_id := grade_id_of_test_cell(cell)) is not None:
            above[grade_id] = label
    sections = {}
    for grade_id, label in above.items():
        graded = solved.get(f"{grade_id}_solution") or next(
            (section for sid, section in solved.items() if sid.startswith(f"{grade_id}_")), None
        )
        sections[grade_id] = graded or label
    return sections


DESCRIBED = re.compile(r"^#\s*Hidden check \([^)]*\):\s*(.*)$")


def what_it_checks(source: str) -> str:
    """The description a grade cell opens with (`# Hidden check (3 points): ...`, over one
    or more comment lines), or "" for a cell without one."""
    lines = source.splitlines()
    for index, line in enumerate(lines):
        if m := DESCRIBED.match(line.strip()):
            words = [m.group(1)]
            for more in lines[index + 1 :]:
                more = more.strip()
                if not more.startswith("#") or more.startswith("###"):
                    break
                words.append(more.lstrip("#").strip())
            return " ".join(w for w in words if w)
    return ""


# nbconvert's HTMLExporter configures NbConvertBase.display_data_priority for every
# preprocessor it runs; nbgrader's declare that trait but not as configurable, so each
# feedback page warned "Config option `display_data_priority` not recognized by ..." (in
# the formgrader's log too, which an instructor reads as an error). Here it is configurable.
def _display_data_priority() -> List:
    return List(NbGraderPreprocessor.display_data_priority.default_value).tag(config=True)


class FeedbackClearHiddenTests(ClearHiddenTests):
    """nbgrader's ClearHiddenTests, for feedback pages: the same, without the warning."""

    display_data_priority = _display_data_priority()


class ExerciseFeedback(NbGraderPreprocessor):
    """generate_feedback, after GetGrades and CSSHTMLHeaderPreprocessor: a table at the top
    naming, for each hidden check, the section of the notebook it grades (the heading above
    it: an exercise, or the part whose exercises it checks together) and its score, linked
    to its report; each report without the bare `Out[n]: 0.0` that nbgrader reads partial
    credit from (the score is in the report's heading); each figure described by the
    section it is in (a screen reader's text, and nbconvert warned of every figure without)."""

    display_data_priority = _display_data_priority()

    def preprocess(self, nb, resources):
        from html import escape

        from nbformat.v4 import new_markdown_cell

        rows, previous, sections = [], None, check_sections(nb)
        label = ""
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                label = section_of(cell.source, label)
            for output in cell.get("outputs", []):
                for kind in set(output.get("data", {})) & {"image/png", "image/jpeg"}:
                    about = output.setdefault("metadata", {}).setdefault(kind, {})
                    about.setdefault(
                        "alt", f"A figure of your notebook, under {label or 'its title'}"
                    )
        for cell in nb.cells:
            grade_id = grade_id_of_test_cell(cell)
            if grade_id is None:
                continue
            label = sections[grade_id]
            cell.outputs = [o for o in cell.outputs if o.get("output_type") != "execute_result"]
            meta = nbgrader_meta(cell)
            score, points = float(meta.get("score") or 0), float(meta.get("points") or 0)
            # A section with several hidden checks is named once; each row says what its
            # check checks (issue 33's persona walk: one heading repeated on four rows).
            section = label or grade_id
            shown = "" if rows and section == previous else section
            previous = section
            breakable = escape(grade_id).replace("_", "_<wbr>")  # a narrow panel breaks it there
            rows.append(
                f"<tr><td>{escape(shown)}</td>"
                f'<td><a href="#{escape(grade_id)}"><code>{breakable}</code></a></td>'
                f"<td>{escape(what_it_checks(cell.source))}</td>"
                f"<td>{score:g} / {points:g}</td></tr>"
            )
        late = float(resources.get("nbgrader", {}).get("late_penalty") or 0)
        if late > 0:
            late_row = '<tr class="late-penalty"><td colspan="3">Late submission</td>'
            rows.append(f"{late_row}<td>-{late:g}</td></tr>")
        if rows:
            table = (
                '<table class="exercises"><tr><th>section</th><th>hidden check</th>'
                "<th>what it checks</th><th>score</th></tr>" + "".join(rows) + "</table>"
            )
            nb.cells.insert(0, new_markdown_cell(table))
        resources.setdefault("inlining", {}).setdefault("css", []).append(FEEDBACK_CSS)
        return nb, resources


# ---------------------------------------------------------------- MathJax, offline

# nbgrader's feedback and formgrade templates load MathJax from a CDN; the course's
# `base/mathjax.html.j2` (in this folder, put first by nbgrader_config.py) loads the copy
# that the jupyter-server-mathjax package installs instead.
TEMPLATES = Path(__file__).resolve().parent / "templates"


def template_basedirs() -> list[str]:
    """HTMLExporter.extra_template_basedirs for generate_feedback and the formgrader: the
    course's templates first (its MathJax macro), then nbgrader's (feedback, formgrade)."""
    import nbgrader

    nbgrader_templates = Path(nbgrader.__file__).parent / "server_extensions/formgrader/templates"
    return [str(TEMPLATES), str(nbgrader_templates)]


def mathjax_file() -> Path:
    """The installed MathJax.js (MathJax 2, from the jupyter-server-mathjax package)."""
    try:
        import jupyter_server_mathjax
    except ImportError as exc:
        raise ImportError(
            "feedback pages need the jupyter-server-mathjax package (a dependency of the "
            "course: reinstall with `pip install -c constraints.txt -e .`)"
        ) from exc
    path = Path(jupyter_server_mathjax.__file__).resolve().parent / "static" / "MathJax.js"
    if not path.is_file():
        raise FileNotFoundError(f"jupyter-server-mathjax is installed without {path}")
    return path


def mathjax_file_url(_: object = None) -> str:
    """A Jinja filter (HTMLExporter.filters): the file: URL of the installed MathJax.js."""
    return mathjax_file().as_uri()
