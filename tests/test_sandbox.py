"""The sandbox's command line, and what happens where no sandbox can start."""

import os
import sys
from pathlib import Path

import pytest

from course.grader import sandbox
from course.paths import course_root, tool_env
from tests.harness import Batch


def test_wrapped_kernel_hides_the_course_and_binds_only_its_workdir(tmp_path):
    work, private = tmp_path / "work", tmp_path / "private"
    cmd = sandbox.wrap(["python", "-m", "ipykernel_launcher"], work, private, cgroup=None)
    bwrap_at = next(i for i, arg in enumerate(cmd) if arg.endswith("bwrap"))
    args = cmd[bwrap_at:]
    assert "--unshare-all" in args and "--die-with-parent" in args
    assert args[args.index("--ro-bind") + 1 : args.index("--ro-bind") + 3] == ["/", "/"]
    tmpfs = [args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"]
    assert str(course_root()) in tmpfs and str(Path.home()) in tmpfs
    binds = [args[i + 1] for i, a in enumerate(args) if a == "--bind"]
    assert binds == [str(private.resolve()), str(work.resolve())]  # the only writable places
    last_tmpfs = max(i for i, a in enumerate(args) if a == "--tmpfs")
    assert all(
        i > last_tmpfs
        for i, a in enumerate(args)
        if a in ("--bind", "--ro-bind") and args[i + 1] != "/"
    ), "a bind before a tmpfs would be hidden by it"
    if os.geteuid() == 0:
        assert "--cap-drop" in args
    assert cmd[0] == "prlimit" and any(a.startswith("--as=") for a in cmd)
    assert args[-3:] == ["python", "-m", "ipykernel_launcher"]


def test_kernels_join_their_cgroup_before_anything_runs(tmp_path):
    cmd = sandbox.wrap(["k"], tmp_path, tmp_path, cgroup=tmp_path / "g")
    assert cmd[:3] == ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"']
    assert cmd[3] == str(tmp_path / "g" / "cgroup.procs")


@pytest.mark.slow
@pytest.mark.xdist_group("autograde")
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
@pytest.mark.xdist_group("autograde")
def test_unsandboxed_on_purpose_still_grades(tmp_path):
    batch = Batch(tmp_path, "01_backprop", "backprop")
    batch.submit("someone", batch.answered(trim=True))
    proc = batch.course_grade("--unsandboxed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WITHOUT the sandbox" in proc.stdout
    assert batch.scores()["someone"] == batch.max_scores()
