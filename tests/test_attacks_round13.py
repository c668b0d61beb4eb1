"""Round 13 of the attacks (issue 31, the fresh attacker of stop 44): the large case's CPU
budget (course.grader.probe.within_budget) was a profiling timer that the student's own
backward pass switched off with `signal.setitimer(signal.ITIMER_PROF, 0)`, and then ran a
numerical Jacobian of its forward pass in 11 to 14 s of CPU (06's conv_backward_naive and
conv_fast: 8 points of 24). The clock is now read again when their code returns.

A second, short attack (stop 45) passed the budget five more ways, each from the student's
own backward pass: a result that does its work only when the grader converts it (after the
budget); a thread that outlives the call; a child process (subprocess, os.fork) with a
clock of its own, or a forked child that returns into the grader's code; the deadline
edited through the budget's closure, or time.process_time rebound; and RLIMIT_AS raised
back to its hard limit. Each now fails the large case.
"""

import os
import resource
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from course.checks import common
from course.grader import probe
from course.grader.model import Broken
from course.grader.probe import OverBudget, within_budget

_THREAD_TIME = time.thread_time  # the tests' own clock: one attack rebinds process_time


def busy(seconds: float) -> float:
    """Burn `seconds` of this thread's CPU time."""
    end = _THREAD_TIME() + seconds
    total = 0.0
    while _THREAD_TIME() < end:
        total += 1.0
    return total


def timer_off():
    signal.setitimer(signal.ITIMER_PROF, 0)


def test_a_backward_pass_that_switches_the_timer_off_is_still_over_budget():
    def backward():
        timer_off()
        return busy(0.3)

    with pytest.raises(OverBudget):
        within_budget(backward, 0.05, 1 << 30)


def test_a_backward_pass_within_its_budget_returns_its_result():
    assert within_budget(lambda: busy(0.01), 1.0, 1 << 30) > 0


def large_case(backward):
    """What record_large records for a cheap forward pass and this backward pass."""
    out = probe.Outputs()
    probe._WORKED_ELSEWHERE[0] = False

    def run(rng):
        x = rng.standard_normal(1000)
        return (lambda: x * 2.0), backward

    common.record_large(out, np.random.default_rng(0), "attack", run)
    (value,) = out.values()
    return value


def test_an_honest_backward_pass_keeps_its_large_case():
    assert not isinstance(large_case(lambda cache: (cache * 3.0, cache.copy())), Broken)


class Lazy:
    """A gradient that does its (numerical) work only when converted."""

    def __array__(self, dtype=None, copy=None):
        busy(0.5)
        return np.zeros(1000)


class LazySequence:
    """A gradient that does its work when NumPy reads it as a sequence."""

    def __len__(self):
        return 1000

    def __getitem__(self, index):
        if not isinstance(index, int) or not 0 <= index < 1000:
            raise IndexError(index)
        if index == 0:
            busy(0.5)
        return 0.0


def test_a_gradient_that_computes_when_converted_is_converted_within_the_budget():
    value = large_case(lambda cache: (Lazy(), cache))
    assert isinstance(value, Broken), value
    assert "more than" in value.why


def test_a_sequence_that_computes_when_read_is_read_within_the_budget():
    value = large_case(lambda cache: (LazySequence(), cache))
    assert isinstance(value, Broken), value


def test_a_tuple_that_computes_when_iterated_is_read_within_the_budget():
    class LazyTuple(tuple):
        def __iter__(self):
            busy(0.5)
            return iter((np.zeros(1000),))

    value = large_case(lambda cache: LazyTuple((cache,)))
    assert isinstance(value, Broken), value


# A thread left running is stopped by the budget's trace at its next call, once past it.
quiet_threads = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture
def started():
    """Threads a test's backward pass starts, joined after it (their CPU time must not
    reach the next test's budget)."""
    threads: list[threading.Thread] = []
    yield threads
    for thread in threads:
        thread.join()


@quiet_threads
def test_a_thread_left_running_by_the_backward_pass_is_over_budget(started):
    def backward():
        started.append(threading.Thread(target=busy, args=(0.3,), daemon=True))
        started[-1].start()
        return 1.0

    with pytest.raises(OverBudget, match="thread"):
        within_budget(backward, 1.0, 1 << 30)


@quiet_threads
def test_a_thread_that_fills_the_gradient_after_the_call_fails_the_large_case(started):
    def backward(cache):
        grad = np.zeros_like(cache)

        def fill():
            busy(0.3)
            grad[:] = 2.0

        started.append(threading.Thread(target=fill, daemon=True))
        started[-1].start()
        return grad

    value = large_case(backward)
    assert isinstance(value, Broken) and "thread" in value.why, value


def test_a_thread_started_and_joined_within_the_call_is_fine():
    def backward():
        worker = threading.Thread(target=busy, args=(0.01,))
        worker.start()
        worker.join()
        return 1.0

    assert within_budget(backward, 1.0, 1 << 30) == 1.0


CHILD_BUSY = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"


def test_work_in_a_subprocess_is_counted():
    def backward():
        subprocess.run([sys.executable, "-c", CHILD_BUSY], check=True)
        return 1.0

    with pytest.raises(OverBudget):
        within_budget(backward, 0.2, 1 << 30)


def test_a_subprocess_left_running_is_over_budget():
    children = []

    def backward():
        children.append(subprocess.Popen([sys.executable, "-c", CHILD_BUSY]))
        return 1.0

    try:
        with pytest.raises(OverBudget, match="process"):
            within_budget(backward, 1.0, 1 << 30)
    finally:
        for child in children:
            child.kill()
            child.wait()


def test_a_forked_child_that_returns_into_the_grader_is_over_budget():
    me = os.getpid()
    read, write = os.pipe()

    def backward():
        child = os.fork()
        if child == 0:
            return "the child"
        os.waitpid(child, 0)
        return "the parent"

    try:
        try:
            within_budget(backward, 1.0, 1 << 30)
            outcome = b"returned"
        except OverBudget:
            outcome = b"over"
        if os.getpid() != me:
            os.write(write, outcome)
    finally:
        if os.getpid() != me:
            os._exit(0)
    os.close(write)
    child_outcome = os.read(read, 100)
    os.close(read)
    assert (outcome, child_outcome) == (b"over", b"over")


def test_a_deadline_edited_through_the_closure_is_still_over_budget():
    def backward():
        timer_off()
        for cell in threading.gettrace().__closure__:
            if isinstance(cell.cell_contents, float):
                cell.cell_contents = 1e300
        return busy(0.3)

    with pytest.raises(OverBudget):
        within_budget(backward, 0.05, 1 << 30)


def test_a_process_time_rebound_does_not_blind_the_budget():
    original = time.process_time

    def backward():
        timer_off()
        time.process_time = lambda: 0.0
        return busy(3.0)

    try:
        with pytest.raises(OverBudget):
            within_budget(backward, 0.05, 1 << 30)
    finally:
        time.process_time = original


def test_an_address_space_limit_raised_is_out_of_memory():
    def backward():
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY,) * 2)
        return 1.0

    if resource.getrlimit(resource.RLIMIT_AS)[1] != resource.RLIM_INFINITY:
        pytest.skip("a hard limit on the address space here")
    with pytest.raises(MemoryError):
        within_budget(backward, 1.0, 64 << 20)


def test_an_address_space_limit_raised_and_put_back_is_out_of_memory():
    def backward():
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        batch = np.empty(4 << 30, dtype=np.uint8)  # address space, never touched
        del batch
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        return 1.0

    with pytest.raises(MemoryError):
        within_budget(backward, 1.0, 64 << 20)


@pytest.mark.slow
def test_honest_and_routed_06_graded_for_real_keep_full_marks(tmp_path):
    """In bubblewrap's sandbox (the kernel's kin are every process there) the reference and
    the A11 alternates keep every point: the checks after compute() returns flag nothing of
    an honest kernel's; a backward that leaves a thread running loses its gradients."""
    from tests import variants_convolution as conv
    from tests.harness import Batch

    batch = Batch(tmp_path / "course", "06_convolution", "convolution")
    batch.submit("honest", batch.answered(trim=True))
    # By name: review 54 appended an alternate, and the last two were no longer these.
    routed = {
        cell: code
        for alternate in conv.ALTERNATES
        if " routed by one forward call " in alternate.name
        for cell, code in alternate.answers.items()
    }
    assert set(routed) == {conv.CONV, conv.POOL}
    batch.submit("routed", batch.answered(routed, trim=True))
    # A right backward that leaves a thread behind (asleep: no CPU the small cases see).
    left = batch.solutions[conv.CONV].replace(
        "    x, w, b, conv_param = cache\n",
        "    x, w, b, conv_param = cache\n"
        "    import threading, time\n"
        "    threading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n",
        1,
    )
    assert left != batch.solutions[conv.CONV]
    batch.submit("left a thread", batch.answered({conv.CONV: left}, trim=True))
    done = batch.course_grade()
    assert done.returncode == 0, done.stdout + done.stderr
    full = batch.max_scores()
    scores = batch.scores()
    assert scores.pop("left a thread")["conv_backward_naive"] <= 2.0, scores
    for student, got in scores.items():
        assert got == full, (student, got)
