"""`course bench`: how long the course takes, measured here.

Prints, for each source notebook, the seconds to run it top to bottom with the solutions
(fresh kernel included), and for autograding one assignment: seconds per submission as
its own `nbgrader autograde` process and in a batch, split into the notebook's execution
and everything else (imports, kernel start, gradebook); then the throughput of grading a
class of 40: sequential `nbgrader autograde`, `course grade` with one worker and with one
per core, and on a local Dask cluster.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from course.authoring import build
from course.authoring.classroom import carried_modules, fill, solution_sources
from course.grader.kernel_client import PromptNotebookClient, TimedNotebookClient
from course.grader.scratch import ScratchCourse
from course.paths import course_root

BATCH = 4


def execute_seconds(path: Path, repeat: int = 1) -> float:
    """Median wall time to execute a notebook in a fresh kernel, in its own folder."""
    times = []
    for _ in range(repeat):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        start = time.perf_counter()
        PromptNotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute(stderr=subprocess.DEVNULL)  # the kernel's own start-up warnings
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_autograde(text: Path, scratch: Path) -> dict[str, float]:
    assignment, notebook = text.parent.name, build.notebook_path(text).stem
    course = ScratchCourse(scratch)
    course.register(assignment)
    solution = fill(
        course.release_notebook(assignment, notebook),
        solution_sources(course.source_notebook(assignment, notebook)),
    )
    carried = carried_modules(course.root, assignment)  # code carried from earlier ones
    for i in range(BATCH):
        course.submit(f"s{i}", assignment, {f"{notebook}.ipynb": solution, **carried})
    single = timed(lambda: course.nbgrader("autograde", assignment, "--student=s0", "--force"))
    graded = course.root / "autograded" / "s0" / assignment / f"{notebook}.ipynb"
    execution = execute_seconds(graded)  # the very notebook nbgrader ran, hidden checks included

    def batch(*flags: str) -> float:
        """Seconds per submission in one batch; the best of two runs, against noise."""
        runs = [
            timed(lambda: course.nbgrader("autograde", assignment, "--force", *flags))
            for _ in range(2)
        ]
        return min(runs) / BATCH

    sandboxed, unsandboxed = batch(), batch("--GuardedExecute.sandbox=False")
    return {
        "single": single,
        "batch": sandboxed,
        "execution": execution,
        "unsandboxed": unsandboxed,
    }


CLASS_SIZE = 40


def class_of(course: ScratchCourse, assignment: str, notebook: str, size: int) -> None:
    """`size` generated submissions: the solutions, trimmed to the cells that are graded
    (imports, solutions, hidden checks), as a mutant harness or a terse student would."""
    solution = fill(
        course.release_notebook(assignment, notebook),
        solution_sources(course.source_notebook(assignment, notebook)),
        trim=True,
    )
    for i in range(size):
        course.submit(f"student{i:03d}", assignment, {f"{notebook}.ipynb": solution})


def course_grade(course: ScratchCourse, assignment: str, *flags: str) -> None:
    cmd = [sys.executable, "-m", "course.cli", "grade", assignment, "--force", *flags]
    proc = subprocess.run(cmd, env=course.env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:  # every submission is a correct solution: all graded, no notes
        raise RuntimeError(f"course grade failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def executions_at_once(path: Path, at_once: int, repeat: int = 3) -> float:
    """Median seconds to execute the notebook at `path` while `at_once` copies of it run
    at the same time (each in its own process and kernel), as graders share the cores."""
    if at_once == 1:
        return execute_seconds(path, repeat)
    with concurrent.futures.ProcessPoolExecutor(at_once) as pool:
        times = []
        for _ in range(repeat):
            times += pool.map(execute_seconds, [path] * at_once)
    return statistics.median(times)


@contextlib.contextmanager
def dask_cluster(workers: int):
    """A real Dask cluster on loopback, started as an instructor would (`course
    cluster-certs`, then `dask scheduler` and `dask worker --nthreads 1` over TLS), quiet;
    yields the Scheduler (course.grader.cluster) and the scheduler's process."""
    from course.grader import cluster

    tools = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="course-dask-") as scratch:
        certs = Path(scratch) / "certs"
        cluster.make_certificates(certs)
        tls = cluster.dask_options(certs)
        address_file = Path(scratch) / "scheduler.json"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": scratch}
        scheduler = subprocess.Popen(
            [tools / "dask", "scheduler", "--protocol", "tls", "--host", "127.0.0.1"]
            + ["--port", "0", "--no-dashboard", "--scheduler-file", str(address_file), *tls],
            **quiet,
        )
        worker = subprocess.Popen(
            [tools / "dask", "worker", "--scheduler-file", str(address_file)]
            + ["--nworkers", str(workers), "--nthreads", "1", "--no-dashboard", *tls],
            **quiet,
        )
        try:
            address = None
            for _ in range(600):
                with contextlib.suppress(OSError, ValueError, KeyError):  # not written yet
                    address = json.loads(address_file.read_text())["address"]
                    break
                time.sleep(0.1)
            found = cluster.checked(str(address), certs)
            with found.client(timeout="60s") as client:
                client.wait_for_workers(workers, timeout=120)
            yield found, scheduler
        finally:
            for process in (worker, scheduler):
                process.terminate()
                process.wait(timeout=60)


def bench_class(text: Path, size: int = CLASS_SIZE) -> None:
    """Throughput of grading a whole class: sequential nbgrader against `course grade`.

    The machine's speed drifts over minutes (a shared host), so each run's overhead is
    reckoned against the notebook's execution measured right after that run."""
    assignment, notebook = text.parent.name, build.notebook_path(text).stem
    workers = os.cpu_count() or 1
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        course = ScratchCourse(Path(scratch))
        course.register(assignment)
        class_of(course, assignment, notebook, size)
        # The notebook's own execution: the very notebook nbgrader ran (hidden checks in),
        # in a fresh kernel, with nothing of nbgrader around it.
        graded = course.root / "autograded" / "student000" / assignment / f"{notebook}.ipynb"

        def run(how: str, cores: int, grade) -> None:
            seconds = timed(grade)
            rows.append((how, cores, seconds, executions_at_once(graded, cores)))

        run(
            "nbgrader autograde (sequential)",
            1,
            lambda: course.nbgrader("autograde", assignment, "--force"),
        )
        run("course grade --workers 1", 1, lambda: course_grade(course, assignment, "--workers=1"))
        run(
            f"course grade --workers {workers}",
            workers,
            lambda: course_grade(course, assignment, "--workers", str(workers)),
        )
        with dask_cluster(workers) as (scheduler, _):
            run(
                f"course grade on a local Dask cluster over TLS ({workers} workers)",
                workers,
                lambda: course_grade(course, assignment, *scheduler.flags()),
            )
    base = rows[0][2]
    print(
        f"\ngrading a class of {size} submissions of {assignment} on {workers} cores "
        "(goals: 1.8x on 2 cores, under 0.5 s overhead each)"
    )
    print("  execution: the graded notebook run in a fresh kernel, with nothing of nbgrader,")
    print("  as many at once as the run used cores; measured right after each run")
    print("  overhead: core-seconds per submission beyond it (cores x seconds / submissions")
    print("  - execution): imports, nbgrader, verdicts and their pictures, the gradebook")
    print(
        f"  {'how':<48}{'seconds':>8}{'per minute':>12}{'speed-up':>10}"
        f"{'execution':>11}{'overhead':>10}"
    )
    for how, cores, seconds, execution in rows:
        overhead = seconds * cores / size - execution
        print(
            f"  {how:<48}{seconds:>8.1f}{60 * size / seconds:>12.1f}"
            f"{base / seconds:>9.2f}x{execution:>10.2f}s{overhead:>9.2f}s"
        )


# ---------------------------------------------------------------- the convolution's cost

CONV_SHAPES = {"N": 32, "C": 8, "H": 16, "W": 16, "F": 16, "HH": 3, "WW": 3}
CONV_GOAL = 2.0  # the reference fast pair's time, at most this many times PyTorch's
CONV_ROUNDS = 50


def best_of(fn, repeat: int) -> float:
    """The fastest of `repeat` runs, in seconds: the least disturbed by other work."""
    return min(timed(fn) for _ in range(repeat))


def _in_child(function: str, threads: int) -> None:
    """Run this module's `function(threads)` in a child process, so that the thread count
    is set before NumPy's BLAS (and PyTorch) start."""
    env = {
        **os.environ,
        **{
            name: str(threads)
            for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
        },
    }
    code = f"from course.authoring.bench import {function}; {function}({threads})"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def bench_conv(threads: int = 1) -> None:
    """The reference fast convolution (forward + backward, float64) from 06's solutions,
    timed side by side with PyTorch CPU's conv2d on the same shapes and threads; the naive
    loops' time and im2col's memory beside them."""
    _in_child("_bench_conv_here", threads)


def _bench_conv_here(threads: int) -> None:
    import tracemalloc

    import numpy as np

    text = course_root() / "source" / "06_convolution" / "convolution.pct.py"
    solutions = build.solution_namespace(build.notebook_from_text(text.read_text()), "bench")
    forward, backward = solutions["conv_forward_fast"], solutions["conv_backward_fast"]
    naive_forward, naive_backward = (
        solutions["conv_forward_naive"],
        solutions["conv_backward_naive"],
    )
    s = CONV_SHAPES
    rng = np.random.default_rng(0)
    x = rng.standard_normal((s["N"], s["C"], s["H"], s["W"]))
    w = rng.standard_normal((s["F"], s["C"], s["HH"], s["WW"]))
    b = rng.standard_normal(s["F"])
    dout = rng.standard_normal((s["N"], s["F"], s["H"], s["W"]))
    param = {"stride": 1, "pad": 1}

    def fast_pair():
        out, cache = forward(x, w, b, param)
        return out, *backward(dout, cache)

    shape = ", ".join(f"{k}={v}" for k, v in s.items())
    print(
        f"\nconvolution, forward + backward, float64, {shape}, stride 1, pad 1, {threads} thread(s)"
    )
    print(
        f"(fast pairs: best of {CONV_ROUNDS} runs each, taken in turn; the naive loops: best of 2)"
    )

    def naive_pair():
        out, cache = naive_forward(x, w, b, param)
        return out, *naive_backward(dout, cache)

    naive = best_of(naive_pair, 2)
    tracemalloc.start()
    forward(x, w, b, param)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cols = s["C"] * s["HH"] * s["WW"] * s["N"] * s["H"] * s["W"] * 8
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(threads)
        tx = torch.tensor(x, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        tdout = torch.tensor(dout)

        def torch_pair():
            for t in (tx, tw, tb):
                t.grad = None
            torch.nn.functional.conv2d(tx, tw, tb, stride=1, padding=1).backward(tdout)

    # In turn, so that the machine's load falls on both alike.
    mine, theirs = [], []
    for _ in range(CONV_ROUNDS):
        mine.append(timed(fast_pair))
        if torch is not None:
            theirs.append(timed(torch_pair))
    ours = min(mine)
    print(f"  {'reference fast pair (im2col)':<40}{ours * 1e3:>9.2f} ms")
    print(
        f"  {'reference naive pair (loops)':<40}{naive * 1e3:>9.0f} ms  "
        f"({naive / ours:.0f}x the fast pair)"
    )
    print(
        f"  {'im2col matrix':<40}{cols / 2**20:>9.2f} MiB  ({cols / x.nbytes:.0f}x the input "
        f"of {x.nbytes / 2**20:.2f} MiB); peak during the forward {peak / 2**20:.2f} MiB"
    )
    if torch is None:
        print("  PyTorch: not installed (`pip install -e '.[bench]'`, or `make bench`)")
        return
    torch_pair()
    same = max(
        float(np.max(np.abs(ours_ - theirs_.detach().numpy())))
        for ours_, theirs_ in zip(fast_pair()[1:], (tx.grad, tw.grad, tb.grad), strict=True)
    )
    theirs = min(theirs)
    ratio = ours / theirs
    verdict = "within" if ratio <= CONV_GOAL else "over"
    print(
        f"  {'PyTorch ' + torch.__version__ + ' conv2d (CPU)':<40}{theirs * 1e3:>9.2f} ms  "
        f"(largest gradient difference {same:.1e})"
    )
    print(f"  reference / PyTorch: {ratio:.2f}x ({verdict} the goal of {CONV_GOAL:g}x)")


def bench_speed_check(repeat: int = 3) -> None:
    """06's graded speed cell with the solutions, timed as the grader times it: the cell's
    seconds from outside the kernel, the yardstick in this process, and what the rule
    makes of them (course.checks.convolution.grader_timing)."""
    from course.authoring.classroom import grade_id_of_test_cell
    from course.checks import convolution

    path = build.notebook_path(course_root() / "source" / "06_convolution" / "convolution.pct.py")
    print(
        f"\n06's speed check on the solutions ({convolution.TIMED_RUNS} fast pairs in the cell, "
        f"{convolution.CELL_ALLOWANCE:g} s allowed for the cell's own cost; "
        f"passes at {1 / convolution.REQUIRED_SPEEDUP:g})"
    )
    print(f"  {'cell':>8}{'yardstick':>11}{'charged a run':>15}{'share':>9}{'margin':>8}")
    for _ in range(repeat):
        nb = nbformat.read(path, as_version=4)
        client = TimedNotebookClient(
            nb,
            timeout=120,
            kernel_name="python3",
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute(stderr=subprocess.DEVNULL)
        [index] = [
            i for i, c in enumerate(nb.cells) if grade_id_of_test_cell(c) == "conv_fast_speed"
        ]
        seconds = client.cell_seconds[index]
        loops, fast = convolution.grader_timing(seconds)[f"time:{convolution.SPEED_LABEL}"]
        share = fast[0] / loops.min()
        margin = (1 / convolution.REQUIRED_SPEEDUP) / share
        print(
            f"  {seconds:>7.2f}s{loops.min() * 1e3:>9.1f}ms{fast[0] * 1e3:>12.3f}ms"
            f"{share:>9.4f}{margin:>7.1f}x"
        )


LANDSCAPE_GRID = 41  # points a side of the 2-D slice timed
LANDSCAPE_ROUNDS = 3


def bench_landscape() -> None:
    """course.landscape on 03's two-layer net (the solutions' TwoLayerNet and sgd, 64-100-10,
    trained on the digits): a 41 x 41 slice along filter-normalised directions, the
    interpolation from the start and the trajectory's PCA, with one BLAS thread (as a
    grading kernel has) and with two."""
    for threads in (1, 2):
        _in_child("_bench_landscape_here", threads)


def _bench_landscape_here(threads: int) -> None:
    import numpy as np

    from course import landscape
    from course.data import digits
    from course.training import fit

    text = course_root() / "source" / "03_multilayer" / "multilayer.pct.py"
    solutions = build.solution_namespace(build.notebook_from_text(text.read_text()), "bench")
    data = digits()
    X, y = data.X_train - data.X_train.mean(axis=0), data.y_train
    np.random.seed(0)
    net = solutions["TwoLayerNet"](64, 100, 10, weight_scale=0.1, reg=1e-3)
    snaps = landscape.Snapshots(net)
    fit(
        net,
        solutions["sgd"],
        X,
        y,
        epochs=30,
        batch_size=len(X),
        config={"learning_rate": 0.5},
        progress=snaps,
    )
    objective = landscape.model_loss(net, X, y)
    data_loss = landscape.model_loss(net, X, y, data_loss=solutions["softmax_loss"])
    directions = landscape.random_directions(net.params, seed=0)
    n = LANDSCAPE_GRID
    timings = {
        f"slice_2d {n} x {n}, net.loss(X, y)": lambda: landscape.slice_2d(
            objective, net.params, directions, span=1.0, resolution=n
        ),
        f"slice_2d {n} x {n}, data loss only": lambda: landscape.slice_2d(
            data_loss, net.params, directions, span=1.0, resolution=n
        ),
        f"interpolation, {n} points": lambda: landscape.interpolation(
            objective, snaps.path[0], net.params, resolution=n
        ),
        f"trajectory_pca of {len(snaps.path)} points": lambda: landscape.trajectory_pca(snaps.path),
    }
    print(
        f"\nloss landscape of 03's two-layer net (64-100-10, {len(X)} training digits), "
        f"{threads} BLAS thread(s), best of {LANDSCAPE_ROUNDS}; goal: the {n} x {n} slice "
        "in a few seconds\n(net.loss(X, y): loss and gradients a point; data loss only: "
        "softmax_loss(net.loss(X), y), the forward pass)"
    )
    for what, run in timings.items():
        print(f"  {what:<40}{best_of(run, LANDSCAPE_ROUNDS):>9.2f} s")


def main(
    notebooks_only: bool = False,
    class_only: bool = False,
    conv_only: bool = False,
    landscape_only: bool = False,
) -> int:
    root = course_root()
    texts = build.text_sources(root)
    if conv_only:
        bench_conv()
        bench_speed_check()
        return 0
    if class_only:
        bench_class(texts[0])
        return 0
    if landscape_only:
        bench_landscape()
        return 0
    print("notebook execution with the solutions (restart and run all, fresh kernel, median of 3;")
    print("goal: about a minute at most on 2 cores)")
    for text in texts:
        path = build.notebook_path(text)
        print(f"  {str(path.relative_to(root)):<40} {execute_seconds(path, repeat=3):6.1f} s")
    if notebooks_only:
        return 0
    bench_conv()
    bench_speed_check()
    bench_landscape()
    print(f"\nautograding one submission of the solutions (nbgrader autograde; batch of {BATCH})")
    print(
        f"  {'assignment':<16}{'own process':>12}{'of which start-up':>19}"
        f"{'in a batch':>12}{'of which overhead':>19}{'execution':>11}"
    )
    results = {}
    for text in texts:
        with tempfile.TemporaryDirectory() as scratch:
            t = bench_autograde(text, Path(scratch))
        print(
            f"  {text.parent.name:<16}{t['single']:>11.1f}s{t['single'] - t['execution']:>18.1f}s"
            f"{t['batch']:>11.1f}s{t['batch'] - t['execution']:>18.1f}s{t['execution']:>10.1f}s"
        )
        results[text.parent.name] = t
    print(f"\nthe sandbox's cost (seconds per submission in a batch of {BATCH}; goal: under 10%)")
    print(f"  {'assignment':<16}{'sandboxed':>10}{'unsandboxed':>13}{'ratio':>8}")
    for name, t in results.items():
        ratio = t["batch"] / t["unsandboxed"]
        print(f"  {name:<16}{t['batch']:>9.2f}s{t['unsandboxed']:>12.2f}s{ratio:>8.3f}")
    bench_class(texts[0])  # the class's throughput measures the grading machinery, not content
    return 0
