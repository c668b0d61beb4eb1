"""The sandbox's command line, and what happens where no sandbox can start."""

import os
import sys
from pathlib import Path

import nbformat
import pytest

from course.grader import sandbox
from course.paths import course_root, tool_env
from tests.harness import Batch


def args_of(cmd):
    return cmd[next(i for i, arg in enumerate(cmd) if arg.endswith("bwrap")) :]


def test_the_kernel_sees_an_allow_list_not_the_host(tmp_path):
    data = tmp_path / "data.csv"
    data.write_text("1,2\n")
    cmd = sandbox.wrap(["python", "-m", "ipykernel_launcher"], tmp_path, [], {"d.csv": data})
    args = args_of(cmd)
    assert "--unshare-all" in args and "--die-with-parent" in args and "--clearenv" in args
    mounted = [args[i + 2] for i, a in enumerate(args) if a in ("--bind", "--ro-bind")]
    assert "/" not in mounted, "the host's root is not mounted, only what the kernel needs"
    for host in (course_root(), Path.home(), Path("/run"), Path("/var"), Path("/tmp")):
        assert str(host) not in mounted
    binds = [args[i + 1] for i, a in enumerate(args) if a == "--bind"]
    assert binds == [str(tmp_path.resolve())]  # the sockets folder: the only host writes
    assert f"{sandbox.WORKDIR}/d.csv" in mounted
    sized = {args[i + 3] for i, a in enumerate(args) if a == "--size"}
    assert sized == {"/dev/shm", "/tmp", sandbox.HOME}  # every tmpfs is bounded
    assert args[args.index("--chdir") + 1] == sandbox.WORKDIR
    env = {args[i + 1] for i, a in enumerate(args) if a == "--setenv"}
    assert not env & {"COURSE_ROOT", "COURSE_DB_URL", "PGPASSWORD", "JUPYTERHUB_API_TOKEN"}
    if os.geteuid() == 0:
        assert "--cap-drop" in args
    # bwrap (pid 1 inside) starts with an empty environment: no secret in /proc/1/environ.
    assert cmd[:3] == ["/usr/bin/env", "-i", "prlimit"] and any(a.startswith("--as=") for a in cmd)
    assert args[-4:] == ["python", "-I", "-m", "ipykernel_launcher"]  # no shadowing


def test_secrets_in_the_graders_environment_do_not_reach_the_kernel(monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "hunter2")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    env = sandbox.kernel_env()
    assert env[0] == "--clearenv" and "hunter2" not in env
    # One BLAS thread whatever the grader's environment says: a grade must not depend on it.
    assert env[env.index("OPENBLAS_NUM_THREADS") + 1] == "1"


def test_the_watchdog_counts_files_and_bytes_without_following_links(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 100_000)
    (tmp_path / "link").symlink_to("/usr")
    files, size = sandbox.written(tmp_path, 100)
    assert files == 2 and 100_000 <= size < 200_000
    limits = sandbox.Limits(written_bytes=50_000, written_files=10)
    killed = []
    dog = sandbox.Watchdog(tmp_path, lambda: killed.append(1), limits, period=3600)
    assert "wrote more than" in dog.check()
    dog.stop()


def test_kernel_output_is_read_back_capped_and_escaped(tmp_path):
    (tmp_path / "log").write_bytes(b"fine\n\x1b[31mred\r" + b"y" * 100)
    text = sandbox.read_capped(tmp_path / "log", limit=20)
    assert "\x1b" not in text and "\\x1b" in text and text.endswith("[... cut]")
    (tmp_path / "link").symlink_to(tmp_path / "log")
    assert sandbox.read_capped(tmp_path / "link") == ""


def test_kernels_join_their_cgroups_before_anything_runs(tmp_path):
    cmd = sandbox.wrap(["k"], tmp_path, cgroups=[tmp_path / "pids", tmp_path / "memory"])
    join = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"']
    assert cmd[:3] == join and cmd[3] == str(tmp_path / "memory" / "cgroup.procs")
    assert cmd[4:7] == join and cmd[7] == str(tmp_path / "pids" / "cgroup.procs")
    assert cmd[8] == "/usr/bin/env"


@pytest.mark.slow
def test_no_sandbox_means_nothing_graded_and_a_clear_message(tmp_path):
    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("someone", batch.answered(trim=True))
    env = tool_env(COURSE_ROOT=str(batch.course.root))
    env["PATH"] = str(Path(sys.executable).parent)  # no bwrap on this PATH
    proc = batch.course_grade(env=env)
    assert proc.returncode == 2
    assert "nothing graded" in proc.stderr and "bubblewrap" in proc.stderr
    assert "--unsandboxed" in proc.stderr
    assert not (batch.course.root / "autograded" / "someone").exists()


@pytest.mark.slow
def test_unsandboxed_on_purpose_still_grades(tmp_path):
    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("someone", batch.answered(trim=True))
    proc = batch.course_grade("--unsandboxed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WITHOUT the sandbox" in proc.stdout
    assert batch.scores()["someone"] == batch.max_scores()


@pytest.mark.slow
def test_a_missing_reference_stops_the_run_naming_the_check(tmp_path):
    """A grader fault is loud: exit status 2, the check named, nobody scored zero for it."""
    import json

    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("someone", batch.answered(trim=True))
    path = batch.course.root / "references" / "01_backprop" / "backprop.json"
    references = json.loads(path.read_text())
    del references["value_ops"]
    path.write_text(json.dumps(references))
    # The committed references are the run's only with the public inputs (as course check).
    with (batch.course.root / "nbgrader_config.py").open("a") as config:
        config.write("\nc.SeedHiddenChecks.public = True\n")
    proc = batch.course_grade("--workers", "1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "the grader failed" in proc.stderr and "'value_ops'" in proc.stderr
    assert "someone" not in batch.scores()  # not recorded as a zero


def test_a_kernel_without_the_sandbox_gets_one_blas_thread_too(monkeypatch, tmp_path):
    """`course grade --unsandboxed`: the kernel inherits the grader's environment, but its
    BLAS threads are fixed (they used to be set by loading nbgrader_config.py)."""
    from course.grader.nbgrader_ext import GuardedExecute

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    cell = nbformat.v4.new_code_cell("import os; print(os.environ['OPENBLAS_NUM_THREADS'])")
    nb = nbformat.v4.new_notebook(cells=[cell])
    resources = {"metadata": {"path": str(tmp_path)}, "nbgrader": {"student": "s"}}
    nb, _ = GuardedExecute(sandbox=False, timeout=60).preprocess(nb, resources)
    assert nb.cells[0].outputs[0]["text"].strip() == "1"


def test_a_submissions_time_budget_is_sized_to_a_notebook(monkeypatch):
    """Round 4: a notebook of cells that each stop just under the cell timeout held a
    worker for ten timeouts (600 s); the budget is now four (a training cell's three and
    one more), unless the course sets one."""
    from course.grader.nbgrader_ext import GuardedExecute

    monkeypatch.delenv("COURSE_SUBMISSION_TIMEOUT", raising=False)
    assert GuardedExecute(sandbox=False, timeout=60).budget() == 240
    assert GuardedExecute(sandbox=False, timeout=5).budget() == 20
    assert GuardedExecute(sandbox=False, timeout=60, submission_timeout=90).budget() == 90
    monkeypatch.setenv("COURSE_SUBMISSION_TIMEOUT", "45")
    assert GuardedExecute(sandbox=False, timeout=60).budget() == 45


def test_the_limits_are_settings_of_the_course(tmp_path):
    """Issue 13: the sandbox's limits are traits, set in nbgrader_config.py like nbgrader's
    own, and reach the kernel's command line."""
    from traitlets.config import Config

    config = Config()
    config.SandboxedKernelManager.tmp_tmpfs = 12_345_678
    config.SandboxedKernelManager.address_space = 3 * 2**30
    km = sandbox.SandboxedKernelManager(config=config)  # as nbclient makes it: with the config
    assert km.limits.tmp_tmpfs == 12_345_678 and km.limits.processes == sandbox.LIMITS.processes
    cmd = sandbox.wrap(["k"], tmp_path, [], {}, km.limits)
    assert cmd[cmd.index("/tmp") - 2 : cmd.index("/tmp")] == ["12345678", "--tmpfs"]
    assert f"--as={3 * 2**30}" in cmd
