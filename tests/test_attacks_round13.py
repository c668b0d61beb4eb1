"""Round 13 of the attacks (issue 31, the fresh attacker of stop 44): the large case's CPU
budget (course.grader.probe.within_budget) was a profiling timer that the student's own
backward pass switched off with `signal.setitimer(signal.ITIMER_PROF, 0)`, and then ran a
numerical Jacobian of its forward pass in 11 to 14 s of CPU (06's conv_backward_naive and
conv_fast: 8 points of 24). The clock is now read again when their code returns.
"""

import signal
import time

import pytest

from course.grader.probe import OverBudget, within_budget


def busy(seconds: float) -> float:
    """Burn `seconds` of this process's CPU time."""
    end = time.process_time() + seconds
    total = 0.0
    while time.process_time() < end:
        total += 1.0
    return total


def test_a_backward_pass_that_switches_the_timer_off_is_still_over_budget():
    def backward():
        signal.setitimer(signal.ITIMER_PROF, 0)
        return busy(0.3)

    with pytest.raises(OverBudget):
        within_budget(backward, 0.05, 1 << 30)


def test_a_backward_pass_within_its_budget_returns_its_result():
    assert within_budget(lambda: busy(0.01), 1.0, 1 << 30) > 0
