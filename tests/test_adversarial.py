"""Submissions that attack the grader, autograded for real.

Each attacker submits the blank release (nothing implemented) plus one attack cell, so any
point it earns is a forged point. Honest students are graded in the same batch: their
grades must come out exactly right, and the gradebook intact.
"""

import copy
import json
import socket
import sqlite3
import threading

import nbformat
import pytest

from course.grader.cells import solution_cell_id
from tests.harness import Batch, read_nb, tree_digest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("adversarial")]

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
CELL_TIMEOUT = 6

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
root = os.environ.get("COURSE_ROOT", "")
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
path = os.path.join(os.environ.get("COURSE_ROOT", ""), "gradebook.db")
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


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    batch = Batch(tmp_path_factory.mktemp("attacked"), ASSIGNMENT, NOTEBOOK)
    listener = Listener()
    for name, code in ATTACKS.items():
        code = code.replace("PORT", str(listener.port))
        batch.submit(f"attack_{name}", attack_notebook(batch, code))
    batch.submit("honest_solution", batch.answered(trim=True))
    honest_bug = batch.solutions["value_core"].replace(
        "self.grad += out.grad\n            other.grad += out.grad",
        "self.grad = out.grad\n            other.grad = out.grad",
    )
    batch.submit("honest_bug", batch.answered({"value_core": honest_bug}, trim=True))
    before = tree_digest(batch.course.root / "submitted")
    proc = batch.course_grade(cell_timeout=CELL_TIMEOUT)
    listener.close()
    after = tree_digest(batch.course.root / "submitted")
    return batch, proc, listener, before, after


def graded_notebook(batch, student):
    return batch.course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def line_of(proc, student):
    return next(line for line in proc.stdout.splitlines() if line.startswith(student + " "))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
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
    _, _, listener, *_ = attacked
    assert listener.connections == 0


@pytest.mark.parametrize(
    ("attack", "words"),
    [
        ("sigint_ignoring_loop", "cut off in cell 1: this cell did not stop when interrupted"),
        ("exit_midway", "cut off in cell 1: the kernel died"),
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
        if isinstance(v, float) and v not in (0.0, 1.0) and abs(v) > 1e-6
    ]
    secrets += ["BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "self.grad += other.data * out.grad"]
    for student in ("attack_read_secrets", "attack_fork_bomb", "honest_bug"):
        html = (root / "feedback" / student / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
        leaked = [s for s in secrets if s in html]
        assert not leaked, f"{student}'s feedback shows {leaked[:3]}"
        assert "Traceback" not in html.split("value_ops")[-1] or student != "honest_bug"
    nb = read_nb(graded_notebook(batch, "attack_read_secrets"))
    printed = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    # Only the path down to its own working copy exists: no source/, references/, gradebook.
    assert "visible: ['autograded']" in printed
    assert "students: ['attack_read_secrets']" in printed


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
    from course.grader.inputs import seed_of

    seeds = [str(seed_of(key.encode(), name)) for name in batch.max_scores()]
    for path in (root / "autograded").rglob("*.ipynb"):
        text = path.read_text()
        assert key not in text
        assert not [s for s in seeds if s in text], f"{path}: a seed line was kept"
