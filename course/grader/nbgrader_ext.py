"""nbgrader extensions, configured in nbgrader_config.py.

- `GuardedExecute`: nbgrader's Execute with every kernel in the sandbox, and a kernel that
  dies or will not stop cutting the notebook off instead of failing the whole submission.
- `SeedHiddenChecks` (course.grader.inputs): before execution, each hidden check is told
  the seed of this run's secret inputs.
- `JudgeHiddenChecks`: a preprocessor that runs after execution, in the grader's process,
  and turns each grade cell's probe output into a verdict (report and points). The
  student's kernel never sees a reference value and cannot print its own score.
"""

from __future__ import annotations

import base64

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool

from course.grader import judge, model, probe
from course.grader.cells import grade_id_of_test_cell
from course.grader.inputs import Inputs, InputsError, SeedHiddenChecks, restore_sources
from course.grader.kernel_client import PromptReplies


def probe_payloads(cell) -> list[dict]:
    return [
        out["data"][probe.PROBE_MIME]
        for out in cell.get("outputs", [])
        if out.get("output_type") == "display_data" and probe.PROBE_MIME in out.get("data", {})
    ]


def why_no_probe(cell, payloads: list[dict], grade_id: str) -> str:
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        return f"the cell stopped with {errors[-1].get('ename', 'an error')} before the check ran"
    if len(payloads) > 1:
        return "the cell emitted more than one result: tampered output"
    if payloads:
        return f"the cell emitted results for {payloads[0].get('check')!r}, not {grade_id!r}"
    if cell.get("execution_count") is None:
        return "the cell was not run: the kernel had stopped earlier"
    return "the hidden check emitted no results"


def judge_cell(cell, inputs: Inputs | None = None) -> None:
    """Replace a hidden-check grade cell's outputs by the grader's verdict, in place.

    inputs: the run's seeds and references (course.grader.inputs); None: the committed ones.
    """
    grade_id = grade_id_of_test_cell(cell)
    if grade_id is None or grade_id not in model.checks_by_name():
        return
    # The grader's own reference: missing, it stops the run (never a student's zero).
    reference = inputs.reference(grade_id) if inputs is not None else None
    payloads = probe_payloads(cell)
    ok = len(payloads) == 1 and payloads[0].get("check") == grade_id
    payload = payloads[0] if ok else None
    why = "" if ok else why_no_probe(cell, payloads, grade_id)
    try:
        points, text, pngs = judge.verdict_with_pictures(grade_id, payload, why, True, reference)
    except (TypeError, ValueError, KeyError, AttributeError):
        # Results that do not even decode were not written by the probe: zero, not a crash.
        points, text, pngs = judge.verdict_with_pictures(
            grade_id, None, "its results could not be read: tampered output", True, reference
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


def judge_notebook(nb: NotebookNode, inputs: Inputs | None = None) -> NotebookNode:
    for cell in nb.cells:
        judge_cell(cell, inputs)
    return nb


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
        return judge_notebook(nb, resources["hidden_inputs"]), resources


# ---------------------------------------------------------------- execution


class GuardedExecute(PromptReplies, Execute):
    """nbgrader's Execute, with each kernel in the sandbox (course.grader.sandbox), and a kernel
    that dies or ignores the interrupt after a timeout cutting the notebook off there:
    the cells after it are not run (their hidden checks score zero, with the reason), the
    cells before it keep their grades, and the notebook says what happened. Replies are
    noticed promptly even where widgets hide them from the poll (course.grader.kernel_client)."""

    sandbox = Bool(
        True,
        help="Run grading kernels in the sandbox. Turn off only on purpose: "
        "`course grade --unsandboxed`, or `--GuardedExecute.sandbox=False`.",
    ).tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.sandbox:
            from course.grader import sandbox

            sandbox.check_available()
            self.kernel_manager_class = sandbox.SandboxedKernelManager

    def preprocess(self, nb, resources, retries=None):
        self._cut_off = None
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        if self._cut_off is not None:
            return cell, resources  # not run: the kernel is gone
        try:
            return super().preprocess_cell(cell, resources, index)
        except (DeadKernelError, CellTimeoutError) as exc:
            died = isinstance(exc, DeadKernelError)
            what = (
                "the kernel died while running this cell (a crash, os._exit, or a memory, "
                "CPU or process limit)"
                if died
                else "this cell did not stop when interrupted after its timeout; "
                "the kernel was stopped"
            )
            self._cut_off = what
            cell.outputs.append(
                new_output(
                    "error",
                    ename=CUT_OFF,
                    evalue=what,
                    traceback=[f"{CUT_OFF}: {what}. The cells after this one were not run."],
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

__all__ = ["GuardedExecute", "JudgeHiddenChecks", "SeedHiddenChecks"]
