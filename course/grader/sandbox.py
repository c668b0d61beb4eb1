"""A sandbox for every grading kernel: bubblewrap, resource limits, ipc sockets.

Student code runs in the grading kernel with the grader's rights. Here each kernel runs
inside bubblewrap (`bwrap`):
- no network (a private network namespace), no other processes visible, no capabilities;
- the whole system read-only; the course directory, the grader's home, /tmp and the
  gradebook's folder hidden behind empty tmpfs mounts; only the submission's working
  copy (the kernel's cwd) and a private folder for its sockets writable;
- limits: address space, CPU seconds, file size, open files (`prlimit`), and processes
  (a pids cgroup where the machine offers one, else RLIMIT_NPROC).
A private network namespace has no TCP to talk to, so the kernel's ZMQ sockets use
jupyter_client's ipc transport (Unix sockets in the private folder), and interrupts go as
messages on the control channel rather than as signals through bwrap.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager

from course.paths import course_root, gradebook_url


class SandboxUnavailable(RuntimeError):
    """No sandbox can be started here; grading must not go on without one."""


@dataclass(frozen=True)
class Limits:
    address_space: int = 4 * 2**30  # bytes (virtual: NumPy and OpenBLAS reserve generously)
    cpu_seconds: int = 900  # a backstop; wall-clock cell timeouts come first
    file_size: int = 256 * 2**20  # bytes, per file written
    open_files: int = 512
    processes: int = 64  # pids in the kernel's cgroup, or RLIMIT_NPROC


LIMITS = Limits()
PIDS_CGROUP = Path("/sys/fs/cgroup/pids")  # cgroup v1 (what these machines have)
CGROUP2 = Path("/sys/fs/cgroup")


def bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailable(
            "bubblewrap (`bwrap`) is not installed: install it (Debian: apt-get install "
            "bubblewrap), or grade without a sandbox on purpose with --unsandboxed"
        )
    return path


def check_available() -> None:
    """Start a trivial sandbox once; raise SandboxUnavailable with the reason if it fails."""
    cmd = [
        bwrap(),
        "--unshare-all",
        "--die-with-parent",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "true",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap cannot start a sandbox here ({proc.stderr.strip() or proc.returncode}); "
            "grade without a sandbox on purpose with --unsandboxed"
        )


def pids_cgroup(name: str, max_pids: int) -> Path | None:
    """A fresh pids cgroup limited to max_pids, or None where the machine offers none."""
    candidates = []
    if (PIDS_CGROUP / "cgroup.procs").exists():
        candidates.append(PIDS_CGROUP / "everything-leaks")
    if (CGROUP2 / "cgroup.controllers").exists() and "pids" in (
        CGROUP2 / "cgroup.subtree_control"
    ).read_text(errors="ignore"):
        candidates.append(CGROUP2 / "everything-leaks")
    for parent in candidates:
        try:
            parent.mkdir(exist_ok=True)
            group = parent / name
            group.mkdir()
            (group / "pids.max").write_text(str(max_pids))
            return group
        except OSError:
            continue
    return None


def remove_cgroup(group: Path | None) -> None:
    if group is not None:
        try:
            group.rmdir()  # only possible once its processes are gone
        except OSError:
            pass


def hidden_paths() -> list[Path]:
    """What a kernel must not see: the course, the grader's home, the gradebook's folder."""
    import course

    paths = [course_root(), Path.home(), Path(tempfile.gettempdir())]
    checkout = Path(course.__file__).resolve().parent.parent
    if (checkout / "nbgrader_config.py").exists():  # an editable install: hide its course too
        paths.append(checkout)
    url = gradebook_url(course_root())
    if url.startswith("sqlite:///"):
        paths.append(Path(url.removeprefix("sqlite:///").split("?")[0]).parent)
    # Parents first: a tmpfs mounted later would hide one mounted inside it.
    return sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))


def readable_paths() -> list[Path]:
    """What a kernel needs even where it lies under a hidden path: Python and `course`."""
    import course

    paths = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.executable).resolve().parent,
        Path(course.__file__).parent,
    }
    return sorted({p.resolve() for p in paths}, key=lambda p: len(p.parts))


def wrap(
    kernel_cmd: list[str],
    workdir: Path,
    private: Path,
    cgroup: Path | None,
    limits: Limits = LIMITS,
) -> list[str]:
    """The kernel command, run inside bubblewrap with limits."""
    workdir, private = workdir.resolve(), private.resolve()
    args = [
        bwrap(),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    for path in hidden_paths():
        args += ["--tmpfs", str(path)]
    for path in readable_paths():
        args += ["--ro-bind", str(path), str(path)]
    args += [
        "--bind",
        str(private),
        str(private),
        "--bind",
        str(workdir),
        str(workdir),
        "--chdir",
        str(workdir),
        "--setenv",
        "HOME",
        str(private / "home"),
        "--setenv",
        "MPLCONFIGDIR",
        str(private / "matplotlib"),
        "--setenv",
        "TMPDIR",
        str(private / "tmp"),
        "--unsetenv",
        "JPY_PARENT_PID",  # its pid is not visible in the sandbox
        "--",
    ]
    nproc = [] if cgroup is not None or os.geteuid() == 0 else [f"--nproc={limits.processes}"]
    rlimits = [
        "prlimit",
        f"--as={limits.address_space}",
        f"--cpu={limits.cpu_seconds}",
        f"--fsize={limits.file_size}",
        f"--nofile={limits.open_files}",
        *nproc,
        "--",
    ]
    command = rlimits + args + kernel_cmd
    if cgroup is not None:
        # Join the cgroup first, so that nothing the kernel starts escapes the limit.
        command = [
            "/bin/sh",
            "-c",
            'echo $$ > "$0" && exec "$@"',
            str(cgroup / "cgroup.procs"),
            *command,
        ]
    return command


def prepare_private(private: Path) -> None:
    for sub in ("home", "tmp", "matplotlib"):
        (private / sub).mkdir(parents=True, exist_ok=True)
    # Matplotlib's font list, so that each kernel does not rebuild it (read-only source).
    try:
        import matplotlib

        cache = Path(matplotlib.get_cachedir())
        for fontlist in cache.glob("fontlist-*.json"):
            shutil.copy(fontlist, private / "matplotlib" / fontlist.name)
    except Exception:  # noqa: BLE001 (a missing cache only costs time)
        pass


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in the sandbox described above."""

    async def _async_pre_start_kernel(self, **kw):
        self._sandbox_private = Path(tempfile.mkdtemp(prefix="el-kernel-"))
        prepare_private(self._sandbox_private)
        self._sandbox_workdir = Path(kw.get("cwd") or os.getcwd())
        self._sandbox_cgroup = pids_cgroup(f"k-{uuid.uuid4().hex[:12]}", LIMITS.processes)
        self.transport = "ipc"
        self.ip = str(self._sandbox_private / "kernel")
        self.connection_file = str(self._sandbox_private / "connection.json")
        self.kernel_spec.interrupt_mode = "message"
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        return wrap(cmd, self._sandbox_workdir, self._sandbox_private, self._sandbox_cgroup)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            remove_cgroup(getattr(self, "_sandbox_cgroup", None))
            private = getattr(self, "_sandbox_private", None)
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
