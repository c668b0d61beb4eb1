"""The solutions keep full marks on other processors (issue 28), and no rounding-sized
difference is ever blamed on the learner's code.

Two of `course bench --processors`' combinations on every run: this machine as it is, and
an AMD EPYC's settings emulated (NumPy without its AVX512 paths, OpenBLAS's Zen kernel, two
BLAS threads). np.geomspace, which draws 02's inputs, rounds differently on the two, so the
committed references/ (computed on one processor) serve both only if no judgement needs
the last bit. Each runs the solutions in a process of its own (about 8 s of CPU).
"""

import numpy as np
import pytest

from course.authoring import processors
from course.checks import assignment_modules
from course.checks.common import as_given, flat, left_as_given
from course.grader import judge, model

TWO = [
    c
    for c in processors.COMBINATIONS
    if c[0] in ("this machine", "an EPYC: Zen, no AVX512, 2 threads")
]


@pytest.mark.parametrize("name, kernel_env, grader_env", TWO, ids=[c[0] for c in TWO])
def test_the_solutions_keep_full_marks_against_the_committed_references(
    name, kernel_env, grader_env
):
    found = processors.judge_combination(kernel_env, grader_env, secret=False)
    assert found["lost"] == [], "\n".join(found["lost"])
    assert set(found["marks"]) == {m.ASSIGNMENT.id for m in assignment_modules()}
    assert all(points == out_of for points, out_of in found["marks"].values())


def test_a_close_rule_never_fails_by_rounding():
    exact = model.Rule("shape", rtol=0)
    assert judge.judge_one("k", np.array([1.0, 2.0 + 4e-16]), np.array([1.0, 2.0]), exact).passed
    assert not judge.judge_one("k", np.array([3.0, 5.0]), np.array([3.0, 4.0]), exact).passed
    assert not judge.judge_one("k", np.array([1e-9]), np.array([0.0]), exact).passed


def test_unchanged_inputs_are_the_same_process_bytes():
    x = np.geomspace(0.02, 2.0, 7)
    given = flat(x, np.arange(3))
    # Another processor's inputs, a few ulps apart: the snapshot still matches them.
    elsewhere = np.stack([given, given]) * (1 + 2e-16)
    assert left_as_given(as_given(given, given.copy()), elsewhere) is True
    residue = given.copy()
    residue[2] = np.nextafter(residue[2], 1.0)  # what x[i] += h; x[i] -= h can leave
    why = left_as_given(as_given(given, residue), np.stack([given, given]))
    assert "rounding-sized" in why and "residue" in why
    assert "changed in place" in left_as_given(as_given(given, 2 * given), np.stack([given] * 2))
    # Two equal arrays that are not the check's inputs are not a snapshot of them.
    zeros = np.zeros_like(given)
    assert left_as_given(as_given(zeros, zeros), np.stack([given, given])) is not True
    # Resized after the call: fails, not an error.
    assert left_as_given(as_given(given, given[:-1]), np.stack([given, given])) is not True
