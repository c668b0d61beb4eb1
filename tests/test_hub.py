"""The course as a class on JupyterHub, in a real browser: what the README's guide says.

As root, the test follows "A class on JupyterHub": from a root-only copy of the course
source, hub/install (the class's Python environment, configurable-http-proxy from npm, the
exchange and its course folders), hub/add-user for an instructor and two named students
(real Unix accounts with PAM passwords, removed afterwards), then JupyterHub on loopback
with hub/jupyterhub_config.py. Chromium (Playwright) then plays every role: the instructor
releases 01 from the formgrader (and 03, 04 from the command line); each student logs in
and fetches it from the Assignments tab; s1 presses Validate on the blank copy (it fails)
and runs the README's learner commands in their home; one answers right, one with a bug,
both press Validate (pass, fail) and submit; the instructor collects, runs `course grade`
in a terminal on the hub, opens the gradebook and Manage Students, generates and releases
feedback; each student fetches and opens their own feedback and cannot open the other's.
As student s2 it also tries every route to what is not theirs (listed in
test_a_class_on_the_hub's docstring; the verdicts go to artefacts/hub/routes.json).
Screenshots of every step go to artefacts/hub/.

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
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
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
        cmd = (RUNUSER, "-u", user, "--", *cmd)
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stderr}")
    return proc


class Class:
    """hub/install, hub/add-user and a running hub, all in a folder of its own.

    The hub is installed as the README says, from a root-only copy of the course source
    (hub/install refuses a clone other accounts can open): the tracked and new files of
    this checkout, copied to a 0700 folder.
    """

    def __init__(self):
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        # Every account must reach the exchange: not under pytest's private /tmp folder.
        self.base = Path(tempfile.mkdtemp(prefix="everything-leaks-hub-", dir="/var/tmp"))
        self.base.chmod(0o755)
        tag = secrets.token_hex(3)
        self.instructor = f"eli{tag}"
        self.students = [f"els1{tag}", f"els2{tag}"]
        self.password = secrets.token_urlsafe(12)
        self.port = free_ports(3)
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.exchange = self.base / "exchange"
        self.src = self.base / "src"
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

    def copy_source(self):
        """The course source as `git clone` + `chmod 700` leave it (uncommitted work too)."""
        files = run("git", "ls-files", "-co", "--exclude-standard", "-z", cwd=REPO).stdout
        self.src.mkdir(mode=0o700)
        for name in filter(None, files.split("\0")):
            if (REPO / name).is_file():
                (self.src / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, self.src / name)
        self.src.chmod(0o700)

    def install(self):
        self.copy_source()
        # A course folder in the exchange that is not the class's (a student's early
        # mkdir, here nobody's) is refused before anything is installed.
        early = self.exchange / "everything-leaks"
        early.mkdir(parents=True)
        os.chown(early, pwd.getpwnam("nobody").pw_uid, -1)
        refused = run(str(self.src / "hub" / "install"), env=self.env, check=False)
        assert refused.returncode == 2 and "is not the class's" in refused.stderr, refused.stderr
        shutil.rmtree(self.exchange)
        proc = run(str(self.src / "hub" / "install"), env=self.env, check=False)
        if proc.returncode == 2 and "every account can run" in proc.stderr:
            pytest.skip(proc.stderr.strip())
        assert proc.returncode == 0, proc.stderr
        (ARTEFACTS / "install.log").write_text(proc.stdout + proc.stderr)
        assert "hub/install [6/6]" in proc.stdout, proc.stdout  # it says how far along it is
        self.full_names = dict(zip(self.students, ["Ada Lovelace", "Dora Marsden"], strict=True))
        for name, role in [(self.instructor, "instructor")] + [
            (s, "student") for s in self.students
        ]:
            self.users_added.append(name)
            full_name = [self.full_names[name]] if role == "student" else []
            run(
                str(self.src / "hub" / "add-user"),
                *(name, role, self.password, *full_name),
                env=self.env,
            )
        # Issue 53, item 5: a student added without a name is listed by their account's
        # name, and add-user says so (the formgrader showed "None, None").
        self.nameless = f"els3{self.instructor[3:]}"
        self.users_added.append(self.nameless)
        self.nameless_said = run(
            str(self.src / "hub" / "add-user"), self.nameless, "student", env=self.env
        ).stdout

    def start(self):
        self.log = (ARTEFACTS / "hub.log").open("w")
        self.proc = subprocess.Popen(
            [
                str(self.prefix / "venv" / "bin" / "jupyterhub"),
                "-f",
                str(self.src / "hub" / "jupyterhub_config.py"),
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
    """The whole class, then every route a student might take to what is not theirs.

    Item 1 of the hub's rules (README: the permissions table), as student s2, each of
    which must fail: reading the course source the hub was installed from (a solution,
    references/, the hub's own folder), the instructor's home, course directory, source
    solutions, references, gradebook and course secret, directly, through `..` from
    their own home and through a link they made to it; the hub's state folder (its
    cookie secret and database); s1's home and working notebook; s1's submission (listing
    inbound, opening it by its exact name, its submission_secret.txt, which names the
    feedback); the feedback folder's listing; through Lab's contents and files API (a
    `..` path, the link in their home, another user's server); /proc of the instructor's
    processes (environ, cwd, root, fd, mem) and, in every process's command line, the
    instructor's API token or the course secret; and the class's Python environment must
    hold no solution (no `### BEGIN SOLUTION`, no `.pct.py`, no references/).

    Item 4, the exchange against a classmate: a course folder made early in the exchange
    (hub/install refuses to install over it: `Class.install`); making, renaming or
    removing the course's exchange folders; writing into the released assignment; writing
    into s1's submission; a folder named as s1's but made by s2 (not collected); s1's
    folder as nbgrader's stock submit leaves it (0777) with its notebook replaced by s2's
    (not collected: s1's real one is graded); a setuid program in s2's submission
    (collected without setuid, setgid or execute bits).
    """
    source = nbformat.read(
        klass.course_dir / "source" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4
    )
    answers = demo_answers(solution_sources(source))
    # dora's central difference is a forward one: a "check it" cell fails, so Validate
    # fails (carl's bug passes every visible check, with `make lab` as on the hub).
    right, buggy = answers["ada"], answers["dora"]
    s1, s2 = klass.students

    # The instructor generates and releases 01 from the formgrader (its own tab: the hub's
    # CSP forbids framing it inside Lab, nbgrader issue 1870).
    teacher = log_in(browser, klass, klass.instructor)
    shot(teacher, "instructor-lab")
    teacher.goto(user_url(klass, klass.instructor, "/formgrader"))
    teacher.get_by_text("Manage Assignments").first.wait_for(timeout=60_000)
    formgrader_action(teacher, klass, "assign", "Successfully")
    formgrader_action(teacher, klass, "release", "Successfully released")
    # The assignment's name links to its source folder: on the instructor's own server.
    teacher.goto(user_url(klass, klass.instructor, "/formgrader/manage_assignments"))
    link = teacher.locator("td.name a", has_text=ASSIGNMENT).first.get_attribute("href")
    opened = teacher.request.get(f"{klass.base_url}{link}")
    assert opened.status == 200 and f"/user/{klass.instructor}/" in opened.url, (link, opened.url)
    # 03 and 04 (their committed release/) from the command line, at once: 04 carries
    # 03's code (the learner's `course export`).
    releases = [
        subprocess.Popen(
            [RUNUSER, "-u", klass.instructor, "--", "nbgrader", "release_assignment", later],
            env=instructor_env(klass),
            cwd=klass.course_dir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for later in ("03_multilayer", "04_optimisers")
    ]

    # Students: no formgrader; fetch from the Assignments tab.
    pages = {}
    for student in klass.students:
        page = pages[student] = log_in(browser, klass, student)
        status = page.request.get(user_url(klass, student, "/formgrader")).status
        assert status == 404, f"{student} reaches the formgrader: {status}"
        assert page.locator(".lm-MenuBar-itemLabel", has_text="Formgrader").count() == 0
        open_assignments(page)
        released = page.locator("#released_assignments_list")
        released.get_by_text(ASSIGNMENT).first.wait_for(timeout=60_000)
        shot(page, f"{student}-released")
        released.locator(".list_item", has_text=ASSIGNMENT).locator(
            "button", has_text="Fetch"
        ).first.click()
        fetched = page.locator("#fetched_assignments_list")
        fetched.get_by_text(ASSIGNMENT).first.wait_for(timeout=60_000)
        assert student_notebook(klass, student).exists()
    for release in releases:
        assert release.wait(timeout=300) == 0, release.stderr.read()

    # A fetched copy opens unchanged (issue 33, item 5): it carries the hub kernel's
    # language_info (hub/add-user), which JupyterLab would otherwise write into it.
    fetched_bytes = student_notebook(klass, s1).read_bytes()
    page = pages[s1]
    page.goto(user_url(klass, s1, f"/lab/tree/{ASSIGNMENT}/{NOTEBOOK}.ipynb"))
    page.get_by_text("Python 3 (ipykernel) | Idle").first.wait_for(timeout=120_000)
    page.wait_for_timeout(2_000)  # the kernel's info reaches the notebook after idle
    shot(page, f"{s1}-opened-untouched")
    assert page.locator(".lm-TabBar-tab.lm-mod-current.jp-mod-dirty").count() == 0
    assert student_notebook(klass, s1).read_bytes() == fetched_bytes

    # s1 validates the blank copy (it fails) and runs the README's learner commands.
    assert validate_in_lab(pages[s1], klass, s1) == "failed"
    learner_commands(klass, s1)

    # Both answer (s1 right, s2 with a bug) and press Validate at the same time.
    answer(klass, s1, right)
    answer(klass, s2, buggy)
    for student in klass.students:
        press_validate(pages[student], klass, student)
    verdicts = {student: validation_verdict(pages[student], student) for student in klass.students}
    assert verdicts == {s1: "passed", s2: "failed"}, verdicts

    for student in klass.students:
        if student == s2:
            # The due date passes between the two submissions: s2's is late. (It is given
            # to the second, after s1's submission last changed.)
            time.sleep(1.5)
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
        page = pages[student]
        open_assignments(page)
        fetched = page.locator("#fetched_assignments_list")
        fetched.locator(".list_item", has_text=ASSIGNMENT).locator(
            "button", has_text="Submit"
        ).first.click(timeout=60_000)
        page.locator("#submitted_assignments_list").get_by_text(ASSIGNMENT).first.wait_for(
            timeout=60_000
        )
        shot(page, f"{student}-submitted")
    contents_api_probes(pages[s2], klass)
    for page in pages.values():
        page.context.close()

    attacks = classmate_attacks(klass)
    denied = student_probes(klass, s2)
    assert not {k: v for k, v in denied.items() if not v.startswith("denied")}, denied

    # The instructor collects, grades in a terminal on the hub, opens the gradebook.
    formgrader_action(teacher, klass, "collect", "Successfully collected")
    collected = klass.course_dir / "submitted"
    assert (collected / s1 / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_bytes() == attacks["genuine"]
    tool = collected / s2 / ASSIGNMENT / "tool"
    assert tool.exists() and tool.stat().st_mode & 0o7111 == 0, oct(tool.stat().st_mode)
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
    deadline, cmdlines = time.monotonic() + 600, set()
    while "exit=" not in (grade_log.read_text() if grade_log.exists() else ""):
        assert time.monotonic() < deadline, "course grade did not finish in 10 minutes"
        cmdlines |= set(command_lines(klass, s2))  # what a student sees of the grading
        time.sleep(2)
    shot(teacher, "instructor-course-grade")
    graded = grade_log.read_text()
    assert s1 in graded and s2 in graded, graded
    secret = (klass.course_dir / ".nbgrader" / "secret").read_text().strip()
    token = server_token(klass, klass.instructor)
    assert not [c for c in cmdlines if secret in c or token in c]
    teacher.goto(user_url(klass, klass.instructor, f"/formgrader/gradebook/{ASSIGNMENT}"))
    teacher.get_by_text(NOTEBOOK).first.wait_for(timeout=60_000)
    shot(teacher, "instructor-gradebook")
    scores = gradebook(klass)
    assert scores[s1]["score"] == scores[s1]["max_score"] > 0, scores
    assert scores[s2]["score"] < scores[s2]["max_score"], scores
    assert scores[s1]["late"] == 0 and scores[s2]["late"] > 0, scores
    # Manage Students: each by name (hub/add-user put them in the gradebook).
    teacher.goto(user_url(klass, klass.instructor, "/formgrader/manage_students"))
    teacher.get_by_text("Lovelace, Ada").first.wait_for(timeout=60_000)
    assert teacher.get_by_text("Marsden, Dora").count() == 1
    assert teacher.get_by_text("None, None").count() == 0
    assert teacher.get_by_text(klass.nameless).count() >= 1
    assert teacher.get_by_text(f"{klass.nameless}, None").count() == 0
    assert f"the gradebook lists them as {klass.nameless}" in klass.nameless_said
    assert '"First Last"' in klass.nameless_said
    shot(teacher, "instructor-students")
    failed = notebook_failed_tests(klass)
    assert failed == {s1: False, s2: True}, failed  # the formgrader's "Tests Failed?"
    formgrader_action(teacher, klass, "generate-feedback", "Successfully")
    formgrader_action(teacher, klass, "release-feedback", "Successfully")

    # Each student fetches their feedback, opens it, and cannot open the other's.
    pages = {}
    for student in klass.students:
        page = pages[student] = log_in(browser, klass, student)
        open_assignments(page)
        submitted = page.locator("#submitted_assignments_list")
        submitted.locator("button", has_text="Fetch Feedback").first.click(timeout=60_000)
        submitted.get_by_text("view feedback").first.click(timeout=60_000)
        # nbgrader's link shows the feedback folder in Lab's file browser.
        page.locator(".jp-DirListing-itemText", has_text=f"{NOTEBOOK}.html").first.wait_for(
            timeout=60_000
        )
        shot(page, f"{student}-feedback-fetched")
        feedback = list((klass.home(student) / ASSIGNMENT / "feedback").rglob("*.html"))
        assert len(feedback) == 1, feedback
        html = feedback[0].read_text()
        # Their own: the heading carries their score (s1 full marks, s2 less).
        own = scores[student]
        heading = f"{NOTEBOOK} (Score: {round(own['score'], 2)} / {round(own['max_score'], 2)})"
        assert heading in html, html[:3000]
        pages[student, "url"] = f"/files/{feedback[0].relative_to(klass.home(student))}"
        response = page.request.get(user_url(klass, student, pages[student, "url"]))
        assert response.status == 200 and heading in response.text()
        page.goto(user_url(klass, student, pages[student, "url"]))
        shot(page, f"{student}-feedback")
    for student, other in [(s1, s2), (s2, s1)]:
        # Another user's server sends a stranger to the Hub's log-in, which refuses them.
        url = user_url(klass, other, pages[other, "url"])
        response = pages[student].request.get(url, max_redirects=0)
        assert response.status != 200, (student, other, response.status)
        response = pages[student].request.get(url)
        assert response.status != 200 or "Score:" not in response.text(), (student, other)
        pages[student].context.close()
    proc = as_student(
        klass,
        s2,
        "python",
        "-c",
        f"import os; os.listdir({str(klass.exchange / 'everything-leaks' / 'feedback')!r})",
    )
    assert proc.returncode != 0 and "PermissionError" in proc.stderr, proc.stderr
    teacher.context.close()


def press_validate(page, klass, student):
    """Open the student's notebook in Lab and press Validate (it saves, then runs it)."""
    page.goto(user_url(klass, student, f"/lab/tree/{ASSIGNMENT}/{NOTEBOOK}.ipynb"))
    page.get_by_text("Python 3 (ipykernel) | Idle").first.wait_for(timeout=120_000)
    page.locator(".validate-button:visible").first.click()


def validation_verdict(page, student) -> str:
    """ "passed" or "failed", from Validate's dialog."""
    page.locator(".jp-Dialog-header", has_text="Validation Results").wait_for(timeout=300_000)
    shot(page, f"{student}-validate")
    passed = page.locator(".validation-success").count() == 1
    failed = page.locator(".validation-failed").count() >= 1
    page.keyboard.press("Escape")
    assert passed != failed
    return "passed" if passed else "failed"


def validate_in_lab(page, klass, student) -> str:
    press_validate(page, klass, student)
    return validation_verdict(page, student)


def student_env(klass, student) -> dict:
    """What a student's terminal on the hub has (hub/jupyterhub_config.py's set_up)."""
    return {
        "PATH": f"{klass.prefix}/venv/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(klass.home(student)),
        "USER": student,
        "JUPYTER_CONFIG_PATH": f"{klass.prefix}/jupyter/student",
        "NBGRADER_EXCHANGE": str(klass.exchange),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }


def as_student(klass, student, *cmd, timeout=600) -> subprocess.CompletedProcess:
    return run(
        *cmd,
        user=student,
        env=student_env(klass, student),
        cwd=klass.home(student),
        check=False,
        timeout=timeout,
    )


def learner_commands(klass, student):
    """The README's learner commands, from the student's home, on what the exchange gave."""
    blank = as_student(klass, student, "course", "validate", f"{ASSIGNMENT}/{NOTEBOOK}.ipynb")
    assert blank.returncode == 1 and "validation failed" in blank.stdout, (
        blank.stdout + blank.stderr
    )
    check = as_student(klass, student, "course", "check", f"{ASSIGNMENT}/{NOTEBOOK}.ipynb")
    assert check.returncode == 2 and "no course directory" in check.stderr, check.stderr
    assert "release/{" not in check.stderr
    for later in ("03_multilayer", "04_optimisers"):
        fetched = as_student(klass, student, "nbgrader", "fetch_assignment", later)
        assert fetched.returncode == 0, fetched.stderr
    exported = as_student(klass, student, "course", "export")
    carried = klass.home(student) / "04_optimisers" / "my_03_multilayer.py"
    assert exported.returncode == 0 and carried.is_file(), exported.stderr
    again = as_student(klass, student, "course", "export", "--work", "~")
    assert again.returncode == 0 and "up to date" in again.stdout, again.stdout + again.stderr


def server_token(klass, user) -> str:
    """The API token in the environment of the user's server (root reads it)."""
    pid = run("pgrep", "-u", user, "-f", "jupyterhub-singleuser").stdout.split()[0]
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    token = next(v for v in environ if v.startswith(b"JUPYTERHUB_API_TOKEN="))
    return token.split(b"=", 1)[1].decode()


def command_lines(klass, student) -> list[str]:
    """Every process's command line, as the student reads them from /proc."""
    script = (
        "import glob, json\n"
        "out = []\n"
        "for p in glob.glob('/proc/[0-9]*/cmdline'):\n"
        "    try: out.append(open(p, 'rb').read().decode('utf-8', 'replace'))\n"
        "    except OSError: pass\n"
        "print(json.dumps(out))\n"
    )
    return json.loads(as_student(klass, student, "python", "-c", script).stdout)


PROBE = """
import json, os, sys
results = {}
for what, kind, path in json.loads(sys.argv[1]):
    try:
        if kind == "read":
            open(path, "rb").read(1)
        elif kind == "list":
            os.listdir(path)
        elif kind == "readlink":
            os.readlink(path)
        elif kind == "write":
            open(path, "wb").write(b"{}")
        elif kind == "mkdir":
            os.mkdir(path)
        elif kind == "rename":
            os.rename(path, path + ".moved")
        elif kind == "rmdir":
            os.rmdir(path)
        results[what] = "DONE"
    except OSError as error:
        results[what] = f"denied: {type(error).__name__}"
print(json.dumps(results))
"""


def student_probes(klass, student) -> dict:
    """{route: "denied: <error>" or "DONE"} for every file route of the docstring."""
    s1 = klass.students[0]
    mine, theirs = klass.home(student), klass.home(s1)
    course, src = klass.course_dir, klass.src
    solution = f"source/{ASSIGNMENT}/{NOTEBOOK}.pct.py"
    reference = next((src / "references").rglob("*.*")).relative_to(src)
    (mine / "peek").unlink(missing_ok=True)
    as_student(klass, student, "ln", "-s", str(course), str(mine / "peek"))
    outbound = klass.exchange / "everything-leaks"
    routes = [
        ("the source's solution", "read", src / solution),
        ("the source's references", "read", src / reference),
        ("the source folder", "list", src),
        ("the hub's config folder", "list", src / "hub"),
        ("the instructor's home", "list", klass.home(klass.instructor)),
        ("the course directory", "list", course),
        ("the course's solution", "read", course / solution),
        ("the course's references", "read", course / reference),
        ("the gradebook", "read", course / "gradebook.db"),
        ("the course secret", "read", course / ".nbgrader" / "secret"),
        (
            "the gradebook through ..",
            "read",
            f"{mine}/../{klass.instructor}/everything-leaks/gradebook.db",
        ),
        ("the solution through a link", "read", mine / "peek" / solution),
        ("the hub's state", "list", klass.base / "state"),
        ("the hub's cookie secret", "read", klass.base / "state" / "jupyterhub_cookie_secret"),
        ("s1's home", "list", theirs),
        ("s1's notebook", "read", theirs / ASSIGNMENT / f"{NOTEBOOK}.ipynb"),
        ("the inbound folder", "list", outbound / "inbound"),
        ("the feedback folder", "list", outbound / "feedback"),
        ("s1's submission", "list", klass.submission_of_s1),
        ("s1's submitted notebook", "read", klass.submission_of_s1 / f"{NOTEBOOK}.ipynb"),
        ("s1's submission secret", "read", klass.submission_of_s1 / "submission_secret.txt"),
        ("a file into s1's submission", "write", klass.submission_of_s1 / "extra.py"),
        ("the course's exchange folder, made anew", "mkdir", outbound),
        ("the course's exchange folder, moved", "rename", outbound),
        ("the course's exchange folder, removed", "rmdir", outbound),
        ("a folder in the course's exchange folder", "mkdir", outbound / "evil"),
        ("the inbound folder, moved", "rename", outbound / "inbound"),
        ("the outbound folder, moved", "rename", outbound / "outbound"),
        ("the feedback folder, moved", "rename", outbound / "feedback"),
        (
            "the release, rewritten",
            "write",
            outbound / "outbound" / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
        ),
    ]
    for pid in run("pgrep", "-u", klass.instructor).stdout.split():
        routes += [
            (f"/proc/{pid}/environ", "read", f"/proc/{pid}/environ"),
            (f"/proc/{pid}/mem", "read", f"/proc/{pid}/mem"),
            (f"/proc/{pid}/cwd", "readlink", f"/proc/{pid}/cwd"),
            (f"/proc/{pid}/root", "readlink", f"/proc/{pid}/root"),
            (f"/proc/{pid}/fd", "list", f"/proc/{pid}/fd"),
        ]
    routes = [(what, kind, str(path)) for what, kind, path in routes]
    proc = as_student(klass, student, "python", "-c", PROBE, json.dumps(routes))
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    # The class's Python environment is what every account reads: no solution in it.
    site = next((klass.prefix / "venv" / "lib").glob("python3*/site-packages"))
    assert not list((site / "course").rglob("*.pct.py"))
    assert not (site / "references").exists() and not (site / "source").exists()
    hits = run("grep", "-rl", "BEGIN SOLUTION", str(site / "course"), check=False).stdout
    assert not hits, hits
    groups = {g.gr_name for g in grp.getgrall() if student in g.gr_mem}
    assert klass.env["EVERYTHING_LEAKS_INSTRUCTORS"] not in groups
    (ARTEFACTS / "routes.json").write_text(json.dumps(results, indent=1))
    return results


def contents_api_probes(page, klass):
    """Lab's contents and files API, as the logged-in student s2."""
    s1, s2 = klass.students
    course = klass.course_dir
    run("ln", "-sfn", str(course), str(klass.home(s2) / "peek"))
    os.lchown(klass.home(s2) / "peek", pwd.getpwnam(s2).pw_uid, -1)
    tries = {
        "contents ..": user_url(
            klass, s2, f"/api/contents/..%2F{klass.instructor}%2Feverything-leaks"
        ),
        "contents via link": user_url(klass, s2, "/api/contents/peek"),
        "contents via link, solution": user_url(
            klass, s2, f"/api/contents/peek/source/{ASSIGNMENT}/{NOTEBOOK}.pct.py"
        ),
        "files via link": user_url(klass, s2, f"/files/peek/source/{ASSIGNMENT}/{NOTEBOOK}.pct.py"),
        "files ..": user_url(
            klass, s2, f"/files/..%2F{klass.instructor}%2Feverything-leaks%2Fgradebook.db"
        ),
        "the instructor's server": user_url(
            klass, klass.instructor, "/api/contents/everything-leaks"
        ),
        "s1's server": user_url(klass, s1, f"/api/contents/{ASSIGNMENT}"),
    }
    for what, url in tries.items():
        response = page.request.get(url, max_redirects=0)
        assert response.status != 200, (what, response.status, response.text()[:300])


def classmate_attacks(klass) -> dict:
    """s2 forges a submission of s1's, fills s1's stock-submit folder with their own
    notebook, and submits a setuid program; returns s1's genuine submitted notebook."""
    s1, s2 = klass.students
    inbound = klass.exchange / "everything-leaks" / "inbound"
    [genuine] = [p for p in inbound.iterdir() if p.name.startswith(f"{s1}+{ASSIGNMENT}+")]
    klass.submission_of_s1 = genuine  # s2 is assumed to have learnt its name
    nb = f"{NOTEBOOK}.ipynb"

    def folder(owner, named, files, mode=0o755):
        stamp = time.strftime("%Y-%m-%d %H:%M:%S.000000 UTC", time.gmtime())
        path = inbound / f"{named}+{ASSIGNMENT}+{stamp}+{secrets.token_urlsafe(9)}"
        script = (
            "import os, sys, json\n"
            "path, files, mode = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])\n"
            "os.mkdir(path)\n"
            "for name, (text, m) in files.items():\n"
            "    open(os.path.join(path, name), 'w').write(text)\n"
            "    os.chmod(os.path.join(path, name), m)\n"
            "os.chmod(path, mode)\n"
        )
        files = {"timestamp.txt": (stamp, 0o644), **files}
        proc = as_student(
            klass, owner, "python", "-c", script, str(path), json.dumps(files), str(mode)
        )
        assert proc.returncode == 0, proc.stderr
        time.sleep(1.1)
        return path

    theirs = (klass.home(s2) / ASSIGNMENT / nb).read_text()
    folder(s2, s1, {nb: (theirs, 0o644)})  # named as s1's, made by s2
    stock = folder(s1, s1, {nb: ((klass.home(s1) / ASSIGNMENT / nb).read_text(), 0o644)}, 0o777)
    swap = (
        f"import os; os.remove({str(stock / nb)!r}); open({str(stock / nb)!r}, 'w').write('{{}}')"
    )
    proc = as_student(klass, s2, "python", "-c", swap)
    assert proc.returncode == 0, proc.stderr  # nbgrader's 0777 lets it: collect must not
    # s2's own submission again, by hand, with a setuid program in it (and the secret of
    # their real one, which names the feedback they fetch).
    [real] = [p for p in inbound.iterdir() if p.name.startswith(f"{s2}+{ASSIGNMENT}+")][:1]
    own_secret = (real / "submission_secret.txt").read_text()
    tool = ("#!/bin/sh\nid\n", 0o4755)
    folder(
        s2, s2, {nb: (theirs, 0o644), "submission_secret.txt": (own_secret, 0o644), "tool": tool}
    )
    return {"genuine": (genuine / nb).read_bytes()}


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


def notebook_failed_tests(klass) -> dict:
    """{student: failed_tests} of 01's notebook, as the formgrader's gradebook shows it."""
    script = (
        "import json\n"
        "from nbgrader.api import Gradebook\n"
        f"with Gradebook('sqlite:///{klass.course_dir}/gradebook.db') as gb:\n"
        f"    rows = gb.notebook_submission_dicts('{NOTEBOOK}', '{ASSIGNMENT}')\n"
        "print(json.dumps({r['student']: r['failed_tests'] for r in rows}))\n"
    )
    python = f"{klass.prefix}/venv/bin/python"
    proc = run(
        python, "-c", script, user=klass.instructor, env=instructor_env(klass), cwd=klass.course_dir
    )
    return json.loads(proc.stdout)
