"""Issue 54: a check declares every graded function it runs through (Check.builds_on), as a
property of the course rather than of the checks a review looked at.

Each check's probe runs on the solutions, executed in a namespace that records every name
read from it: by the probe itself (course.grader.probe.Student, the functions it grades)
and by the learner's code as it runs (the globals of the notebook's functions and
methods, hence what they call). A graded function belongs to the first check of its
notebook whose probe reads it (the functions carried from an earlier assignment, to that
assignment's); a check that runs through another check's function without declaring it
fails here. Not seen: what carried code calls inside its own module (04's network calling
03's layers), which the check declares with the carried module as a whole (CARRIED_03).
"""

import contextlib
import io
import os
import sys
import types

import pytest

from course.carry import from_sources, is_carry_cell
from course.checks import assignment_modules, checks_by_name
from course.grader import probe
from course.grader.cells import solution_cell_id
from course.grader.model import Broken, rule_for
from course.paths import course_root
from tests.test_observations import source_notebook

# {check: {earlier check it runs through without declaring it: why that is right}}.
EXEMPT: dict[str, dict[str, str]] = {
    # Value is one class, graded method by method: value_ops grades the operators (it reads
    # Value first), value_functions the unary methods, which use none of the operators.
    "value_functions": {"value_ops": "Value's unary methods run none of its operators"},
    # The same two functions, graded again on scores near 1e3: no other function is the
    # cause there, and its hint (shift each row by its maximum) is the diagnosis.
    "softmax_numerics": {
        "softmax_loss_naive": "the same function, at other inputs",
        "softmax_loss_vectorized": "the same function, at other inputs",
    },
    # The seconds its grade cell takes are its observation (Check.timed): probing conv_fast
    # in that cell too would count in them. conv_fast_speed's own "pair" sub-check compares
    # the fast pair with the naive one, and says so.
    "conv_fast_speed": {"conv_fast": "a timed cell: an earlier check probed in it counts"},
}


class Recording(dict):
    """A notebook's globals that note each name read: (name, read by the probe itself)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set[tuple[str, bool]] | None = None

    def __getitem__(self, key):
        if self.read is not None:
            self.read.add((key, sys._getframe(1).f_code is probe.Student.__getattr__.__code__))
        return dict.__getitem__(self, key)


def recording_namespace(assignment: str, notebook: str) -> Recording:
    """The solutions of a notebook, as course.grader.sources.solution_namespace runs them,
    in a Recording: the functions and methods they define read their globals through it."""
    nb = source_notebook(assignment, notebook)
    code = [c for c in nb.cells if c.cell_type == "code"]
    wanted = code[:1] + [c for c in code[1:] if solution_cell_id(c) or is_carry_cell(c)]
    namespace = Recording({"__name__": "__solutions__"})
    os.environ.setdefault("MPLBACKEND", "Agg")
    with from_sources(course_root()), contextlib.redirect_stdout(io.StringIO()):
        for cell in wanted:
            exec(compile(cell.source, f"<{assignment}:{cell.id}>", "exec"), namespace)  # noqa: S102
    return namespace


def native(namespace: dict, name: str) -> bool:
    """Whether `name` is defined by this notebook (not carried from an earlier one)."""
    value = dict.get(namespace, name)
    if isinstance(value, types.FunctionType):
        return value.__globals__ is namespace
    return getattr(value, "__module__", None) == "__solutions__"


@pytest.fixture(scope="module")
def reads() -> dict[str, tuple[set[str], set[str], set[str]]]:
    """{check: (names its probe reads, names the code reads as it runs, names native to its
    notebook)}, every check of every assignment, in the course's order."""
    found = {}
    for module in assignment_modules():
        assignment = module.ASSIGNMENT
        namespace = recording_namespace(assignment.id, assignment.notebook)
        natives = {n for n in namespace if native(namespace, n)}
        for name, chk in checks_by_name().items():
            if chk.notebook != assignment.key:
                continue
            namespace.read = set()
            with probe.trusted():
                outputs = probe.probe(chk, namespace)
            # The solutions ran all the way through: nothing raised but an error contract's
            # ValueError (Rule.raises), as the check wants it.
            broken = [
                k
                for k, v in outputs.items()
                if isinstance(v, Broken) and (k.startswith("_") or not rule_for(chk, k).raises)
            ]
            assert not broken, (name, {k: outputs[k].why for k in broken})
            direct = {n for n, by_probe in namespace.read if by_probe}
            found[name] = (direct, {n for n, _ in namespace.read}, natives)
            namespace.read = None
    return found


def owners(reads) -> dict[str, dict[str, str]]:
    """{assignment: {graded name: the check that grades it}}: the first check of the
    assignment whose probe reads a name its notebook defines."""
    checks = checks_by_name()
    owned: dict[str, dict[str, str]] = {}
    for name, (direct, _, natives) in reads.items():
        assignment = checks[name].notebook.partition("/")[0]
        for graded in sorted(direct & natives):
            owned.setdefault(assignment, {}).setdefault(graded, name)
    return owned


def undeclared(reads, exempt=EXEMPT) -> list[str]:
    checks = checks_by_name()
    owned = owners(reads)
    order = list(dict.fromkeys(c.notebook.partition("/")[0] for c in checks.values()))
    found = []
    for name, (_, everything, natives) in reads.items():
        chk = checks[name]
        assignment = chk.notebook.partition("/")[0]
        earlier = order[: order.index(assignment)]
        for read in sorted(everything):
            if read in natives:
                owner = owned.get(assignment, {}).get(read)
            else:  # carried: graded by the latest earlier assignment that defines it
                owner = next(
                    (owned[a][read] for a in reversed(earlier) if read in owned.get(a, {})), None
                )
            if owner is None or owner == name or owner in chk.builds_on:
                continue
            if owner in exempt.get(name, {}):
                continue
            found.append(f"{name} runs {read} (graded by {owner}) without declaring {owner}")
    return found


def test_every_check_declares_the_graded_functions_it_runs_through(reads):
    assert not undeclared(reads), "\n".join(undeclared(reads))


def test_the_walk_sees_what_the_code_calls(reads):
    # attention_backward's probe reads only attention_forward/_backward; the softmax is
    # read by the solution's attention_forward as it runs.
    direct, everything, _ = reads["attention_backward"]
    assert "softmax" not in direct and "softmax" in everything
    # 08's block runs 05's layer norm, carried: graded by 05's check.
    assert owners(reads)["05_normalisation"]["layernorm_forward"] == "layernorm_forward"
    assert "layernorm_forward" in reads["block"][1]


def test_the_exemptions_are_still_needed(reads):
    found = "\n".join(undeclared(reads, exempt={}))
    for name, exempt in EXEMPT.items():
        for earlier in exempt:
            assert f"{name} runs " in found and f"without declaring {earlier}" in found, (
                name,
                earlier,
            )
