"""Round 4 of attacks (a helper that had not read the defences), as a student would make
them, run with the real `course grade` (sandbox on) in a scratch course: the findings that
are fixed. The others are listed in the README's security section."""

import subprocess
import sys

import nbformat
import pytest

from tests.harness import Batch

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"


def cell_text(batch, student: str, marker: str) -> str:
    """What the graded notebook's cell whose source holds `marker` printed."""
    path = batch.course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    cell = next(c for c in nbformat.read(path, as_version=4).cells if marker in c.source)
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


def test_a_fifo_named_timestamp_txt_does_not_hang_the_grader(tmp_path):
    """Every other special file in a submission is reported ("not a regular file: ignored"),
    but timestamp.txt is opened as is: `course grade` blocks forever opening the fifo, and
    the class's table (and every submission recorded after it) never comes."""
    import os
    import signal

    from course.paths import tool_env

    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    os.mkfifo(batch.submit("ada", batch.release) / "timestamp.txt")
    batch.submit("zoe", batch.answered(trim=True))
    grading = subprocess.Popen(
        [sys.executable, "-m", "course.cli", "grade", ASSIGNMENT, "--workers", "1"],
        env=tool_env(COURSE_ROOT=str(batch.course.root)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = grading.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(grading.pid, signal.SIGKILL)
        grading.communicate()
        pytest.fail("course grade hung on a submission's fifo timestamp.txt")
    assert "zoe" in out and batch.scores()["zoe"] == batch.max_scores()


def test_a_timestamp_txt_that_never_ends_does_not_exhaust_the_graders_memory(tmp_path):
    """timestamp.txt is read whole, whatever it is: a symbolic link to /dev/zero (or a huge
    sparse file) grows `course grade` until the machine's OOM killer stops it (22 GB here,
    nothing recorded, no table). Run under a 6 GB address-space limit, so as not to take
    the test machine down: today the read ends in MemoryError, which the table reports."""
    import os
    import resource

    from course.paths import tool_env

    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    (batch.submit("ada", batch.release) / "timestamp.txt").symlink_to("/dev/zero")
    batch.submit("zoe", batch.answered(trim=True))

    def capped():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    proc = subprocess.run(
        [sys.executable, "-m", "course.cli", "grade", ASSIGNMENT, "--workers", "1"],
        env=tool_env(COURSE_ROOT=str(batch.course.root)),
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=capped,
    )
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert batch.scores().get("zoe") == batch.max_scores()
    assert "MemoryError" not in proc.stdout, proc.stdout


def test_a_resubmission_does_not_get_the_inputs_its_feedback_showed(tmp_path):
    """The grading seeds reach the kernel (they must), so a cell can print them into the
    student's feedback; a changed submission must meet new ones (seeds are salted by the
    submission's digest), and the same submission graded again the same ones."""
    import json

    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    nb = batch.answered(trim=True)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import json, course.grader.probe as P; print(json.dumps(sorted(P._SEEDS.items())))"
        )
    )

    def graded_seeds(*flags) -> dict:
        batch.course_grade("--workers", "1", *flags)
        return dict(json.loads(cell_text(batch, "mallory", "P._SEEDS")))

    batch.submit("mallory", nb)
    first = graded_seeds()
    assert first and graded_seeds("--force") == first, "the same submission, other inputs"
    nb.cells.insert(1, nbformat.v4.new_code_cell("resubmitted = True"))
    batch.submit("mallory", nb)
    second = graded_seeds("--force")
    known = {name for name, seed in second.items() if first.get(name) == seed}
    assert second and not known, f"regraded on inputs its first feedback showed: {known}"
    assert batch.scores()["mallory"] == batch.max_scores()


# The kernel side of the checks (course.grader.probe) is importable from a grading kernel,
# and `nudged` is a numerical gradient but for one subtraction.
BORROWED_CHECKER = """
def eval_numerical_gradient(f, x, h=1e-5):
    from course.grader.probe import nudged
    plus, minus = nudged(f, x, None, h)
    return (plus - minus) / (2 * h)
"""


HONEST_CHECKER = """
import numpy as np

def eval_numerical_gradient(f, x, h=1e-5):
    grad = np.zeros_like(x, dtype=float)
    for ix in np.ndindex(x.shape):
        old = x[ix]
        x[ix] = old + h
        plus = f(x)
        x[ix] = old - h
        minus = f(x)
        x[ix] = old
        grad[ix] = (plus - minus) / (2 * h)
    return grad
"""


def test_a_kernel_cannot_borrow_the_probes_numerical_gradient():
    """Judged in this process, as the grader judges a kernel's outputs (test_mutants)."""
    from course.authoring.classroom import fill, judge_in_process, solution_sources
    from course.paths import course_root
    from tests.test_mutants import source_notebook

    release = course_root() / "release" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = fill(
        nbformat.read(release, as_version=4), {"eval_numerical_gradient_solution": BORROWED_CHECKER}
    )
    scores = judge_in_process(source_notebook(ASSIGNMENT, NOTEBOOK), solution_sources(nb))
    assert scores["eval_numerical_gradient"] == 0
    honest = fill(nb, {"eval_numerical_gradient_solution": HONEST_CHECKER})
    scores = judge_in_process(source_notebook(ASSIGNMENT, NOTEBOOK), solution_sources(honest))
    assert scores["eval_numerical_gradient"] > 0


# The kernel's sockets folder is bound read-write from the grader's own disk: the write
# budget is a watchdog that looks every half second, and fallocate reserved gigabytes in
# milliseconds (3.2 GB in 11 ms; 512 open files of 64 MB each, again and again). The
# sandbox's seccomp filter now refuses fallocate (and io_uring, which could do the same).
FALLOCATE = r"""
import glob, os
d = glob.glob('/tmp/el-kernel-*/sockets')[0]
refused = 0
for i in range(16):
    fd = os.open(f'{d}/f{i}', os.O_WRONLY | os.O_CREAT)
    try:
        os.posix_fallocate(fd, 0, 64 << 20)
    except OSError:
        refused += 1
    os.close(fd)
used = sum(os.stat(f'{d}/f{i}').st_blocks * 512 for i in range(16))
print('RESERVED', used, 'REFUSED', refused)
"""


def test_a_kernel_cannot_reserve_the_graders_disk(tmp_path):
    import copy

    batch = Batch(tmp_path, ASSIGNMENT, NOTEBOOK)
    nb = copy.deepcopy(batch.release)
    nb.cells.insert(2, nbformat.v4.new_code_cell(FALLOCATE))
    batch.submit("mallory", nb)
    batch.course_grade("--workers", "1")
    printed = cell_text(batch, "mallory", "posix_fallocate")
    assert "RESERVED" in printed, printed
    reserved = int(printed.split("RESERVED")[1].split()[0])
    assert reserved <= 64 << 20, f"{reserved >> 20} MB reserved on the grader's disk"
    assert "REFUSED 16" in printed


def test_the_seccomp_filter_refuses_what_it_lists():
    """The filter is a program for the machine's kernel: check its shape on both machines
    listed, and that a syscall it does not list passes (run for real in the test above)."""
    import struct

    from course.grader.sandbox import REFUSED_SYSCALLS, seccomp_filter

    for machine, numbers in REFUSED_SYSCALLS.items():
        program = seccomp_filter(machine)
        instructions = [
            struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)
        ]
        assert instructions[-2] == (0x06, 0, 0, 0x7FFF0000)  # allow the rest
        refused = {k for code, jt, _, k in instructions if code == 0x15 and jt} - {
            0xC000003E,
            0xC00000B7,
        }
        assert refused == set(numbers.values())
    assert seccomp_filter("riscv64") is None


# A student who can reach the scheduler (a hub account on the grading machine, any host on
# its network) ran code in every worker, outside the sandbox, before the instructor graded:
# every check then scored full points. The scheduler now takes members of the cluster only
# (mutual TLS, course.grader.cluster): a client without the cluster's key is turned away.
STUDENT_CLIENT = """
import sys
from distributed import Client
from distributed.security import Security

def forge():
    import course.grader.judge as judge

    def score(check, results):
        return float(check.points)

    judge.score.__code__ = score.__code__

address, ca, cert, key = sys.argv[1:]
attempts = {
    "plain tcp": (address.replace("tls://", "tcp://"), None),
    "tls, no certificate": (address, Security(tls_ca_file=ca, require_encryption=True)),
    "tls, its own certificate": (address, Security(
        tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True)),
}
for name, (where, security) in attempts.items():
    try:
        with Client(where, security=security, timeout="10s") as client:
            client.run(forge)
            print("FORGED", name)
    except Exception as exc:
        print("REFUSED", name, type(exc).__name__)
"""


def test_a_client_of_the_dask_scheduler_cannot_forge_grades(tmp_path):
    pytest.importorskip("distributed")
    from course.authoring.bench import dask_cluster
    from course.grader.cluster import CA, CERT, KEY, make_certificates

    batch = Batch(tmp_path / "course", ASSIGNMENT, NOTEBOOK)
    batch.submit("mallory", batch.release)  # blank
    make_certificates(tmp_path / "mallory")  # an authority and a certificate of her own
    with dask_cluster(1) as (scheduler, _):
        mine = [str(tmp_path / "mallory" / name) for name in (CERT, KEY)]
        argv = [scheduler.address, str(scheduler.tls / CA), *mine]  # the CA is not secret
        proc = subprocess.run(
            [sys.executable, "-c", STUDENT_CLIENT, *argv],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.stdout.count("REFUSED") == 3, proc.stdout + proc.stderr[-2000:]
        batch.course_grade(*scheduler.flags())
    assert sum(batch.scores()["mallory"].values()) == 0
