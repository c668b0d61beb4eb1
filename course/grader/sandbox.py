"""A sandbox for every grading kernel: an allow-list of mounts, limits, budgets, ipc sockets.

Student code runs in the grading kernel. Each kernel runs inside bubblewrap (`bwrap`), and
what it can reach is an allow-list, so it does not matter where the course lives:
- mounted read-only: the system's programs and libraries (/usr and its links), a few files
  of /etc the loader and fonts need, the Python installation, the virtual environment and
  the `course` package; nothing else of the host exists (no course directory, no home, no
  /run or /var, so no Unix socket of the host; no network: a private network namespace);
- writable, each a bounded tmpfs that vanishes with the kernel: the working folder
  (/home/student/work, holding the assignment's own data files, read-only, and nothing
  else: the notebook's cells arrive as messages), its home, /tmp and /dev/shm; plus the
  folder of the kernel's ipc sockets, whose files and bytes a watchdog keeps under a budget;
- an environment built from an allow-list (no token, password or database address of the
  grader), no inherited file descriptor but the three standard ones (its output goes to a
  log the grader reads back, capped), Python started isolated (`-I`: the working folder
  cannot shadow a module, no PYTHON* variable, no user site);
- limits: address space, CPU seconds, file size, open files (`prlimit`), and processes
  (a pids cgroup where the machine offers one, else RLIMIT_NPROC).
A private network namespace has no TCP to talk to, so the kernel's ZMQ sockets use
jupyter_client's ipc transport (Unix sockets in the private folder), and interrupts go as
messages on the control channel rather than as signals through bwrap.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Integer


class SandboxUnavailable(RuntimeError):
    """No sandbox can be started here; grading must not go on without one."""


MiB = 2**20


@dataclass(frozen=True)
class Limits:
    address_space: int = 4 * 2**30  # bytes (virtual: NumPy and OpenBLAS reserve generously)
    cpu_seconds: int = 900  # a backstop; wall-clock cell and submission budgets come first
    file_size: int = 64 * MiB  # bytes, per file written
    open_files: int = 512
    processes: int = 64  # pids in the kernel's cgroup, or RLIMIT_NPROC
    memory: int = 4 * 2**30  # bytes resident, all its processes and memory files together
    work_tmpfs: int = 128 * MiB  # the working folder and home (RAM: bounded here)
    tmp_tmpfs: int = 64 * MiB  # /tmp
    shm_tmpfs: int = 16 * MiB  # /dev/shm
    written_bytes: int = 64 * MiB  # on the host's disk: the socket folder and the kernel's log
    written_files: int = 256


LIMITS = Limits()
CGROUP_V1 = Path("/sys/fs/cgroup")  # a hierarchy per controller (what these machines have)
CGROUP2 = Path("/sys/fs/cgroup")

HOME = "/home/student"  # inside the sandbox
WORKDIR = f"{HOME}/work"  # the kernel's working folder, inside the sandbox
# The few files of /etc a Python kernel needs (the loader, BLAS alternatives, fonts, time).
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "fonts",
    "localtime",
    "mime.types",
)
# Variables a kernel gets from the grader's environment; everything else is unset.
PASSED_ENV = ("LANG", "TZ")  # never the BLAS threads: a grade must not depend on them


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
    ]
    program = seccomp_filter()
    with tempfile.TemporaryDirectory(prefix="el-check-") as scratch:
        if program is not None:  # as kernels get it (wrap): descriptor 3, from a shell
            (Path(scratch) / "seccomp.bpf").write_bytes(program)
            cmd = ["/bin/sh", "-c", 'exec "$@" 3<"$0"', f"{scratch}/seccomp.bpf", *cmd]
            cmd += ["--seccomp", "3"]
        proc = subprocess.run([*cmd, "true"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap cannot start a sandbox here ({proc.stderr.strip() or proc.returncode}); "
            "grade without a sandbox on purpose with --unsandboxed"
        )


def kernel_cgroups(name: str, max_pids: int, max_memory: int) -> list[Path]:
    """Fresh cgroups for one kernel, where the machine offers them: its processes (pids)
    and their memory together (the resident memory of every process, and the pages of its
    tmpfs and memfd files: RLIMIT_AS bounds each process alone, and a fork's children, or
    memory files, add up past it). cgroup v1 has a hierarchy per controller; v2 one for all.
    The kernel joins each (wrap); an empty list where none can be made."""
    settings = {
        "pids": {"pids.max": str(max_pids)},
        "memory": {"memory.limit_in_bytes": str(max_memory)},
    }
    swap = {"memory": {"memory.memsw.limit_in_bytes": str(max_memory)}}  # where accounted
    groups = []
    if (CGROUP2 / "cgroup.controllers").exists():  # v2: one group, both limits
        enabled = (CGROUP2 / "cgroup.subtree_control").read_text(errors="ignore").split()
        limits = {"pids.max": str(max_pids)} if "pids" in enabled else {}
        if "memory" in enabled:
            limits.update({"memory.max": str(max_memory), "memory.swap.max": "0"})
        made = _cgroup(CGROUP2 / "everything-leaks" / name, limits, {}) if limits else None
        return [made] if made else []
    for controller, limits in settings.items():
        if (CGROUP_V1 / controller / "cgroup.procs").exists():
            made = _cgroup(
                CGROUP_V1 / controller / "everything-leaks" / name,
                limits,
                swap.get(controller, {}),
            )
            if made:
                groups.append(made)
    return groups


def _cgroup(group: Path, limits: dict[str, str], optional: dict[str, str]) -> Path | None:
    try:
        group.parent.mkdir(exist_ok=True)
        group.mkdir()
    except OSError:
        return None
    try:
        for name, value in limits.items():
            (group / name).write_text(value)
    except OSError:
        remove_cgroup(group)
        return None
    for name, value in optional.items():
        try:
            (group / name).write_text(value)
        except OSError:
            pass  # swap accounting is off: nothing to bound there
    return group


def remove_cgroup(group: Path | None) -> None:
    if group is not None:
        try:
            group.rmdir()  # only possible once its processes are gone
        except OSError:
            pass


def readable_paths() -> list[Path]:
    """What a kernel reads besides the system: Python, the environment, `course`."""
    import course

    paths = {
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sys.executable).resolve().parent.parent,
        Path(course.__file__).parent,
    }
    resolved = {p.resolve() for p in paths} | {p for p in paths}
    # A folder inside another is mounted once, by its parent.
    kept = [p for p in resolved if not any(q != p and q in p.parents for q in resolved)]
    return sorted(kept, key=lambda p: len(p.parts))


def system_mounts() -> list[str]:
    """bwrap arguments for the system, read-only: /usr and its links, a few files of /etc."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC:
        if (Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


# Every grading kernel, sandboxed or not, computes with one BLAS thread: float results then
# do not depend on the grading machine's cores.
ONE_BLAS_THREAD = dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")


def kernel_env() -> list[str]:
    """bwrap arguments for the kernel's environment: an allow-list, nothing inherited."""
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": HOME,
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": f"{HOME}/.matplotlib",
        "LANG": "C.UTF-8",
        **ONE_BLAS_THREAD,
    }
    env.update({k: os.environ[k] for k in PASSED_ENV if k in os.environ})
    args = ["--clearenv"]
    for key, value in sorted(env.items()):
        args += ["--setenv", key, value]
    return args


def isolated(kernel_cmd: list[str]) -> list[str]:
    """Python started with -I: neither the working folder nor PYTHON* variables decide
    what `python -m ipykernel_launcher` (or any later import) loads."""
    if kernel_cmd and Path(kernel_cmd[0]).name.startswith("python") and "-I" not in kernel_cmd:
        return [kernel_cmd[0], "-I", *kernel_cmd[1:]]
    return list(kernel_cmd)


def wrap(
    kernel_cmd: list[str],
    sockets: Path,
    cgroups: list[Path],
    data_files: dict[str, Path] | None = None,
    limits: Limits = LIMITS,
    seccomp: Path | None = None,
) -> list[str]:
    """The kernel command, run inside bubblewrap with limits.

    sockets: the host folder of the kernel's ipc sockets and connection file, mounted at
    the same path (the only host folder it can write). data_files: {name in the working
    folder: host file}, mounted read-only (the assignment's own data files). seccomp: a
    file holding seccomp_filter()'s program (bwrap reads it on descriptor 3, then closes it).
    """
    sockets = sockets.resolve()
    args = [
        bwrap(),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        *system_mounts(),
    ]
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        str(limits.shm_tmpfs),
        "--tmpfs",
        "/dev/shm",
        "--size",
        str(limits.tmp_tmpfs),
        "--tmpfs",
        "/tmp",
        "--size",
        str(limits.work_tmpfs),
        "--tmpfs",
        HOME,
        "--dir",
        WORKDIR,
        "--dir",
        f"{HOME}/.matplotlib",
    ]
    for fontlist in sorted(font_cache()):
        args += ["--ro-bind", str(fontlist), f"{HOME}/.matplotlib/{fontlist.name}"]
    for name, host in sorted((data_files or {}).items()):
        args += ["--ro-bind", str(Path(host).resolve()), f"{WORKDIR}/{name}"]
    # After the private tmpfs mounts: a course checked out under /tmp (or the home) must
    # not have its Python environment and package hidden by them.
    for path in readable_paths():
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(sockets), str(sockets), "--chdir", WORKDIR]
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]
    if seccomp is not None:
        args += ["--seccomp", "3"]
    args += [*kernel_env(), "--"]
    pids_bounded = any((group / "pids.max").exists() for group in cgroups)
    nproc = [] if pids_bounded or os.geteuid() == 0 else [f"--nproc={limits.processes}"]
    rlimits = [
        "prlimit",
        f"--as={limits.address_space}",
        f"--cpu={limits.cpu_seconds}",
        f"--fsize={limits.file_size}",
        f"--nofile={limits.open_files}",
        *nproc,
        "--",
    ]
    # bwrap and prlimit themselves start with an empty environment: bwrap is pid 1 inside
    # the sandbox, and its /proc/1/environ would otherwise hold the grader's whole one
    # (secrets included); the kernel's own comes from kernel_env(), an allow-list.
    command = ["/usr/bin/env", "-i", *rlimits, *args, *isolated(kernel_cmd)]
    for group in cgroups:
        # Join the cgroups first, so that nothing the kernel starts escapes the limits.
        command = [
            "/bin/sh",
            "-c",
            'echo $$ > "$0" && exec "$@"',
            str(group / "cgroup.procs"),
            *command,
        ]
    if seccomp is not None:  # jupyter_client passes no descriptor: a shell opens it
        command = ["/bin/sh", "-c", 'exec "$@" 3<"$0"', str(seccomp), *command]
    return command


# Syscalls a kernel is refused (EPERM), by machine: fallocate reserves the host's disk in
# the socket folder at once, where writing takes time the watchdog can see (round 4: 3.2 GB
# in 11 ms); io_uring could do the same without the syscall; memfd_create makes memory
# that no process's address space counts (round 5: 4.8 GB past a 4 GB RLIMIT_AS).
# Numbers from the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl,
# include/uapi/asm-generic/unistd.h).
REFUSED_SYSCALLS = {
    "x86_64": {"fallocate": 285, "memfd_create": 319, "io_uring_setup": 425,
               "io_uring_enter": 426, "io_uring_register": 427},
    "aarch64": {"fallocate": 47, "memfd_create": 279, "io_uring_setup": 425,
                "io_uring_enter": 426, "io_uring_register": 427},
}  # fmt: skip
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # linux/audit.h


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """A classic BPF program for bwrap's --seccomp: EPERM for REFUSED_SYSCALLS, and for any
    call of another ABI (i386 or x32 numbers on x86_64); None on a machine not listed."""
    import platform
    import struct

    machine = machine or platform.machine()
    if machine not in REFUSED_SYSCALLS:
        return None
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ/JGE|K, BPF_RET|K
    allow, refuse = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO|EPERM
    tests = [(jge, 0x40000000)] if machine == "x86_64" else []  # the x32 ABI's numbers
    tests += [(jeq, number) for number in sorted(REFUSED_SYSCALLS[machine].values())]
    # (code, jump if true, jump if false, k): jumps count the instructions skipped.
    program = [(load, 0, 0, 4), (jeq, 1, 0, AUDIT_ARCH[machine]), (ret, 0, 0, refuse)]
    program += [(load, 0, 0, 0)]  # the syscall's number
    for index, (code, k) in enumerate(tests):
        program.append((code, len(tests) - index, 0, k))  # true: to the last `ret`
    program += [(ret, 0, 0, allow), (ret, 0, 0, refuse)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def font_cache() -> list[Path]:
    """Matplotlib's font list, so that each kernel does not rebuild it (read-only)."""
    try:
        import matplotlib

        return list(Path(matplotlib.get_cachedir()).glob("fontlist-*.json"))
    except Exception:  # noqa: BLE001 (a missing cache only costs time)
        return []


def written(folder: Path, stop_at_files: int) -> tuple[int, int]:
    """(files, bytes on disk) under folder, without following links; stops counting files
    at stop_at_files (a flood of files is over budget whatever the rest holds)."""
    files = size = 0
    stack = [folder]
    while stack and files <= stop_at_files:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            files += 1
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            size += st.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return files, size


def read_capped(path: Path, limit: int = 64 * 1024) -> str:
    """At most `limit` bytes of a file the kernel wrote, never through a link, with control
    characters escaped (what it prints must not write lines or colours into a log)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    text = data[:limit].decode("utf-8", "replace")
    text = "".join(c if c in "\n\t" or c.isprintable() else f"\\x{ord(c):02x}" for c in text)
    return text + ("\n[... cut]" if len(data) > limit else "")


class Watchdog:
    """Kills a kernel whose files on the host's disk (its socket folder and its log) pass
    the budget: many files, big sparse ones, or bytes. Checked every `period` seconds."""

    def __init__(self, folder: Path, kill, limits: Limits = LIMITS, period: float = 0.5):
        self.folder, self.kill, self.limits, self.period = folder, kill, limits, period
        self.reason: str | None = None
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def check(self) -> str | None:
        files, size = written(self.folder, self.limits.written_files)
        if files > self.limits.written_files:
            return f"it created more than {self.limits.written_files} files"
        if size > self.limits.written_bytes:
            return f"it wrote more than {self.limits.written_bytes // MiB} MB to disk"
        return None

    def _run(self) -> None:
        while not self.stopped.wait(self.period):
            reason = self.check()
            if reason is not None:
                self.reason = reason
                self.kill()
                return

    def stop(self) -> None:
        self.stopped.set()


def _setting(default: int, help: str) -> Integer:
    return Integer(default, help=help).tag(config=True)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run in the sandbox described above.

    `data_files` ({name: host path}) are mounted read-only in the kernel's working folder;
    `over_budget` says why the watchdog killed the kernel, if it did."""

    data_files: dict[str, Path] = {}
    over_budget: str | None = None

    # The limits, as settings: `c.SandboxedKernelManager.<name> = ...` in nbgrader_config.py.
    address_space = _setting(LIMITS.address_space, "Bytes of virtual memory, per process.")
    cpu_seconds = _setting(LIMITS.cpu_seconds, "CPU seconds, per process (a backstop).")
    file_size = _setting(LIMITS.file_size, "Bytes, per file written.")
    open_files = _setting(LIMITS.open_files, "Open files, per process.")
    processes = _setting(LIMITS.processes, "Processes the kernel may run at once.")
    memory = _setting(
        LIMITS.memory,
        "Bytes of memory the kernel's processes and memory files hold together (a memory "
        "cgroup, where the machine offers one).",
    )
    work_tmpfs = _setting(LIMITS.work_tmpfs, "Bytes of the working folder and home.")
    tmp_tmpfs = _setting(LIMITS.tmp_tmpfs, "Bytes of /tmp.")
    shm_tmpfs = _setting(LIMITS.shm_tmpfs, "Bytes of /dev/shm.")
    written_bytes = _setting(LIMITS.written_bytes, "Bytes written to the host's disk.")
    written_files = _setting(LIMITS.written_files, "Files created on the host's disk.")

    @property
    def limits(self) -> Limits:
        return Limits(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Limits)})

    async def _async_pre_start_kernel(self, **kw):
        # Only the grader sees this folder; the kernel sees its sockets/ subfolder.
        self._sandbox_dir = Path(tempfile.mkdtemp(prefix="el-kernel-"))
        self._sandbox_sockets = self._sandbox_dir / "sockets"
        self._sandbox_sockets.mkdir()
        self._sandbox_log = self._sandbox_dir / "kernel.log"
        self._sandbox_cgroups = kernel_cgroups(
            f"k-{uuid.uuid4().hex[:12]}", self.processes, self.memory
        )
        self.transport = "ipc"
        self.ip = str(self._sandbox_sockets / "kernel")
        self.connection_file = str(self._sandbox_sockets / "connection.json")
        self.kernel_spec.interrupt_mode = "message"
        # What the kernel prints on its own goes to a file the grader reads back, capped:
        # never to the grader's own streams (whose paths tell where the course is).
        log = os.open(self._sandbox_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        kw["stdout"], kw["stderr"] = log, subprocess.STDOUT
        kw.pop("cwd", None)  # the kernel's folder is its own, inside the sandbox
        self._sandbox_log_fd = log
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        program, seccomp = seccomp_filter(), None
        if program is not None:  # beside the sockets, where the kernel cannot see it
            seccomp = self._sandbox_dir / "seccomp.bpf"
            seccomp.write_bytes(program)
        return wrap(
            cmd,
            self._sandbox_sockets,
            self._sandbox_cgroups,
            self.data_files,
            self.limits,
            seccomp,
        )

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        try:
            await super()._async_launch_kernel(kernel_cmd, **kw)
        finally:
            os.close(self._sandbox_log_fd)
        self._sandbox_watchdog = Watchdog(self._sandbox_dir, self._kill_over_budget, self.limits)

    def _kill_over_budget(self) -> None:
        self.over_budget = self._sandbox_watchdog.reason
        process = getattr(getattr(self, "provisioner", None), "process", None)
        if process is not None:
            process.kill()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart:
            watchdog = getattr(self, "_sandbox_watchdog", None)
            if watchdog is not None:
                watchdog.stop()
            for group in getattr(self, "_sandbox_cgroups", []):
                remove_cgroup(group)
            folder = getattr(self, "_sandbox_dir", None)
            if folder is not None:
                printed = read_capped(folder / "kernel.log")
                # Labelled line by line: what a kernel prints cannot pass for the grader's.
                sys.stderr.writelines(f"kernel| {line}\n" for line in printed.splitlines())
                shutil.rmtree(folder, ignore_errors=True)
