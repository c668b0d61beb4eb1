"""The kernel side of a hidden check: call the student's functions, record what they return.

The machinery that the checks' probes use inside a student's kernel (and the grader's own
process, on the source solutions). It decides nothing: course.grading.check displays the
recorded outputs, and the grader judges them (course.grader.judge).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import signal
import sys
import sysconfig
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from course.grader.model import Broken, Check, MissingName


class Student:
    """The notebook's namespace, as a check sees it."""

    def __init__(self, namespace: dict):
        self._ns = namespace

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self._ns[name]
        except KeyError:
            raise MissingName(f"the notebook defines no `{name}`") from None
        # Any callable but a class: a function, or an object with __call__ (round 6 of the
        # attacks borrowed `nudged` from one).
        callable_ = callable(value) and not isinstance(value, type)
        return _student_function(value) if callable_ else value


# How many of the student's functions the probe is inside: `nudged` is for the probe's own
# gradient observations, not a numerical gradient a student's function may borrow (01
# grades the one they write). Code that resets this on purpose is tampering, and still
# only computes a slow, right answer: the README says so.
_IN_STUDENT = [0]


def _student_function(function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        _IN_STUDENT[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            _IN_STUDENT[0] -= 1

    return call


@functools.lru_cache(maxsize=4096)
def _resolved(filename: str) -> str:
    """A file's real path, found once (a traceback or a traced call names the same few
    files thousands of times). The first answer stands: a link changed later changes
    nothing, and its owner decided that first answer anyway."""
    return str(Path(filename).resolve())


def _theirs(code) -> bool:
    """Whether a code object is the student's (a notebook cell, a carried module), not the
    course's, Python's or an installed package's."""
    filename = code.co_filename
    if filename.startswith("<frozen"):
        return False
    path = _resolved(filename) if filename.startswith("/") else filename
    return not path.startswith(_NOT_THEIRS)


def _library_frame(frame) -> bool:
    """Whether a frame runs a library's own code (the course's, Python's, numpy's): its
    globals are the namespace of an imported module under those paths, and the code's file is
    that module's file (or its frozen name). Code a student compiles under a borrowed file
    name runs in their own globals, so it is theirs (round 9: "<frozen x>" and a made-up
    path under the standard library hid a finite difference from the count)."""
    name = frame.f_globals.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or getattr(module, "__dict__", None) is not frame.f_globals:
        return False
    filename = frame.f_code.co_filename
    if filename.startswith("<frozen "):
        return filename == f"<frozen {name}>"
    origin = getattr(module, "__file__", None)
    if not origin or not filename.startswith("/"):
        return False
    path = _resolved(filename)
    return path == _resolved(origin) and path.startswith(_NOT_THEIRS)


# Work a backward pass does where the line count cannot see it (another thread, another
# process) above this many CPU seconds, and above the traced thread's own, makes the count
# "too many" (round 9: a finite difference in a thread or a forked child scored 3/3).
OFF_THREAD_SECONDS = 0.05
OFF_THREAD_COUNT = 1e9
# The kernel's other processes have no ipykernel threads to excuse (an honest kernel has
# none): past this many CPU seconds of theirs during a backward, above an idle process's
# wake-up, it is too many (round 10: a worker forked before the backward did a finite
# difference in 1 to 2 ms).
OFF_KIN_SECONDS = 0.0002

# Set while the grader runs the source solutions (course.grader.sources.compute_references):
# trusted code, in a process whose other work (the kernels grading beside it) is not theirs.
_TRUSTED = [False]


@contextlib.contextmanager
def trusted():
    _TRUSTED[0] = True
    try:
        yield
    finally:
        _TRUSTED[0] = False


def in_the_grader() -> bool:
    """Whether this probe runs the source solutions in the grader's process: what only the
    grader may know (09's true leaks) is computed there alone. A kernel that sets this
    computes what its seed already gives it (README, "Not protected"); the grader never
    reads a kernel's value of it."""
    return _TRUSTED[0]


def lines_run(compute: Callable[[], object]) -> tuple[object, float]:
    """(compute(), how many lines of the student's own code it ran): an observation of how
    much work a function does, for the rule that a backward pass is written by hand (a
    finite difference evaluates the forward pass once or twice per input element:
    course.checks.common.by_hand). Lines in the course, Python and numpy are not counted;
    an instruction without a line number counts as a line; threads started with
    `threading` are traced too; a process forked, or CPU time spent outside the traced
    thread (other threads, the kernel's other processes) beyond OFF_THREAD_SECONDS,
    counts as OFF_THREAD_COUNT lines."""
    count = [0]
    cache: dict = {}
    forked = [False]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
        return local

    def counting(unlocated: frozenset[int]):
        # A line tracer never stops at an instruction without a line (round 10: code
        # stripped of its line table ran a finite difference as 1 line): each counts.
        def local_opcodes(frame, event, arg):
            if event == "line" or (event == "opcode" and frame.f_lasti in unlocated):
                count[0] += 1
            return local_opcodes

        return local_opcodes

    def tracer(frame, event, arg):
        key = (frame.f_code, id(frame.f_globals))
        found = cache.get(key)
        if found is None:
            unlocated = None if _library_frame(frame) else _unlocated(frame.f_code)
            found = cache[key] = (unlocated, counting(unlocated) if unlocated else local)
        unlocated, trace = found
        if unlocated is None:
            return None
        if unlocated:
            frame.f_trace_opcodes = True
        return trace

    def on_fork():
        forked[0] = True

    def times():
        kin = {} if _TRUSTED[0] else _kin_cpu()
        return time.process_time(), time.thread_time(), sum(os.times()[2:4]), kin

    _FORK_HOOKS.append(on_fork)
    before, before_threads = sys.gettrace(), threading.gettrace()
    start = times()
    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        result = compute()
    finally:
        sys.settrace(before)
        threading.settrace(before_threads)
        _FORK_HOOKS.remove(on_fork)
    end = times()
    process, thread, children = (now - then for now, then in zip(end[:3], start[:3], strict=True))
    # A worker forked or started before the backward (round 10), still running.
    kin = sum(
        max(ticks - then[0], run - then[1], 0.0)
        for key, (ticks, run) in end[3].items()
        for then in [start[3].get(key, (0.0, 0.0))]
    )
    elsewhere = max(process - thread, 0.0) + children
    if _TRUSTED[0]:
        return result, float(count[0])
    if forked[0] or kin > OFF_KIN_SECONDS or elsewhere > max(OFF_THREAD_SECONDS, thread):
        _WORKED_ELSEWHERE[0] = True
        return result, OFF_THREAD_COUNT
    return result, float(count[0])


# Whether a backward pass of this probe worked in another thread or process (lines_run's
# OFF_THREAD_COUNT): its large case is then not run (course.checks.common.record_large),
# since a budget of this thread's CPU time cannot stop work done elsewhere. Reset by
# `probe`; a kernel that resets it only runs its own work on, in its own cell's time.
_WORKED_ELSEWHERE = [False]


class OverBudget(BaseException):
    """Raised into the student's code when it passes the CPU budget of `within_budget` (a
    BaseException: an `except Exception` of theirs does not swallow it). Its argument, when
    it has one, says what other than the time passed it (a thread, a process)."""


def _address_space() -> int | None:
    """This process's address space in bytes (Linux), None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _peak_address_space() -> int | None:
    """The largest address space this process has had (VmPeak, Linux), None where unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


try:
    import resource as _resource
except ImportError:  # no Unix: within_budget runs compute() as it is
    _resource = None

# The clocks and limits within_budget reads after the student's code returns, captured
# here: their code may rebind time.process_time, os.times or resource.getrusage by then
# (round 13), not these (builtins cannot be edited in place).
_GETPID = os.getpid
_CLOCK_GETTIME = time.clock_gettime
_CPU_CLOCK = getattr(time, "CLOCK_PROCESS_CPUTIME_ID", None)
if _resource is not None:
    _GETRUSAGE, _GETRLIMIT, _SETRLIMIT = (
        _resource.getrusage,
        _resource.getrlimit,
        _resource.setrlimit,
    )
    _RUSAGE_SELF, _RUSAGE_CHILDREN = _resource.RUSAGE_SELF, _resource.RUSAGE_CHILDREN
    _RLIMIT_AS, _RLIM_INFINITY = _resource.RLIMIT_AS, _resource.RLIM_INFINITY


def _cpu_self() -> float:
    """This process's CPU time, every thread's (user and system)."""
    if _CPU_CLOCK is not None:
        return _CLOCK_GETTIME(_CPU_CLOCK)
    usage = _GETRUSAGE(_RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_children() -> float:
    """The CPU time of this process's children that it waited for (os.times()[2:4])."""
    usage = _GETRUSAGE(_RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# Events of processes started (sys.audit): subprocess's fork_exec runs no at-fork hook.
_SPAWN_EVENTS = frozenset(
    {
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.exec",
        "subprocess.Popen",
        "pty.spawn",
    }  # fmt: skip
)
_SPAWNS = [0]


def _count_spawns(event: str, args) -> None:
    if event in _SPAWN_EVENTS:
        _SPAWNS[0] += 1


sys.addaudithook(_count_spawns)  # an audit hook cannot be removed


def within_budget(compute: Callable[[], object], seconds: float, memory: int):
    """compute() with at most `seconds` of this process's CPU time (a profiling timer,
    every thread's time) and `memory` more bytes of address space than it has now. Past
    the time, OverBudget is raised into the main thread (again every 50 ms, should it be
    swallowed) and into any thread started meanwhile with `threading` (at its next call);
    past the memory, NumPy raises MemoryError. The timer and the limit are the student's
    to lift (setitimer, setrlimit), so once compute() returns it is judged again, from
    clocks and limits captured at import and kept in this function's plain locals (round
    13): OverBudget if this process's CPU time, its waited-for children's and its other
    processes' (_kin_cpu) passed `seconds`, if compute() started a process (a fork, a
    subprocess, one still running or gone) or returned in another process than it was
    called in (a forked child), or if a thread it started is still running; MemoryError if
    the soft limit was raised or the peak address space passed the cap. Without a main
    thread to signal, or in the grader's own process (trusted), compute() runs as it is:
    the cell's timeout, outside the kernel, still bounds it."""
    if (
        _TRUSTED[0]
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or _resource is None
    ):
        return compute()
    import _thread

    expired = [False]
    armed = [True]
    forked = [False]

    def expire(signum, frame):
        if armed[0]:
            expired[0] = True
            raise OverBudget()

    def stop_threads(frame, event, arg):
        # A thread started within the budget stops at its first call after it has passed,
        # and for good. It reads the clock itself: the timer's signal may reach it rather
        # than the main thread, which may be waiting for it (join), and only the main
        # thread runs Python's handlers.
        if expired[0] or _cpu_self() > deadline:
            expired[0] = True
            raise OverBudget()
        return None

    def on_fork():
        forked[0] = True

    # What the judgement after compute() reads: plain locals, which no nested function
    # holds (a closure's cells are reachable from threading.gettrace().__closure__).
    pid = _GETPID()
    limit = _GETRLIMIT(_RLIMIT_AS)
    used = _address_space()
    peak_before = _peak_address_space()
    threads_before = set(threading.enumerate())
    count_before = _thread._count()
    spawns_before = _SPAWNS[0]
    kin_before = _kin_cpu()
    soft = limit[0]  # the soft limit compute() runs under
    previous = signal.signal(signal.SIGPROF, expire)
    before_threads = threading.gettrace()
    _FORK_HOOKS.append(on_fork)
    try:
        if used is not None:
            cap = used + memory
            if limit[1] != _RLIM_INFINITY:
                cap = min(cap, limit[1])
            if limit[0] == _RLIM_INFINITY or cap < limit[0]:
                _SETRLIMIT(_RLIMIT_AS, (cap, limit[1]))
                soft = cap
        children_start = _cpu_children()
        start = _cpu_self()
        deadline = start + seconds
        threading.settrace(stop_threads)
        signal.setitimer(signal.ITIMER_PROF, max(seconds, 1e-3), 0.05)
        result = compute()
        end = _cpu_self()
        children_end = _cpu_children()
        soft_after = _GETRLIMIT(_RLIMIT_AS)[0]
    finally:
        while True:  # a timer firing during the clean-up must not cut it short
            try:
                armed[0] = False
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.signal(signal.SIGPROF, previous)
                threading.settrace(before_threads)
                _SETRLIMIT(_RLIMIT_AS, limit)
                if on_fork in _FORK_HOOKS:
                    _FORK_HOOKS.remove(on_fork)
                break
            except OverBudget:
                continue
    if _GETPID() != pid:  # a forked child returned here: its clock started afresh
        raise OverBudget("it returned in a forked child process")
    if forked[0] or _SPAWNS[0] != spawns_before:
        raise OverBudget("it started another process")
    kin_after = _kin_cpu()
    # A process of the kernel's that ended meanwhile is not counted here: its CPU went to
    # whoever waited for it (this process's children's time, or its parent's, kin too).
    if set(kin_after) - set(kin_before):
        raise OverBudget("it started another process")
    started = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    if started or _thread._count() > count_before:
        raise OverBudget("a thread it started was still running when it returned")
    kin = sum(
        max(ticks - then[0], run - then[1], 0.0)
        for key, (ticks, run) in kin_after.items()
        for then in [kin_before[key]]
    )
    if (end - start) + (children_end - children_start) + kin > seconds:
        raise OverBudget()
    peak_after = _peak_address_space()
    if soft_after == _RLIM_INFINITY or (soft != _RLIM_INFINITY and soft_after > soft):
        raise MemoryError("the address space limit was raised")
    if (
        peak_after is not None
        and soft != _RLIM_INFINITY
        and peak_after > max(soft, peak_before or 0)
    ):
        raise MemoryError("the address space passed its limit")
    return result


def _unlocated(code) -> frozenset[int]:
    """The offsets of a code object's instructions that have no line number (the compiler
    gives them only to exception cleanup, which an honest loop seldom runs)."""
    return frozenset(
        offset
        for start, end, line in code.co_lines()
        if line is None
        for offset in range(start, end, 2)
    )


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _kin_cpu() -> dict[tuple[int, bytes], tuple[float, float]]:
    """CPU seconds of this kernel's other processes, by pid and start time: in bubblewrap's
    sandbox (this kernel is pid 2, under bubblewrap's pid 1) every process there, orphans of
    a double fork included; elsewhere this process's descendants. Each as (its and its
    reaped children's, in clock ticks; its own, to the nanosecond: a worker's millisecond
    falls between ticks). {} without /proc (no Linux)."""
    me = os.getpid()
    in_sandbox = (me, os.getppid()) == (2, 1)
    # Outside the sandbox (unsandboxed, and the tests' in-process judging) /proc holds the
    # whole machine: walk this process's children lists instead of reading every process.
    found = None if in_sandbox else _descendants(me)
    if found is not None:
        kin = {}
        for pid in found:
            stat = _stat(pid)
            if stat is not None:
                kin[(pid, stat[1])] = (stat[2], _run_seconds(pid))
        return kin
    table: dict[int, tuple[int, bytes, float]] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return {}
    for name in entries:
        stat = _stat(int(name))
        if stat is not None:
            table[int(name)] = stat
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    kin, todo = {}, [1 if in_sandbox else me]
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        if pid != me and pid in table:
            kin[(pid, table[pid][1])] = (table[pid][2], _run_seconds(pid))
    return kin


def _stat(pid: int) -> tuple[int, bytes, float] | None:
    """(ppid, start time, CPU seconds of it and its reaped children) from /proc/pid/stat;
    None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command: state, ppid, ..., utime stime cutime cstime (11-14), start (19).
    return int(fields[1]), fields[19], sum(map(int, fields[11:15])) / _TICK


def _descendants(me: int) -> list[int] | None:
    """Every descendant of `me`, from each thread's /proc/<pid>/task/<tid>/children; None
    where Linux has no such file (CONFIG_PROC_CHILDREN), and the caller scans /proc."""
    found, todo = [], [me]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    kids = [int(k) for k in f.read().split()]
            except FileNotFoundError:
                if pid == me and not os.path.exists(f"/proc/{me}/task/{tid}"):
                    continue  # the thread ended meanwhile
                if pid == me:
                    return None
                continue
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _run_seconds(pid: int) -> float:
    """A process's CPU clock (every thread's, to the nanosecond, up to date while it runs:
    schedstat and clock ticks lag a process that has not yet slept); 0 when unknown."""
    try:  # Linux's clock id of a process: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        return time.clock_gettime((~pid << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return 0.0


# os.register_at_fork cannot be undone: one hook, calling whatever lines_run listens with.
_FORK_HOOKS: list[Callable[[], None]] = []


def _before_fork() -> None:
    for hook in list(_FORK_HOOKS):
        hook()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


@contextlib.contextmanager
def quiet():
    """Run student code with its prints, warnings and stderr swallowed."""
    with (
        warnings.catch_warnings(),
        np.errstate(all="ignore"),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        yield


class Outputs(dict):
    """A probe's outputs; `record` runs one piece of student code and keeps what it gave."""

    def record(self, keys: str | list[str], compute: Callable[[], object]) -> None:
        """Store compute() under `keys`; with a list of keys, compute returns one value each.

        If the student's code raises, every one of those keys records what it raised.
        """
        names = [keys] if isinstance(keys, str) else list(keys)
        try:
            with quiet():
                value = compute()
            values = [value] if isinstance(keys, str) else list(value)
            if len(values) != len(names):
                raise ValueError(f"expected {len(names)} results, got {len(values)}")
        except MissingName as exc:
            values = [Broken(str(exc))] * len(names)
        except Exception as exc:  # noqa: BLE001 (any student error fails these keys only)
            values = [Broken(raised(exc))] * len(names)
        for name, value in zip(names, values, strict=True):
            self[name] = _plain(value)


def raised(exc: BaseException) -> str:
    """What an exception of the student's code says: its type, the function of the student's
    that raised it (when one did) and the first line of its message."""
    text = str(exc).splitlines()[0][:120] if str(exc) else ""
    where = raised_in(exc.__traceback__)
    return (
        f"raised {type(exc).__name__}"
        + (f" in {where}" if where else "")
        + (f": {text}" if text else "")
    )


# Code that is not the student's: the course package, and what Python and the installed
# packages bring (numpy, the standard library).
_NOT_THEIRS = tuple(
    str(Path(p).resolve())
    for p in {
        Path(__file__).resolve().parents[1],  # course/
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
        sys.prefix,
        sys.base_prefix,
    }
)


def raised_in(tb) -> str:
    """The innermost function of the student's own code in a traceback, named as the
    student wrote it (`Value.__mul__`, or `_backward` inside `Value.__mul__` for a closure);
    "" when none (a name a check asked for is missing, or the course's own code raised)."""
    name = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        theirs = _theirs(code)
        qualname = getattr(code, "co_qualname", code.co_name)
        if theirs and not code.co_name.startswith("<"):  # not a lambda, nor a cell's body
            parts = qualname.split(".<locals>.")
            name = f"`{parts[-1]}`" + (f" inside `{parts[-2]}`" if len(parts) > 1 else "")
        tb = tb.tb_next
    return name


def _plain(value):
    """Student results as plain data: floats, float64 arrays, or Broken (observations: a
    boolean is recorded as the number it is, never read as a verdict)."""
    if isinstance(value, Broken):
        return value
    if value is None:
        return Broken("returned None (is a `return` missing?)")
    if isinstance(value, str | bytes):
        return Broken(f"returned a {type(value).__name__}, not a number or an array")
    try:
        array = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return Broken(f"returned {type(value).__name__}, not a number or an array")
    return float(array) if array.ndim == 0 else array


def nudged(f: Callable[[np.ndarray], object], x: np.ndarray, df=None, h: float = 1e-5, at=None):
    """Observations for a gradient check: f at copies of x nudged by +h and by -h, one
    element at a time (each value projected on df when f returns an array).

    Returns (plus, minus), each shaped like x; with `at` (flat indices, nudge_sample), only
    those elements are nudged and plus and minus are flat, one value per index. The grader,
    not the kernel, turns them into a centred difference and compares it with the student's
    gradient (course.checks.common).
    """
    if _IN_STUDENT[0]:
        raise PermissionError(
            "course.grader.probe.nudged is the grader's own: a graded function must compute "
            "its gradient itself"
        )
    x = np.array(x, dtype=np.float64)
    where = list(np.ndindex(x.shape)) if at is None else [np.unravel_index(i, x.shape) for i in at]
    plus, minus = np.zeros(len(where)), np.zeros(len(where))
    for k, ix in enumerate(where):
        for sign, into in ((1.0, plus), (-1.0, minus)):
            moved = x.copy()
            moved[ix] = x[ix] + sign * h
            value = np.array(f(moved), dtype=np.float64)
            into[k] = float(value) if df is None else float(np.sum(value * df))
    if at is None:
        return plus.reshape(x.shape), minus.reshape(x.shape)
    return plus, minus


# How many elements of one array a gradient observation nudges: every one of a small
# array, this many of a larger one. A backward pass's gradient is compared with the
# reference's in full elsewhere (its own rule); the centred differences of the learner's
# own forward test that the pair agree, which a wrong term breaks at most elements of.
NUDGE_SAMPLE = 32


def nudge_sample(x: np.ndarray) -> np.ndarray:
    """The flat indices of x that a gradient observation nudges: all of them up to
    NUDGE_SAMPLE elements, else NUDGE_SAMPLE distinct ones chosen by x's own values (the
    same in the reference's run and the learner's, which get the same inputs; drawn from no
    check's generator, so the inputs after it stay what they were)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.size <= NUDGE_SAMPLE:
        return np.arange(x.size)
    digest = hashlib.blake2b(x.tobytes() + repr(x.shape).encode(), digest_size=8).digest()
    chooser = np.random.default_rng(int.from_bytes(digest, "little"))
    return np.sort(chooser.choice(x.size, NUDGE_SAMPLE, replace=False))


_NUDGED_CODE = nudged.__code__


def inside_nudged() -> bool:
    """Whether `nudged` is on this thread's call stack, however it was reached. A function
    the probe hands a student's gradient checker asks, and answers NaN there: a checker
    that borrows the grader's nudging (from an object, a thread, a value it converts later)
    then computes nothing right."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is _NUDGED_CODE:
            return True
        frame = frame.f_back
    return False


# The seed of each check's inputs in this kernel: set by the grader before a grade cell
# runs (course.grader.inputs.SeedHiddenChecks); the public seed otherwise (`course check`).
# The grader never reads it back: it judges against references it computed itself for
# the seed it chose, so a kernel that changes this only gets inputs nobody graded.
_SEEDS: dict[str, int] = {}


def use_seed(name: str, seed: int) -> None:
    _SEEDS[name] = int(seed)


def grader_seed(name: str) -> int | None:
    """The seed the grader set for check `name` in this kernel; None: the public one."""
    return _SEEDS.get(name)


def seeded_by_grader(name: str) -> bool:
    """Whether this kernel is being graded for check `name` (the grader set its seed). Only
    a shortcut for the probe: a kernel that says otherwise gets no credit from it."""
    return name in _SEEDS


def probe(check: Check, namespace: dict, seed: int | None = None) -> dict:
    outputs = Outputs()
    _WORKED_ELSEWHERE[0] = False
    seed = check.seed() if seed is None else seed
    try:
        check.probe(Student(namespace), np.random.default_rng(seed), outputs)
    except Exception as exc:  # noqa: BLE001 (a probe stops at the first unrecorded error)
        why = str(exc) if isinstance(exc, MissingName) else raised(exc)
        outputs.setdefault("_stopped", Broken(why))
    return dict(outputs)


# What a grade cell displays its outputs under (course.grading.check).
PROBE_MIME = "application/vnd.everything-leaks.probe+json"
