"""What a grade cell imports: `from course.grading import check`.

nbgrader keeps every grade cell's source in the gradebook, so this import path is frozen.
It is the kernel side only: it finds the check (course.checks imports only the module that
holds it, so a kernel never loads the other assignments' checks), probes the notebook with
course.grader.probe, and displays what it recorded; judging happens in the grader.
"""

from __future__ import annotations

from course.checks import get_check
from course.grader.model import encode
from course.grader.probe import PROBE_MIME, grader_seed, probe

__all__ = ["check"]


def check(name: str, namespace: dict) -> float:
    """Probe hidden check `name` on the notebook's namespace, and emit what it recorded.

    This runs in the student's kernel, so it decides nothing: it displays the outputs under
    PROBE_MIME, and the grader's `JudgeHiddenChecks` step (course.grader.nbgrader_ext), outside
    the kernel, compares them with the references and writes the verdict into the cell.
    It evaluates to 0.0, so that a grading set-up without that step scores zero, not full.
    """
    from IPython.display import display

    found = payload(name, namespace, grader_seed(name))
    recorded = len(found["outputs"])
    summary = f"{name}: {recorded} results recorded; the grader judges them (0 until then)."
    display({PROBE_MIME: found, "text/plain": summary}, raw=True)
    return 0.0


def payload(name: str, namespace: dict, seed: int | None = None) -> dict:
    """What a grade cell emits: the check's outputs, and those of the earlier checks whose
    functions it runs through (Check.builds_on), each probed on its own public inputs."""
    chk = get_check(name)
    outputs = probe(chk, namespace, seed)
    found = {"check": name, "outputs": {k: encode(v) for k, v in outputs.items()}}
    if chk.builds_on:
        found["carried"] = {
            earlier: {k: encode(v) for k, v in probe(get_check(earlier), namespace).items()}
            for earlier in chk.builds_on
        }
    return found
