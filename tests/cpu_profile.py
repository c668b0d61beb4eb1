"""A pytest plugin for issue 30's question, where the suite's CPU goes: each test's CPU
time, sandboxed kernels included, appended as JSON lines to $CPU_LOG.

`make test-cpu` runs the suite with it and prints the costliest files and tests. Each xdist
worker moves into a cpuacct cgroup of its own (root, cgroup v1), so that a test's CPU is
everything its worker started: `/usr/bin/time` and RUSAGE_CHILDREN miss a sandboxed
kernel, whose processes bubblewrap's pid namespace reaps (stop 45: 1249 s reported for
1687 s used). Without a writable cgroup, a test's CPU is its worker's and the worker's
waited-for children's (an undercount, said so in each line)."""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

CGROUPS = Path("/sys/fs/cgroup/cpuacct")
_GROUP: list[Path | None] = [None]


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    group = CGROUPS / "everything-leaks-tests" / f"{worker}-{os.getpid()}"
    try:
        group.mkdir(parents=True, exist_ok=True)
        (group / "cgroup.procs").write_text(str(os.getpid()))
        _GROUP[0] = group
    except OSError:
        _GROUP[0] = None


def pytest_unconfigure(config):
    group = _GROUP[0]
    if group is not None:  # back to the root group, so that this one can be removed
        try:
            (CGROUPS / "cgroup.procs").write_text(str(os.getpid()))
            group.rmdir()
        except OSError:
            pass


def _cpu() -> float:
    if _GROUP[0] is not None:
        return int((_GROUP[0] / "cpuacct.usage").read_text()) / 1e9
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before, start = _cpu(), time.time()
    yield
    line = {"test": item.nodeid, "cpu": _cpu() - before, "wall": time.time() - start,
            "cgroup": _GROUP[0] is not None}  # fmt: skip
    with open(os.environ.get("CPU_LOG", "cpu-by-test.jsonl"), "a") as f:
        f.write(json.dumps(line) + "\n")


def report(path: str, top: int = 25) -> str:
    """The costliest files and tests of a log, as text."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    files: dict[str, float] = {}
    for row in rows:
        name = row["test"].split("::")[0]
        files[name] = files.get(name, 0.0) + row["cpu"]
    total = sum(files.values())
    counted = "cgroups" if all(r["cgroup"] for r in rows) else "workers only (an undercount)"
    lines = [f"{len(rows)} tests, {total:.0f} s of CPU ({counted})", "", "by file:"]
    lines += [
        f"{cpu:8.1f} s  {name}" for name, cpu in sorted(files.items(), key=lambda x: -x[1])[:top]
    ]
    lines += ["", "by test:"]
    lines += [
        f"{r['cpu']:8.1f} s  {r['test']}" for r in sorted(rows, key=lambda r: -r["cpu"])[:top]
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(report(sys.argv[1]))
