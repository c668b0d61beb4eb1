"""What every test shares, and how the tests are spread over xdist's workers."""

import json
import os
import shutil
import tempfile
from pathlib import Path

# One BLAS thread, as `make test` and real grading pin it, also for a bare `pytest`: the CPU
# budgets of large backward cases (0.1 s) count every thread's time, and two threads broke
# them on a loaded machine (reviewer, stop 60: 2 of 21 in-process judgings of 08's solution).
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import pytest  # noqa: E402

from tests import harness  # noqa: E402

# Where the time goes: the test files whose tests run real grading or whole notebooks,
# costliest first (a first estimate from --durations on a loaded machine; correct it from
# the 25 slowest that `make test` prints). They are handed out first, so the last test to
# finish is a short one and both workers stay busy to the end. A file not listed goes
# after them, slow tests first.
COSTLIEST_FIRST = [
    "test_adversarial.py",
    "test_notebooks.py",
    "test_run_all.py",
    "test_attacks_round6.py",
    "test_attacks_round5.py",
    "test_parallel.py",
    "test_attacks_round7.py",
    "test_attacks_round4.py",
    "test_hub.py",
    "test_browser.py",
    "test_mutants.py",
    "test_autograde.py",
    "test_attacks_round3.py",
    "test_export.py",
    "test_selfcheck.py",
    "test_sandbox.py",
    "test_inputs_sweep.py",
    "test_build.py",
    "test_demo.py",
]


def shared_fixture_groups(items) -> dict:
    """{item: xdist group} for the tests that share a module-scoped fixture of their file.

    Tests joined by any such fixture (directly or through another) form one group, which
    xdist runs on one worker, so the fixture (a graded class, a server) is built once; the
    other tests of the file are free to go to either worker.
    """
    parent: dict = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        module = getattr(item, "module", None)
        if info is None or module is None:
            continue
        here = item.getparent(pytest.Module).nodeid
        names = [
            (module.__name__, name)
            for name, defs in info.name2fixturedefs.items()
            if defs[-1].scope == "module" and defs[-1].baseid == here
        ]
        if names:
            shared[item] = names[0]
            for name in names[1:]:
                parent[find(name)] = find(names[0])
    return {item: "{}:{}".format(*find(key)) for item, key in shared.items()}


def xdist_groups(items) -> dict[str, str]:
    """{nodeid: group} of the tests that must share a worker: an `xdist_group` mark, else
    the module-scoped fixture they share (shared_fixture_groups)."""
    found = {item.nodeid: group for item, group in shared_fixture_groups(items).items()}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        if mark is not None:
            found[item.nodeid] = str(mark.args[0] if mark.args else mark.kwargs["name"])
    return found


@pytest.hookimpl(trylast=True)  # the final order and node ids
def pytest_collection_modifyitems(config, items):
    def cost_rank(item):
        name = item.path.name
        if name in COSTLIEST_FIRST:
            return COSTLIEST_FIRST.index(name)
        return len(COSTLIEST_FIRST) + (item.get_closest_marker("slow") is None)

    items.sort(key=cost_rank)  # stable: a file's tests keep their order
    groups_file = getattr(config, "workerinput", {}).get(GROUPS_KEY)
    if groups_file:  # an xdist worker: tell the controller's scheduler the groups
        partial = Path(f"{groups_file}.{config.workerinput['workerid']}")
        partial.write_text(json.dumps(xdist_groups(items)))
        partial.replace(groups_file)


# xdist's own `--dist loadgroup` no longer groups anything under pytest 9 (it renames
# item._nodeid, which pytest 9 does not read any more: every test went to whichever worker
# was free, and each module-scoped class was graded twice, once on each worker). So the
# groups travel from the workers, which collect, to the controller, which schedules.
GROUPS_KEY = "everything_leaks_groups"


def pytest_configure(config):
    if not hasattr(config, "workerinput") and config.getoption("dist", "no") == "loadgroup":
        config.groups_folder = Path(tempfile.mkdtemp(prefix="pytest-groups-"))


def pytest_unconfigure(config):
    folder = getattr(config, "groups_folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    folder = getattr(node.config, "groups_folder", None)
    if folder is not None:
        node.workerinput[GROUPS_KEY] = str(folder / "groups.json")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    folder = getattr(config, "groups_folder", None)
    if folder is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """Tests of one group on one worker; every other test on its own. Handed out in
        collection order (costliest first, pytest_collection_modifyitems), not xdist's
        largest-group-first."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # written by the workers before they report
                self.groups = json.loads((folder / "groups.json").read_text())
            return self.groups.get(nodeid, nodeid)

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def session_folder(tmp_path_factory, request):
    """A folder shared by every xdist worker of this run (the parent of their base temps),
    for what is built once per session (harness.registered_course)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if hasattr(request.config, "workerinput") else base
    harness.SESSION_FOLDER = shared / "session"
    return harness.SESSION_FOLDER


@pytest.fixture(autouse=True)
def environment_restored():
    """Each test starts from the environment the session started with.

    A test that sets $COURSE_ROOT or $COURSE_DB_URL for a scratch course would otherwise
    point later tests in the same xdist worker at a folder that no longer exists.
    """
    before = dict(os.environ)
    yield
    for key in set(os.environ) - set(before):
        del os.environ[key]
    os.environ.update(before)
