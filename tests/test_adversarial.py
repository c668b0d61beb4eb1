"""Submissions that attack the grader, autograded for real.

Each attacker submits the blank release (nothing implemented) plus one attack cell, so any
point it earns is a forged point. Honest students are graded in the same batch: their
grades must come out exactly right, and the gradebook intact.
"""

import copy
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest

from course.grader.cells import solution_cell_id
from course.paths import tool_env
from tests.harness import (
    Batch,
    postgres_server,
    read_nb,
    released_points,
    tls_local_cluster,
    tree_digest,
)

pytestmark = pytest.mark.slow

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
FULL = released_points(ASSIGNMENT, NOTEBOOK)  # full marks
CELL_TIMEOUT = 6

# Plants each link in every folder the kernel can write: its working folder, its home,
# /tmp, and the folder of its sockets (the one host folder it has).
LINKS = """
import os, sys
from pathlib import Path
targets = TARGETS
folders = {os.getcwd(), os.path.expanduser("~"), "/tmp"}
if "-f" in sys.argv:
    folders.add(os.path.dirname(sys.argv[sys.argv.index("-f") + 1]))
for folder in sorted(folders):
    for name, target in targets.items():
        link = os.path.join(folder, name)
        try:
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(target, link)
            print("planted", link)
        except OSError as exc:
            print("could not plant", link, exc)
"""

ATTACKS = {
    "patched_numpy": """
import numpy as np
np.testing.assert_allclose = lambda *a, **k: None
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *x, **k: np.ones_like(np.asarray(a), dtype=bool)
np.array_equal = lambda *a, **k: True
""",
    "input_transformer": """
def full_marks(lines):
    return ["print('all hidden checks passed')\\n", "3\\n"]
get_ipython().input_transformers_cleanup.append(full_marks)
""",
    "exception_handler": """
def swallow(shell, etype, evalue, tb, tb_offset=None):
    print("3")
get_ipython().set_custom_exc((BaseException,), swallow)
""",
    "always_equal": """
class Anything(float):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    __hash__ = float.__hash__
class Value:
    def __init__(self, data, _children=(), _op=""):
        self.data = Anything(0.0)
        self.grad = Anything(0.0)
    def __getattr__(self, name):
        return lambda *a, **k: self
    def __add__(self, o): return self
    __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __add__
    __pow__ = __neg__ = lambda self, *a: self
def eval_numerical_gradient(f, x, h=1e-5):
    return x * Anything(0.0)
""",
    "fake_probe_output": """
from IPython.display import display
import course.grading as g
from course.grader.probe import PROBE_MIME
def forged(name, namespace):
    display({PROBE_MIME: {"check": name, "outputs": {}}, "text/plain": "ok"}, raw=True)
    display({PROBE_MIME: {"check": name, "outputs": {"x": 1.0}}, "text/plain": "ok"}, raw=True)
    return 3.0
g.check = forged
""",
    "read_secrets": """
import os, glob
root = "__ROOT__"
for pattern in ["source/*/*", "references/*/*", "gradebook.db", "submitted/*/*/*"]:
    for path in glob.glob(os.path.join(root, pattern)):
        try:
            print(path, open(path, errors="replace").read()[:20000])
        except OSError as exc:
            print(path, exc)
print("visible:", sorted(os.listdir(root)) if os.path.isdir(root) else "none")
graded = os.path.join(root, "autograded")
print("students:", sorted(os.listdir(graded)) if os.path.isdir(graded) else "none")
""",
    "write_gradebook": """
import os, sqlite3
path = "__ROOT__/gradebook.db"
try:
    db = sqlite3.connect(path)
    db.execute("update grade set auto_score = 0")
    db.execute("update grade set manual_score = 999")
    db.commit()
    print("wrote the gradebook")
except Exception as exc:
    print("could not write the gradebook:", exc)
""",
    "network": """
import socket
for host in ["127.0.0.1", "localhost"]:
    try:
        socket.create_connection((host, PORT), timeout=2).sendall(b"leak")
        print("connected to", host)
    except OSError as exc:
        print("no network to", host, exc)
""",
    "sigint_ignoring_loop": """
import signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass
""",
    "memory_bomb": """
hoard = []
while True:
    hoard.append(bytearray(2**28))
""",
    "fork_bomb": """
import os, time
children = 0
try:
    for _ in range(10000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
except OSError as exc:
    print("fork stopped after", children, "children:", exc)
""",
    "exit_midway": """
import os
os._exit(0)
""",
    # Issue 14, rows 1-4: links planted where the grader (outside the sandbox) would write
    # the graded notebook or read results back, in every folder the kernel can write.
    "symlink_gradebook": LINKS.replace("TARGETS", '{"backprop.ipynb": "__ROOT__/gradebook.db"}'),
    "symlink_scratch_references": LINKS.replace(
        "TARGETS",
        '{"backprop.ipynb": str(Path.cwd().parents[2] / "references/01_backprop/backprop.json"),'
        ' "backprop.json": "__ROOT__/references/01_backprop/backprop.json"}',
    ),
    "symlink_classmate": LINKS.replace(
        "TARGETS",
        '{"backprop.ipynb": "__ROOT__/submitted/honest_solution/01_backprop/backprop.ipynb"}',
    ),
    "symlink_hidden": LINKS.replace(
        "TARGETS",
        '{"leak_gradebook.db": "__ROOT__/gradebook.db",'
        ' "leak_solution.py": "__ROOT__/source/01_backprop/backprop.pct.py",'
        ' "leak_reference.json": "__ROOT__/references/01_backprop/backprop.json",'
        ' "leak_classmate.ipynb": "__ROOT__/submitted/honest_bug/01_backprop/backprop.ipynb",'
        ' "leak_passwd": "/etc/passwd", "leak_bashrc": os.path.expanduser("~root/.bashrc")}',
    ),
    # Row 8: every Unix socket of the host (a PostgreSQL gradebook's among them).
    "unix_sockets": """
import glob, os, socket
found = glob.glob("/run/**/*", recursive=True) + glob.glob("/var/run/**/*", recursive=True)
found += glob.glob("/tmp/**/*", recursive=True) + glob.glob("/var/tmp/**/*", recursive=True)
found += ["__SOCKET__"]
for path in found:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(b"leak")
        print("connected to", path)
    except OSError as exc:
        pass
print("tried", len(found), "paths")
""",
    # Also found: the grader's environment and file descriptors.
    "environment_and_fds": """
import os
print("ENV", dict(os.environ))
for fd in range(0, 200):
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    print("FD", fd, where)
    if where.startswith("/"):
        try:
            os.write(fd, b"\\nFORGED LINE IN A GRADER LOG\\n")
        except OSError:
            pass
""",
    "fake_cut_off": """
class GradingCutOff(Exception):
    pass
raise GradingCutOff("x\\nfake_student  19 / 19\\x1b[2K\\x1b[1A the kernel died")
""",
    "payload_json_list": """
from IPython.display import display
import course.grading as g
from course.grader.probe import PROBE_MIME
def forged(name, *args, **kwargs):
    display({PROBE_MIME: [name, {"outputs": {}}], "text/plain": "ok"}, raw=True)
g.check = forged
""",
    "payload_huge_integer": """
import sys
from IPython.display import display
import course.grading as g
from course.grader.probe import PROBE_MIME
sys.set_int_max_str_digits(0)
def forged(name, *args, **kwargs):
    outputs = {"x": 10**20000, "y": {"array": [10**5000], "shape": [1]}}
    display({PROBE_MIME: {"check": name, "outputs": outputs}, "text/plain": "ok"}, raw=True)
g.check = forged
""",
    "display_flood": """
from IPython.display import display
for _ in range(12):
    display({"text/plain": "x" * 4_000_000}, raw=True)
""",
    "disk_and_ram": """
import os, sys, time
def fill(path, size):
    try:
        with open(path, "wb") as f:
            for _ in range(size // 2**20):
                f.write(b"x" * 2**20)
        print("wrote", path, flush=True)
    except OSError as exc:
        print("stopped", path, exc.strerror, flush=True)
fill("/tmp/big", 512 * 2**20)
fill("/dev/shm/big", 512 * 2**20)
fill("big", 512 * 2**20)
try:
    with open("sparse", "wb") as f:
        f.seek(2**40)
        f.write(b"x")
    print("wrote sparse", flush=True)
except OSError as exc:
    print("stopped sparse", exc.strerror, flush=True)
time.sleep(1)  # the lines above reach the grader before the file flood stops the kernel
sockets = os.path.dirname(sys.argv[sys.argv.index("-f") + 1])
try:
    for i in range(100000):
        with open(os.path.join(sockets, f"f{i}"), "wb") as f:
            f.write(b"x" * 4096)
except OSError as exc:
    print("stopped files", exc)
""",
}


def attack_notebook(batch, code):
    """The blank release, trimmed, with the attack right after the imports."""
    nb = batch.answered({}, trim=True)
    nb.cells = [c for c in nb.cells if not solution_cell_id(c)]
    nb.cells.insert(1, nbformat.v4.new_code_cell(code))
    return nb


class Listener:
    """A TCP server on loopback that counts connections (there must be none)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


SUBMISSION_TIMEOUT = 45  # seconds; an honest notebook needs well under half of it
SECRETS = {"PGPASSWORD": "pg-secret-4711", "JUPYTERHUB_API_TOKEN": "hub-token-4712"}
LAUNCHER = """
import builtins, runpy, sys
builtins.SHADOWED = True
print("the student's ipykernel_launcher ran")
sys.path = [p for p in sys.path if p not in ("", ".")]
del sys.modules["ipykernel_launcher"]
runpy.run_module("ipykernel_launcher", run_name="__main__")
"""
OBSERVER = """
import builtins, os, sys
print("SHADOWED:", getattr(builtins, "SHADOWED", False))
print("LAUNCHER:", sys.argv[0])
print("FOLDER:", sorted(os.listdir(".")))
"""


def outside_tmp_and_home() -> Path:
    """A folder for the course that is not under /tmp, the grader's home or the checkout
    (issue 14, row 7: the sandbox must not depend on where the course lives)."""
    for parent in ("/var/tmp", "/srv", "/opt"):
        if os.access(parent, os.W_OK):
            return Path(tempfile.mkdtemp(prefix="everything-leaks-course-", dir=parent))
    pytest.skip("no writable folder outside /tmp and home")


class UnixListener(Listener):
    """A Unix socket under /run (as PostgreSQL's is) that counts connections."""

    def __init__(self):
        base = "/run" if os.access("/run", os.W_OK) else "/var/tmp"
        self.folder = Path(tempfile.mkdtemp(prefix="everything-leaks-sock-", dir=base))
        self.path = str(self.folder / ".s.PGSQL.5432")
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen()
        self.sock.settimeout(0.5)
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        super().close()
        shutil.rmtree(self.folder, ignore_errors=True)


def own_digest(folder: Path) -> dict[str, str]:
    """tree_digest, with a link counted by where it points, never by what it points to."""
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def sleeper_notebook(batch):
    """Many cells that each sleep just under the cell timeout (no budget per submission
    would hold a worker for all of them)."""
    nb = attack_notebook(batch, "import time")
    for _ in range(30):
        nb.cells.insert(2, nbformat.v4.new_code_cell(f"time.sleep({CELL_TIMEOUT - 1})"))
    return nb


@pytest.fixture(scope="module")
def attacked():
    root = outside_tmp_and_home()
    batch = Batch(root, ASSIGNMENT, NOTEBOOK)
    listener, unix = Listener(), UnixListener()
    for name, code in ATTACKS.items():
        code = code.replace("PORT", str(listener.port)).replace("__ROOT__", str(root))
        batch.submit(
            f"attack_{name}", attack_notebook(batch, code.replace("__SOCKET__", unix.path))
        )
    batch.submit("attack_sleeper", sleeper_notebook(batch))
    # Row 6: no code in the notebook, an extra ipykernel_launcher.py beside it; an observer
    # cell (printing only) says which launcher ran and what the working folder holds.
    batch.submit(
        "attack_launcher", {"backprop.ipynb": batch.release, "ipykernel_launcher.py": LAUNCHER}
    )
    batch.submit(
        "attack_launcher_observed",
        {
            "backprop.ipynb": attack_notebook(batch, OBSERVER),
            "ipykernel_launcher.py": LAUNCHER,
            "data.py": "raise SystemExit('a student file was imported')",
        },
    )
    # The submission itself holds links: to hidden files, and in place of its notebook.
    folder = batch.submit("attack_submitted_links", batch.release)
    (folder / "gradebook_copy.db").symlink_to(root / "gradebook.db")
    (folder / "solution.py").symlink_to(root / "source" / ASSIGNMENT / f"{NOTEBOOK}.pct.py")
    folder = batch.submit("attack_submitted_notebook_link", {})
    (folder / f"{NOTEBOOK}.ipynb").symlink_to(
        root / "submitted" / "honest_solution" / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    )
    batch.submit("honest_solution", batch.answered(trim=True))
    honest_bug = batch.solutions["value_core"].replace(
        "self.grad += out.grad\n            other.grad += out.grad",
        "self.grad = out.grad\n            other.grad = out.grad",
    )
    batch.submit("honest_bug", batch.answered({"value_core": honest_bug}, trim=True))
    before = own_digest(root / "submitted")
    references = tree_digest(root / "references")
    env = tool_env(
        COURSE_ROOT=str(root),
        COURSE_CELL_TIMEOUT=str(CELL_TIMEOUT),
        COURSE_SUBMISSION_TIMEOUT=str(SUBMISSION_TIMEOUT),
        **SECRETS,
    )
    proc = batch.course_grade(env=env)
    listener.close()
    unix.close()
    # Every test below reads this run's table: one that never printed it says why, once.
    table = proc.stdout.strip().splitlines()
    assert table and "graded" in table[-1], (
        f"course grade printed no table (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-3000:]}"
    )
    after = own_digest(root / "submitted")
    assert tree_digest(root / "references") == references, "the references were written"
    yield batch, proc, (listener, unix), before, after
    shutil.rmtree(root, ignore_errors=True)


def graded_notebook(batch, student):
    return batch.course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def line_of(proc, student):
    return next(line for line in proc.stdout.splitlines() if line.startswith(student + " "))


GRADED_ATTACKS = sorted(ATTACKS) + ["sleeper", "launcher", "launcher_observed", "submitted_links"]


@pytest.mark.parametrize("attack", GRADED_ATTACKS)
def test_attack_earns_no_points(attacked, attack):
    batch, *_ = attacked
    scores = batch.scores().get(f"attack_{attack}")
    assert scores is not None, "the attacker vanished from the gradebook"
    assert sum(scores.values()) == 0, f"forged points: {scores}"


def test_honest_students_are_graded_exactly(attacked):
    batch, *_ = attacked
    scores = batch.scores()
    assert scores["honest_solution"] == batch.max_scores()
    assert scores["honest_bug"]["value_accumulation"] < 3
    assert scores["honest_bug"]["eval_numerical_gradient"] == 3


def test_gradebook_is_intact(attacked):
    batch, *_ = attacked
    db = sqlite3.connect(batch.course.root / "gradebook.db")
    forged = db.execute("select count(*) from grade where manual_score is not null").fetchone()
    assert forged == (0,)


def test_no_network_reached_the_host(attacked):
    _, _, (listener, unix), *_ = attacked
    assert listener.connections == 0
    assert unix.connections == 0, "a Unix socket of the host was reached"


@pytest.mark.parametrize(
    ("attack", "words"),
    [
        # The attack notebooks are trimmed: no markdown, so no heading above any cell.
        (
            "sigint_ignoring_loop",
            "cut off in a cell above the first heading: this cell did not stop when interrupted",
        ),
        ("exit_midway", "cut off in a cell above the first heading: the kernel died"),
    ],
)
def test_instructor_is_told_what_was_cut_off(attacked, attack, words):
    _, proc, *_ = attacked
    assert words in line_of(proc, f"attack_{attack}")
    assert proc.returncode == 1


def test_memory_bomb_hits_the_limit(attacked):
    batch, *_ = attacked
    path = graded_notebook(batch, "attack_memory_bomb")
    # Contained, whichever comes first: the address-space limit (MemoryError), the kernel
    # dying (cut off), or the cell timeout while the pages are being filled.
    enames = [o.get("ename") for o in read_nb(path).cells[1].outputs]
    assert {"MemoryError", "GradingCutOff", "CellTimeoutError"} & set(enames)


def test_fork_bomb_is_contained(attacked):
    batch, *_ = attacked
    nb = read_nb(graded_notebook(batch, "attack_fork_bomb"))
    text = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert "fork stopped after" in text
    children = int(text.split("fork stopped after")[1].split()[0])
    assert children < 100


def test_secrets_are_invisible_and_feedback_leaks_nothing(attacked):
    batch, *_ = attacked
    root = batch.course.root
    batch.course.nbgrader("generate_feedback", ASSIGNMENT, "--force")
    references = json.loads((root / "references" / ASSIGNMENT / f"{NOTEBOOK}.json").read_text())
    secrets = [
        repr(v)
        for outputs in references.values()
        for v in outputs.values()
        # Values of a few digits (0.8) are not telling: they also stand in any page's CSS.
        if isinstance(v, float) and abs(v) > 1e-6 and len(repr(v).lstrip("-")) >= 6
    ]
    secrets += ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "self.grad += other.data * out.grad"]
    for student in ("attack_read_secrets", "attack_fork_bomb", "honest_bug"):
        html = (root / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
        leaked = [s for s in secrets if s in html]
        assert not leaked, f"{student}'s feedback shows {leaked[:3]}"
        assert "Traceback" not in html.split("value_ops")[-1] or student != "honest_bug"
    nb = read_nb(graded_notebook(batch, "attack_read_secrets"))
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    # The course lives outside /tmp and the home (row 7): none of it exists in the sandbox.
    assert "visible: none" in printed and "students: none" in printed


def test_no_submission_is_modified(attacked):
    *_, before, after = attacked
    assert before == after


def test_same_submission_twice_same_scores(attacked):
    batch, *_ = attacked
    first = batch.scores()
    for student in ("honest_solution", "honest_bug"):
        batch.course.nbgrader("autograde", ASSIGNMENT, f"--student={student}", "--force")
    second = batch.scores()
    for student in ("honest_solution", "honest_bug"):
        assert second[student] == first[student]


# ================================================================ issue 14: rows 5, 9, 10
# Inputs nobody knows in advance, observations not conclusions, no importable answers.
# A batch of its own, graded by `course grade` beside honest students.

INPUT_ATTACKS = {
    # Row 5: the committed references, replayed as each check's payload.
    "replayed_references": """
import json
from IPython.display import display
import course.grading as g
from course.grader.probe import PROBE_MIME
REFS = json.loads(REFS_JSON)
def replay(name, namespace):
    display({PROBE_MIME: {"check": name, "outputs": REFS[name]}, "text/plain": name}, raw=True)
    return 0.0
g.check = replay
""",
    # Row 9: conclusions sent in place of observations, and probe helpers patched.
    "conclusions_sent": (
        PATCHED_PROBE := """
import course.grader.probe as p
import course.checks.backprop as b
import course.checks.common as c
VERDICTS = ("restored", "selfcheck", "analytic", "seed", "leaf", "accuracy")
_record = p.Outputs.record
def forged_record(self, keys, compute):
    _record(self, keys, compute)
    for k in [keys] if isinstance(keys, str) else keys:
        if k.partition(":")[0] in VERDICTS:
            self[k] = True
p.Outputs.record = forged_record
for mod in (b, c):
    for name in ("_unless_moved", "against_reference", "centred_error", "seeded",
                 "gradient_observation"):
        if hasattr(mod, name):
            setattr(mod, name, lambda *a, **k: a[0] if a else True)
"""
    ),
    # Row 10: graded answers imported from the package.
    "imported_answers": """
import importlib
TRIES = [
    ("course.gradcheck", "numerical_gradient", "eval_numerical_gradient_array"),
    ("course.gradcheck", "numerical_gradient", "eval_numerical_gradient"),
    ("course.checks.optimisers", "softmax_regression", None),
    ("course.deepnet", "ACTIVATIONS", None),
]
for module, attr, as_name in TRIES:
    try:
        value = getattr(importlib.import_module(module), attr)
    except Exception as exc:
        print("not importable:", module, attr, type(exc).__name__)
        continue
    if as_name:
        globals()[as_name] = value
""",
}

RESTORE_BUG = (
    "        x[ix] = old + h\n        f_plus = f(x)\n        x[ix] = old - h\n"
    "        f_minus = f(x)\n        x[ix] = old\n",
    "        x[ix] += h\n        f_plus = f(x)\n        x[ix] -= 2 * h\n"
    "        f_minus = f(x)\n        x[ix] += h\n",
)


@pytest.fixture(scope="module")
def forged_inputs(tmp_path_factory):
    batch = Batch(tmp_path_factory.mktemp("inputs"), ASSIGNMENT, NOTEBOOK)
    committed = (batch.course.root / "references" / ASSIGNMENT / f"{NOTEBOOK}.json").read_text()
    for name, code in INPUT_ATTACKS.items():
        code = code.replace("REFS_JSON", repr(committed))
        batch.submit(f"attack_{name}", attack_notebook(batch, code))
    batch.submit("honest_solution", batch.answered(trim=True))
    mutant = batch.mutant("eval_numerical_gradient_solution", [RESTORE_BUG])
    batch.submit("honest_restore_bug", mutant)
    patched = copy.deepcopy(mutant)
    patched.cells.insert(1, nbformat.v4.new_code_cell(PATCHED_PROBE))
    batch.submit("attack_patched_mutant", patched)
    proc = batch.course_grade(cell_timeout=CELL_TIMEOUT)
    return batch, proc


def test_row5_replayed_committed_references_earn_nothing(forged_inputs):
    batch, proc = forged_inputs
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    scores = batch.scores()
    assert sum(scores["attack_replayed_references"].values()) == 0
    assert scores["honest_solution"] == batch.max_scores()


def test_row9_conclusions_and_patched_helpers_earn_nothing(forged_inputs):
    batch, _ = forged_inputs
    scores = batch.scores()
    assert sum(scores["attack_conclusions_sent"].values()) == 0
    honest, attacked = scores["honest_restore_bug"], scores["attack_patched_mutant"]
    assert honest["eval_numerical_gradient"] < 3  # the bug is caught ...
    for cell, points in attacked.items():  # ... and patching the probe earns nothing back
        assert points <= honest[cell], f"{cell}: {points} > {honest[cell]}"


def test_row10_answers_are_not_importable(forged_inputs):
    batch, _ = forged_inputs
    assert sum(batch.scores()["attack_imported_answers"].values()) == 0
    nb = read_nb(graded_notebook(batch, "attack_imported_answers"))
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    assert printed.count("not importable:") == 4


def test_the_secret_stays_in_the_course_and_out_of_every_output(forged_inputs):
    batch, _ = forged_inputs
    root = batch.course.root
    secret = root / ".nbgrader" / "secret"
    assert secret.stat().st_mode & 0o777 == 0o600
    key = secret.read_text().strip()
    from course.grader.inputs import Inputs
    from course.grader.parallel import make_job

    for path in (root / "autograded").rglob("*.ipynb"):
        student = path.relative_to(root / "autograded").parts[0]
        job = make_job(root, ASSIGNMENT, student, True, False)
        seeds = [str(seed) for seed in Inputs.from_json(job["inputs"]).seeds.values()]
        text = path.read_text()
        assert seeds and key not in text
        assert not [s for s in seeds if s in text], f"{path}: a seed line was kept"


# ---------------------------------------------------------------- issue 14


def outputs_text(batch, student) -> str:
    nb = read_nb(graded_notebook(batch, student))
    return json.dumps([c.get("outputs", []) for c in nb.cells])


@pytest.mark.parametrize(
    "attack", ["symlink_gradebook", "symlink_scratch_references", "symlink_classmate"]
)
def test_links_planted_by_the_kernel_are_never_written_through(attacked, attack):
    batch, *_ = attacked
    root = batch.course.root
    # The gradebook still opens and holds every student; the classmate's and the
    # attacker's graded notebooks are regular files, the attacker's is its own.
    db = sqlite3.connect(root / "gradebook.db")
    assert db.execute("pragma integrity_check").fetchone() == ("ok",)
    students = {r[0] for r in db.execute("select id from student")}
    assert {"honest_solution", "honest_bug", f"attack_{attack}"} <= students
    graded = graded_notebook(batch, f"attack_{attack}")
    assert graded.is_file() and not graded.is_symlink()
    assert "planted" in outputs_text(batch, f"attack_{attack}")  # the links were made...
    for folder in (root / "autograded").iterdir():  # ...where nothing of the grader looks
        for path in folder.rglob("*"):
            assert not path.is_symlink(), path


def test_nothing_but_the_graded_notebook_comes_back(attacked):
    batch, *_ = attacked
    root = batch.course.root
    batch.course.nbgrader("generate_feedback", ASSIGNMENT, "--force")
    for student in ("attack_symlink_hidden", "attack_submitted_links", "attack_launcher"):
        graded = root / "autograded" / student / ASSIGNMENT
        assert sorted(p.name for p in graded.iterdir()) == [f"{NOTEBOOK}.ipynb"]
        feedback = root / "feedback" / student / ASSIGNMENT
        assert sorted(p.name for p in feedback.iterdir()) == [f"{NOTEBOOK}.html"]
        html = (feedback / f"{NOTEBOOK}.html").read_text()
        for secret in ("BEGIN SOLUTION", "SQLite format", "root:x:0:0", "self.grad += other"):
            assert secret not in html, f"{student}'s feedback shows {secret!r}"


def test_links_in_a_submission_are_not_followed_and_said(attacked):
    _, proc, *_ = attacked
    line = line_of(proc, "attack_submitted_links")
    assert "'gradebook_copy.db' is a symbolic link: not followed" in line
    line = line_of(proc, "attack_submitted_notebook_link")
    assert "graded as 0" in line and "backprop.ipynb' is a symbolic link" in line


def test_a_shadowing_launcher_never_runs(attacked):
    batch, proc, *_ = attacked
    text = outputs_text(batch, "attack_launcher_observed")
    assert "SHADOWED: False" in text
    assert "site-packages/ipykernel_launcher.py" in text.split("LAUNCHER:")[1].split("\\n")[0]
    # The kernel's folder holds the assignment's data files only, none of the student's.
    assert "FOLDER: []" in text
    assert "the student's ipykernel_launcher ran" not in proc.stderr


def test_secrets_of_the_graders_environment_and_fds_stay_out(attacked):
    batch, proc, *_ = attacked
    root = batch.course.root
    text = outputs_text(batch, "attack_environment_and_fds")
    assert "ENV" in text and "FD" in text
    for secret in SECRETS.values():
        assert secret not in text
    assert str(root) not in text, "a descriptor or variable gives the course's path away"
    for log in (root / ".nbgrader" / "logs").iterdir():
        # What the kernel printed on its own is relayed, labelled: it cannot pass for a
        # line of the grader's.
        lines = log.read_text(errors="replace").splitlines()
        assert not any(line.startswith("FORGED") for line in lines), log


def test_student_text_cannot_write_into_the_instructors_table(attacked):
    _, proc, *_ = attacked
    assert "\x1b" not in proc.stdout
    assert not any(line.startswith("fake_student") for line in proc.stdout.splitlines())
    line = line_of(proc, "attack_fake_cut_off")
    assert "0 / " in line and "cut off" not in line  # a student's own error, not the grader's


@pytest.mark.parametrize("attack", ["payload_json_list", "payload_huge_integer"])
def test_a_malformed_payload_scores_zero_not_not_graded(attacked, attack):
    batch, proc, *_ = attacked
    line = line_of(proc, f"attack_{attack}")
    assert "NOT GRADED" not in line and f"0 / {FULL:g}" in line
    if attack == "payload_json_list":
        assert "tampered output" in outputs_text(batch, f"attack_{attack}")


def test_a_submission_has_a_time_budget(attacked):
    batch, proc, *_ = attacked
    line = line_of(proc, "attack_sleeper")
    assert f"used up its time budget ({SUBMISSION_TIMEOUT:g} s)" in line
    nb = read_nb(graded_notebook(batch, "attack_sleeper"))
    slept = [c for c in nb.cells if "time.sleep" in c.source and c.get("execution_count")]
    assert len(slept) <= SUBMISSION_TIMEOUT // (CELL_TIMEOUT - 1) + 1


def test_output_floods_are_capped(attacked):
    batch, proc, *_ = attacked
    assert "output passed its budget" in line_of(proc, "attack_display_flood")
    assert graded_notebook(batch, "attack_display_flood").stat().st_size < 20 * 2**20


def test_disk_and_memory_written_are_bounded(attacked):
    batch, proc, *_ = attacked
    text = outputs_text(batch, "attack_disk_and_ram")
    for where in ("/tmp/big", "/dev/shm/big", "big", "sparse"):
        assert f"stopped {where}" in text, f"{where} was written in full"
    assert "wrote " not in text
    assert "write budget" in line_of(proc, "attack_disk_and_ram")


# ---------------------------------------------------------------- PostgreSQL and Dask

PG_ATTACK = """
import socket
path = "__PGSOCKDIR__/.s.PGSQL.__PGPORT__"
try:
    socket.socket(socket.AF_UNIX).connect(path)
    print("connected to", path)
except OSError as exc:
    print("no socket:", exc)
try:
    import psycopg
    conn = psycopg.connect(
        host="__PGSOCKDIR__", port=__PGPORT__, user="grader", dbname="postgres", connect_timeout=3
    )
    conn.execute(
        "create or replace function forge() returns trigger as $$ begin "
        "new.auto_score := 3; return new; end $$ language plpgsql"
    )
    conn.execute(
        "create trigger forge before insert or update on grade "
        "for each row execute function forge()"
    )
    conn.commit()
    print("trigger added")
except Exception as exc:
    print("no gradebook:", exc)
"""


@pytest.fixture(scope="module")
def postgres_on_a_socket():
    """A real PostgreSQL server listening on loopback TCP (for the grader) and on a Unix
    socket under /run (as a packaged server's /run/postgresql); (URL, socket dir, port)."""
    with postgres_server(sockets_under="/run") as server:
        yield server


@pytest.fixture(scope="module")
def attacked_on_dask_and_postgres(postgres_on_a_socket):
    """Attackers and an honest student graded on a Dask worker, into a PostgreSQL gradebook
    whose Unix socket is under /run; the grader's environment holds secrets."""
    pytest.importorskip("distributed")
    url, sockets, port = postgres_on_a_socket
    root = outside_tmp_and_home()
    saved = {k: os.environ.get(k) for k in [*SECRETS, "COURSE_DB_URL"]}
    os.environ.update(SECRETS, COURSE_DB_URL=url)  # the cluster's workers inherit them
    try:
        batch = Batch(root, ASSIGNMENT, NOTEBOOK)
        attacks = {
            "postgres": PG_ATTACK,
            "symlink_classmate": ATTACKS["symlink_classmate"],
            "environment_and_fds": ATTACKS["environment_and_fds"],
        }
        for name, code in attacks.items():
            code = code.replace("__PGSOCKDIR__", str(sockets)).replace("__PGPORT__", str(port))
            batch.submit(
                f"attack_{name}", attack_notebook(batch, code.replace("__ROOT__", str(root)))
            )
        batch.submit("attack_postgres_friend", batch.release)
        batch.submit("honest_solution", batch.answered(trim=True))
        before = tree_digest(root / "submitted")
        with tls_local_cluster(1, root / "cluster-certs") as scheduler:
            env = tool_env(COURSE_ROOT=str(root), COURSE_CELL_TIMEOUT=str(CELL_TIMEOUT))
            proc = batch.course_grade(*scheduler.flags(), env=env)
        yield batch, proc, url, before
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(root, ignore_errors=True)


def test_postgresql_gradebook_is_out_of_reach_on_dask(attacked_on_dask_and_postgres):
    import psycopg

    batch, proc, url, before = attacked_on_dask_and_postgres
    assert "NOT GRADED" not in proc.stdout, proc.stdout + proc.stderr
    scores = batch.scores()
    assert scores["honest_solution"] == batch.max_scores()
    for student in ("attack_postgres", "attack_postgres_friend", "attack_symlink_classmate"):
        assert sum(scores[student].values()) == 0, student
    text = outputs_text(batch, "attack_postgres")
    assert "no socket" in text and "no gradebook" in text
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as conn:
        triggers = conn.execute("select count(*) from pg_trigger where not tgisinternal")
        assert triggers.fetchone()[0] == 0
    assert tree_digest(batch.course.root / "submitted") == before
    env_text = outputs_text(batch, "attack_environment_and_fds")
    assert "ENV" in env_text
    for secret in [*SECRETS.values(), url.split("@")[1]]:
        assert secret not in env_text
