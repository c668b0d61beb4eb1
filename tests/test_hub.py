"""The course as a class on JupyterHub, in a real browser: what the README's guide says.

As root, the test follows "A class on JupyterHub": hub/install (the class's Python
environment, configurable-http-proxy from npm, the exchange), hub/add-user for an
instructor and two students (real Unix accounts with PAM passwords, removed afterwards),
then JupyterHub on loopback with hub/jupyterhub_config.py. Chromium (Playwright) then
plays every role: the instructor releases 01 from the formgrader; each student logs in,
fetches it from the Assignments tab, answers it (one right, one with a bug), presses
Validate and submits; the instructor collects, runs `course grade` in a terminal on the
hub, opens the gradebook, generates and releases feedback; each student fetches their
own feedback. Screenshots of every step go to artefacts/hub/.

Skipped, with the reason, where this cannot run: not root, no chromium or Playwright, no
npm, or no Python >= 3.11.5 that every account can run (hub/install says which).
"""

import fcntl
import grp
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course.authoring.classroom import fill, solution_sources
from course.authoring.demo import demo_answers
from course.paths import course_root

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright = pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")

REPO = course_root()
HUB = REPO / "hub"
ARTEFACTS = REPO / "artefacts" / "hub"
ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
]


def not_runnable_reason() -> str | None:
    if os.geteuid() != 0:
        return "the hub test creates Unix accounts: run it as root (CI does)"
    if not Path(CHROMIUM).exists():
        return "Debian's chromium is not installed"
    if not shutil.which("npm"):
        return "npm is missing (configurable-http-proxy comes from the npm registry)"
    for tool in ("useradd", "userdel", "groupadd", "chpasswd", "runuser"):
        if not shutil.which(tool):
            return f"{tool} is missing"
    return None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("hub"),
    pytest.mark.skipif(not_runnable_reason() is not None, reason=str(not_runnable_reason())),
]


def free_ports(count: int) -> int:
    """The first of `count` consecutive free loopback ports (hub, its API, the proxy's API)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            first = s.getsockname()[1]
        if first + count > 65535:
            continue
        try:
            for port in range(first, first + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
    raise RuntimeError("no consecutive free ports")


def run(
    *cmd, env=None, check=True, user=None, cwd=None, timeout=900
) -> subprocess.CompletedProcess:
    if user:
        cmd = (shutil.which("runuser") or "/usr/sbin/runuser", "-u", user, "--", *cmd)
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stderr}")
    return proc


class Class:
    """hub/install, hub/add-user and a running hub, all in a folder of its own."""

    def __init__(self):
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        # Every account must reach the prefix: not under pytest's private /tmp folder.
        self.base = Path(tempfile.mkdtemp(prefix="everything-leaks-hub-", dir="/var/tmp"))
        self.base.chmod(0o755)
        tag = secrets.token_hex(3)
        self.instructor = f"eli{tag}"
        self.students = [f"els1{tag}", f"els2{tag}"]
        self.password = secrets.token_urlsafe(12)
        self.port = free_ports(3)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.exchange = self.base / "exchange"
        # The class's Python environment is kept between runs (hub/install then only
        # reinstalls the course package; the pins again only when they change), under a
        # lock held for the whole test: one hub test on the machine at a time.
        self.prefix = Path(
            os.environ.get("EVERYTHING_LEAKS_HUB_TEST_PREFIX", "/var/tmp/everything-leaks-hub-test")
        )
        self.prefix.mkdir(mode=0o755, exist_ok=True)
        self.lock = (self.prefix.parent / f".{self.prefix.name}.lock").open("w")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.env = {
            **os.environ,
            "EVERYTHING_LEAKS_PREFIX": str(self.prefix),
            "EVERYTHING_LEAKS_STATE": str(self.base / "state"),
            "NBGRADER_EXCHANGE": str(self.exchange),
            "EVERYTHING_LEAKS_GROUP": f"elc{tag}",
            "EVERYTHING_LEAKS_INSTRUCTORS": f"eli{tag}g",
            "EVERYTHING_LEAKS_PORT": str(self.port),
        }
        self.proc = None
        self.users_added = []

    def install(self):
        proc = run(str(HUB / "install"), env=self.env, check=False)
        if proc.returncode == 2 and "every account can run" in proc.stderr:
            pytest.skip(proc.stderr.strip())
        assert proc.returncode == 0, proc.stderr
        for name, role in [(self.instructor, "instructor")] + [
            (s, "student") for s in self.students
        ]:
            self.users_added.append(name)
            run(str(HUB / "add-user"), name, role, self.password, env=self.env)

    def start(self):
        self.log = (ARTEFACTS / "hub.log").open("w")
        self.proc = subprocess.Popen(
            [
                str(self.prefix / "venv" / "bin" / "jupyterhub"),
                "-f",
                str(HUB / "jupyterhub_config.py"),
            ],
            cwd=self.base / "state",
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "JupyterHub exited; see artefacts/hub/hub.log"
            try:
                urllib.request.urlopen(f"{self.base_url}/hub/api/", timeout=2)
                return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError("JupyterHub did not answer; see artefacts/hub/hub.log")

    def home(self, user: str) -> Path:
        return Path(pwd.getpwnam(user).pw_dir)

    @property
    def course_dir(self) -> Path:
        return self.home(self.instructor) / "everything-leaks"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # the hub stops the users' servers, then the proxy
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
            self.log.close()
        for user in self.users_added:
            subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", "--remove", user], capture_output=True)
        for group in (self.env["EVERYTHING_LEAKS_GROUP"], self.env["EVERYTHING_LEAKS_INSTRUCTORS"]):
            subprocess.run(["groupdel", group], capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)
        self.lock.close()


@pytest.fixture(scope="module")
def klass():
    k = Class()
    try:
        k.install()
        k.start()
        yield k
    finally:
        k.stop()


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def shot(page, name: str):
    page.screenshot(path=ARTEFACTS / f"{name}.png")


def log_in(browser, klass, user):
    """A browser context of its own (its own cookies), logged in, with Lab loaded."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{klass.base_url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", klass.password)
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/lab**", timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="File").first.wait_for(timeout=120_000)
    return page


def user_url(klass, user, path):
    return f"{klass.base_url}/user/{user}{path}"


def open_assignments(page):
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").first.click()
    page.locator("#released_assignments_list").first.wait_for(timeout=30_000)


def formgrader_action(page, klass, column: str, expect: str):
    """Click a formgrader action (column class) on 01's row; wait for its log's verdict."""
    page.goto(user_url(klass, klass.instructor, "/formgrader/manage_assignments"))
    row = page.locator("tr", has=page.locator("td.name", has_text=ASSIGNMENT)).first
    row.locator(f"td.{column} a").first.click(timeout=60_000)
    modal = page.locator(".modal-dialog").first
    modal.wait_for(timeout=300_000)
    text = modal.inner_text()
    shot(page, f"instructor-{column}")
    assert expect in text, text
    page.locator(".modal-footer button").first.click()


def student_notebook(klass, student) -> Path:
    return klass.home(student) / ASSIGNMENT / f"{NOTEBOOK}.ipynb"


def answer(klass, student, answers):
    """What the student typed: the fetched notebook's solution cells, written as them."""
    path = student_notebook(klass, student)
    nb = fill(nbformat.read(path, as_version=4), answers)
    nbformat.write(nb, path)
    uid = pwd.getpwnam(student)
    os.chown(path, uid.pw_uid, uid.pw_gid)


def test_a_class_on_the_hub(klass, browser):
    source = nbformat.read(
        klass.course_dir / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4
    )
    answers = demo_answers(solution_sources(source))
    right, buggy = answers["ada"], answers["carl"]  # carl assigns grads instead of adding
    s1, s2 = klass.students

    # The instructor generates and releases 01 from the formgrader (its own tab: the hub's
    # CSP forbids framing it inside Lab, nbgrader issue 1870).
    teacher = log_in(browser, klass, klass.instructor)
    shot(teacher, "instructor-lab")
    teacher.goto(user_url(klass, klass.instructor, "/formgrader"))
    teacher.get_by_text("Manage Assignments").first.wait_for(timeout=60_000)
    formgrader_action(teacher, klass, "assign", "Successfully")
    formgrader_action(teacher, klass, "release", "Successfully released")

    # Students: no formgrader; fetch, answer, Validate, submit.
    for student, their_answers in [(s1, right), (s2, buggy)]:
        page = log_in(browser, klass, student)
        status = page.request.get(user_url(klass, student, "/formgrader")).status
        assert status == 404, f"{student} reaches the formgrader: {status}"
        assert page.locator(".lm-MenuBar-itemLabel", has_text="Formgrader").count() == 0
        open_assignments(page)
        released = page.locator("#released_assignments_list")
        released.get_by_text(ASSIGNMENT).first.wait_for(timeout=60_000)
        shot(page, f"{student}-released")
        released.locator("button", has_text="Fetch").first.click()
        fetched = page.locator("#fetched_assignments_list")
        fetched.get_by_text(ASSIGNMENT).first.wait_for(timeout=60_000)
        assert student_notebook(klass, student).exists()
        answer(klass, student, their_answers)
        if student == s2:
            # The due date passes between the two submissions: s2's is late.
            run(
                "nbgrader",
                "db",
                "assignment",
                "add",
                ASSIGNMENT,
                f"--duedate={time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC",
                user=klass.instructor,
                env=instructor_env(klass),
                cwd=klass.course_dir,
            )
            time.sleep(1)
        page.goto(user_url(klass, student, f"/lab/tree/{ASSIGNMENT}/{NOTEBOOK}.ipynb"))
        page.get_by_text("Python 3 (ipykernel) | Idle").first.wait_for(timeout=120_000)
        page.locator(".validate-button:visible").first.click()
        page.locator(".jp-Dialog-header", has_text="Validation Results").wait_for(timeout=300_000)
        shot(page, f"{student}-validate")
        if student == s1:
            assert page.locator(".validation-success").count() == 1
        page.keyboard.press("Escape")
        open_assignments(page)
        fetched = page.locator("#fetched_assignments_list")
        fetched.locator("button", has_text="Submit").first.click(timeout=60_000)
        page.locator("#submitted_assignments_list").get_by_text(ASSIGNMENT).first.wait_for(
            timeout=60_000
        )
        shot(page, f"{student}-submitted")
        page.context.close()

    check_exchange_isolation(klass)

    # The instructor collects, grades in a terminal on the hub, opens the gradebook.
    formgrader_action(teacher, klass, "collect", "Successfully collected")
    teacher.goto(user_url(klass, klass.instructor, "/lab"))
    teacher.locator(".lm-MenuBar-itemLabel", has_text="File").first.click(timeout=120_000)
    teacher.locator(".lm-Menu-itemLabel", has_text="New").first.click()
    teacher.locator(".lm-Menu-itemLabel", has_text="Terminal").first.click()
    terminal = teacher.locator(".jp-Terminal").first
    terminal.wait_for(timeout=60_000)
    teacher.wait_for_timeout(1000)  # the shell's prompt
    terminal.click()
    grade_log = klass.course_dir / "grade.log"
    teacher.keyboard.type(
        f"cd ~/everything-leaks && course grade {ASSIGNMENT} 2>&1 | tee grade.log;"
        " echo exit=${PIPESTATUS[0]} >> grade.log\n"
    )
    deadline = time.monotonic() + 600
    while "exit=" not in (grade_log.read_text() if grade_log.exists() else ""):
        assert time.monotonic() < deadline, "course grade did not finish in 10 minutes"
        time.sleep(2)
    shot(teacher, "instructor-course-grade")
    graded = grade_log.read_text()
    assert s1 in graded and s2 in graded, graded
    teacher.goto(user_url(klass, klass.instructor, f"/formgrader/gradebook/{ASSIGNMENT}"))
    teacher.get_by_text(NOTEBOOK).first.wait_for(timeout=60_000)
    shot(teacher, "instructor-gradebook")
    scores = gradebook(klass)
    assert scores[s1]["score"] == scores[s1]["max_score"] > 0, scores
    assert scores[s2]["score"] < scores[s2]["max_score"], scores
    assert scores[s1]["late"] == 0 and scores[s2]["late"] > 0, scores
    formgrader_action(teacher, klass, "generate-feedback", "Successfully")
    formgrader_action(teacher, klass, "release-feedback", "Successfully")

    # Released feedback is as unlisted as submissions (nbgrader: feedback is 711).
    proc = run(
        f"{klass.prefix}/venv/bin/python",
        "-c",
        f"import os; os.listdir({str(klass.exchange / 'everything-leaks' / 'feedback')!r})",
        user=s2,
        check=False,
    )
    assert proc.returncode != 0 and "PermissionError" in proc.stderr, proc.stderr

    # Each student fetches their feedback, and gets theirs only.
    for student in klass.students:
        page = log_in(browser, klass, student)
        open_assignments(page)
        submitted = page.locator("#submitted_assignments_list")
        submitted.locator("button", has_text="Fetch Feedback").first.click(timeout=60_000)
        submitted.get_by_text("view feedback").first.wait_for(timeout=60_000)
        shot(page, f"{student}-feedback-fetched")
        feedback = list((klass.home(student) / ASSIGNMENT / "feedback").rglob("*.html"))
        assert len(feedback) == 1, feedback
        html = feedback[0].read_text()
        # Their own: the heading carries their score (s1 full marks, s2 less).
        own = scores[student]
        heading = f"{NOTEBOOK} (Score: {round(own['score'], 2)} / {round(own['max_score'], 2)})"
        assert heading in html, html[:3000]
        page.goto(
            user_url(klass, student, f"/files/{feedback[0].relative_to(klass.home(student))}")
        )
        shot(page, f"{student}-feedback")
        page.context.close()
    teacher.context.close()


def instructor_env(klass) -> dict:
    return {
        "PATH": f"{klass.prefix}/venv/bin:/usr/bin:/bin",
        "HOME": str(klass.home(klass.instructor)),
        "COURSE_ROOT": str(klass.course_dir),
        "NBGRADER_EXCHANGE": str(klass.exchange),
        "JUPYTER_CONFIG_PATH": f"{klass.prefix}/jupyter/instructor",
    }


def gradebook(klass) -> dict:
    """{student: score, max_score, seconds late} read from the instructor's gradebook."""
    script = (
        "import json, sys\n"
        "from nbgrader.api import Gradebook\n"
        f"with Gradebook('sqlite:///{klass.course_dir}/gradebook.db') as gb:\n"
        "    out = {}\n"
        f"    for s in gb.assignment_submissions('{ASSIGNMENT}'):\n"
        "        out[s.student_id] = dict(score=s.score, max_score=s.max_score,"
        " late=s.total_seconds_late)\n"
        "print(json.dumps(out))\n"
    )
    python = f"{klass.prefix}/venv/bin/python"
    proc = run(
        python, "-c", script, user=klass.instructor, env=instructor_env(klass), cwd=klass.course_dir
    )
    return json.loads(proc.stdout)


def check_exchange_isolation(klass):
    """A student cannot list or read another's submission, nor the instructor's course."""
    s1, s2 = klass.students
    inbound = klass.exchange / "everything-leaks" / "inbound"
    mine = [p for p in inbound.iterdir() if p.name.startswith(f"{s1}+{ASSIGNMENT}+")]
    assert mine, sorted(p.name for p in inbound.iterdir())
    python = f"{klass.prefix}/venv/bin/python"
    # nbgrader's protection of a submission is an unlisted folder (inbound is write-only,
    # 733) and a random part in each submission's name: the instructor's account must read
    # the files, so they are world-readable by whoever knows the exact name.
    assert len(mine[0].name.rsplit("+", 1)[1]) >= 10, mine[0].name
    probes = {
        "list the inbound folder": f"import os; os.listdir({str(inbound)!r})",
        "list the course directory": f"import os; os.listdir({str(klass.course_dir)!r})",
        "read the gradebook": f"open({str(klass.course_dir / 'gradebook.db')!r}, 'rb').read()",
        "read s1's own copy": f"open({str(student_notebook(klass, s1))!r}).read()",
    }
    for what, code in probes.items():
        proc = run(python, "-c", code, user=s2, check=False)
        assert proc.returncode != 0 and "PermissionError" in proc.stderr, (what, proc.stderr)
    groups = {g.gr_name for g in grp.getgrall() if s2 in g.gr_mem}
    assert klass.env["EVERYTHING_LEAKS_INSTRUCTORS"] not in groups
