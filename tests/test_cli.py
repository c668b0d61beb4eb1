"""The command line: it passes on only what was said (its defaults are autograde.grade's
own), each command's --help says what it does with an example, a bad input says what to do."""

import os
import subprocess
from pathlib import Path

import pytest

from course import cli
from course.grader import autograde


def test_course_grade_has_one_source_of_defaults(monkeypatch):
    calls = []
    monkeypatch.setattr(autograde, "grade", lambda *args, **kwargs: calls.append(kwargs) or [])
    monkeypatch.setattr(autograde, "print_table", lambda statuses: None)
    cli.main(["grade", "01_backprop"])
    cli.main(["grade", "01_backprop", "--workers", "3", "--force"])
    assert "workers" not in calls[0] and "force" not in calls[0]
    assert calls[1]["workers"] == 3 and calls[1]["force"] is True


COMMANDS = [
    "build",
    "references",
    "grade",
    "check",
    "export",
    "validate",
    "lab",
    "demo",
    "cluster-certs",
    "bench",
]


def test_every_command_is_listed_and_its_help_says_what_and_shows_how(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--help-all"])
    listed = capsys.readouterr().out
    assert done.value.code == 0 and "example: course check" in listed
    for command in COMMANDS:
        assert f"    {command} " in listed or f"    {command}\n" in listed, command
        with pytest.raises(SystemExit) as done:
            cli.main([command, "--help"])
        shown = capsys.readouterr().out
        assert done.value.code == 0
        usage, description, *_ = shown.split("\n\n")
        assert usage.startswith(f"usage: course {command}") and description.endswith("."), shown
        example = shown.split("\nexample")[1]
        assert example.startswith(("s:\n  course ", ":\n  course ")), shown


def test_a_learners_help_lists_the_learners_commands_and_says_where_the_rest_are(capsys):
    """Issue 53, item 4: on a class's hub `course --help` listed build, grade, bench, ... to
    students. Now their four commands; the instructor's and author's behind --help-all."""
    with pytest.raises(SystemExit) as done:
        cli.main(["--help"])
    listed = capsys.readouterr().out
    assert done.value.code == 0 and listed.startswith("usage: course [-h | --help-all] COMMAND")
    lines = {line.split()[0] for line in listed.splitlines() if line.startswith("    ")}
    assert {"lab", "check", "validate", "export"} <= lines
    assert not lines & {"build", "references", "grade", "demo", "cluster-certs", "bench"}
    assert "course --help-all" in listed


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["frobnicate"], ["invalid choice: 'frobnicate'", "see `course --help`"]),
        (["grade"], ["assignment", "see `course grade --help`"]),
        (["grade", "01_backprop", "--workers", "0"], ["--workers", "at least 1, e.g. 2"]),
        (["grade", "1_backprop"], ["no assignment '1_backprop'", "name one of 01_backprop"]),
        (["check", "nowhere.ipynb"], ["nowhere.ipynb: give the path", "work/01_backprop/"]),
        (["validate", "nowhere.ipynb"], ["nowhere.ipynb: give the path"]),
        (["export", "--work", "/nonexistent"], ["/nonexistent: run `make lab` first", "--work"]),
        (["lab", "--course", "/tmp"], ["/tmp is not a course directory", "--course"]),
        # Issue 33's second walk: an unknown option is told by the command's own parser; a
        # folder, or the course's release/ copy (check wrote its feedback into release/),
        # is refused with the notebook to give instead; grade takes another course.
        (["check", "--bogus", "x"], ["usage: course check", "see `course check --help`"]),
        (["check", "release/01_backprop"], ["is a folder: give its notebook", "backprop.ipynb"]),
        (
            ["check", "release/01_backprop/backprop.ipynb"],
            ["release/ copy, which is not yours", "work/01_backprop/backprop.ipynb"],
        ),
        (["grade", "01_backprop", "--course", "/tmp"], ["/tmp is not a course directory"]),
    ],
)
def test_a_bad_input_names_what_is_wrong_and_what_to_do(argv, said, capsys):
    """The file or the option at fault, and what to do next (issue 33, item 10)."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    error = capsys.readouterr().err
    assert code == 2
    for words in said:
        assert words in error, error


def test_make_lab_passes_jupyters_options_on():
    """`make lab ARGS="--no-browser --port 9999"` (issue 33, item 9): a dry run of make."""
    root = Path(cli.__file__).resolve().parent.parent
    for target, flag in (("lab", ""), ("lab-instructor", " --instructor")):
        plan = subprocess.run(
            ["make", "-n", "-C", str(root), target, "ARGS=--no-browser --port 9999"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"JUPYTER_PORT=8888 .venv/bin/course lab{flag} -- --no-browser --port 9999" in plan
    readme = (root / "README.md").read_text()
    assert 'make lab ARGS="--no-browser --port 9999"' in readme


def test_a_port_in_args_wins_over_makes_port(monkeypatch):
    """A reviewer's `make lab ARGS="--no-browser --port 8950"` stopped with "port only
    accepts one value, got 2" while make also passed --port=8888: make's port is now the
    JUPYTER_PORT default, which a --port in ARGS overrides, in either spelling."""
    from jupyter_server.serverapp import ServerApp

    monkeypatch.setenv("JUPYTER_PORT", "8888")
    for argv, port in (
        ([], 8888),
        (["--no-browser", "--port", "9999"], 9999),
        (["--port=9998"], 9998),
    ):
        app = ServerApp()
        app.parse_command_line(argv)
        assert app.port == port, argv


def test_a_hub_students_commands_without_a_course_directory(tmp_path, monkeypatch, capsys):
    """Round 8: on a class's hub a student's `course` is an installed package, with no course
    beside it. `course check` says why it cannot grade there (it listed `release/{}`),
    `course export` works on the home folder (it looked for site-packages/work), and
    `course validate` reads the set-up's nbgrader_config.py (ConfigFileNotFound)."""
    from pathlib import Path

    import nbformat

    from course import selfcheck

    hub_set_up = Path(__file__).resolve().parents[1] / "hub" / "jupyter" / "student"
    home = tmp_path / "home"
    (home / "01_backprop").mkdir(parents=True)
    notebook = home / "01_backprop" / "backprop.ipynb"
    notebook.write_text(nbformat.writes(nbformat.v4.new_notebook()))
    monkeypatch.setenv("COURSE_ROOT", str(tmp_path / "site-packages"))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(hub_set_up))
    assert cli.main(["check", str(notebook)]) == 2
    err = capsys.readouterr().err
    assert "no course directory" in err and "release/{" not in err
    assert "site-packages" not in err  # issue 53, item 4: no internal path
    assert cli.main(["export"]) == 0
    assert "up to date" in capsys.readouterr().out
    config = selfcheck.validate_settings(tmp_path / "site-packages")
    assert config.Validator.validate_all is True
    assert config.ExchangeFactory.submit == "course.grader.exchange.PrivateSubmit"


def test_course_grade_grades_the_course_of_the_current_folder(tmp_path, monkeypatch):
    """`cd demo/course && course grade 01_backprop` graded the checkout's submitted/ (issue
    33's second walk): the current folder, when it is a course directory, is the course."""
    (tmp_path / "nbgrader_config.py").write_text("")
    (tmp_path / "release" / "01_backprop").mkdir(parents=True)
    monkeypatch.setenv("COURSE_ROOT", "")  # recorded, so the one grade sets is undone
    monkeypatch.delenv("COURSE_ROOT")
    monkeypatch.chdir(tmp_path)
    seen = []
    monkeypatch.setattr(autograde, "grade", lambda root, *a, **k: seen.append(root) or [])
    monkeypatch.setattr(autograde, "print_table", lambda statuses: None)
    cli.main(["grade", "01_backprop"])
    assert seen == [tmp_path.resolve()]


@pytest.mark.parametrize("instructor", [False, True])
def test_neither_lab_asks_about_jupyters_news(tmp_path, monkeypatch, instructor):
    """Issue 33's third walk: the instructor's lab asked "Would you like to get notified
    about official Jupyter news?". The settings JupyterLab computes from `course lab`'s
    environment turn the news and the update check off, and nothing is written to ~/.jupyter."""
    import json
    import sys

    from course import workspace

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("JUPYTER_CONFIG_DIR", raising=False)
    monkeypatch.delenv("JUPYTER_CONFIG_PATH", raising=False)
    root = Path(cli.__file__).resolve().parent.parent
    _, env = workspace.lab_command(root, instructor=instructor, extra=[])
    script = (
        "import json, sys\n"
        "from jupyterlab_server.settings_utils import _get_overrides\n"
        "overrides, error = _get_overrides(sys.argv[1])\n"
        "print(json.dumps(overrides.get('@jupyterlab/apputils-extension:notification')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "no-app-settings")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == {"fetchNews": "false", "checkForUpdates": False}
    assert list(home.iterdir()) == []


# The Assignments tab's own manager (nbgrader's server extension), run as the lab runs it:
# in the course folder, with the environment `course lab` gives its server.
ASSIGNMENTS_TAB = """
import json, os, sys
from nbgrader.exchange import ExchangeFactory
from nbgrader.server_extensions.assignment_list.handlers import AssignmentList

tab = AssignmentList()
tab.root_dir = os.getcwd()
with tab.get_assignment_dir_config():
    pass
config = tab.load_config()
said = {"assignment_dir": ExchangeFactory(config=config).List(config=config).assignment_dir}
if sys.argv[1:] == ["act"]:
    course = "everything-leaks"
    said["fetch_existing"] = tab.fetch_assignment(course, "01_backprop")
    said["fetch_new"] = tab.fetch_assignment(course, "02_linear")
    said["submit"] = tab.submit_assignment(course, "01_backprop")
    said["listed"] = tab.list_assignments(course_id=course)
print(json.dumps(said))
"""


def test_the_learners_assignments_tab_submits_the_work_in_work(tmp_path, monkeypatch):
    """Walk 16 (Chromium): with `make lab`, the Assignments tab fetched a blank copy into the
    course folder (<course>/01_backprop/, beside work/) and Submit sent it, never the work in
    work/01_backprop/. With the learner's lab's settings, Fetch puts a new assignment in
    work/, refuses (and leaves as it is) one that work/ already holds, and Submit sends the
    edited work/ notebook; the instructor's lab keeps nbgrader's default (its root)."""
    import json
    import shutil
    import sys

    from course import workspace

    repo = Path(cli.__file__).resolve().parent.parent
    root = tmp_path / "course"
    exchange = tmp_path / "exchange"
    (root / "work").mkdir(parents=True)
    shutil.copy(repo / "nbgrader_config.py", root)
    outbound = exchange / "everything-leaks" / "outbound"
    for name in ("01_backprop", "02_linear"):
        shutil.copytree(repo / "release" / name, root / "release" / name)
        shutil.copytree(repo / "release" / name, outbound / name)  # released to the class
    (exchange / "everything-leaks" / "inbound").mkdir()
    shutil.copytree(repo / "release" / "01_backprop", root / "work" / "01_backprop")
    edited = root / "work" / "01_backprop" / "backprop.ipynb"
    edited.write_text(edited.read_text().replace("YOUR CODE HERE", "my own work", 1))
    mine = edited.read_bytes()

    def tab(instructor: bool, *act: str) -> dict:
        _, env = workspace.lab_command(root, instructor=instructor, extra=[])
        env.update(NBGRADER_EXCHANGE=str(exchange), JUPYTER_DATA_DIR=str(tmp_path / "data"))
        run = subprocess.run(
            [sys.executable, "-c", ASSIGNMENTS_TAB, *act],
            cwd=root,  # `course lab` runs its server in the course folder
            env=env,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout.splitlines()[-1])

    said = tab(False, "act")
    assert said["assignment_dir"] == str(root / "work")
    assert not said["fetch_existing"]["success"]
    assert "already have a copy" in said["fetch_existing"]["value"]
    assert edited.read_bytes() == mine  # never overwritten
    assert said["fetch_new"] == {"success": True}
    assert (root / "work" / "02_linear" / "linear.ipynb").is_file()
    assert said["submit"] == {"success": True}, said["submit"]
    [sent] = (exchange / "everything-leaks" / "inbound").glob("*+01_backprop+*")
    assert (sent / "backprop.ipynb").read_bytes() == mine
    assert not (root / "01_backprop").exists() and not (root / "02_linear").exists()
    listed = {(a["assignment_id"], a["status"]): a for a in said["listed"]["value"]}
    assert listed[("01_backprop", "fetched")]["path"] == "work/01_backprop"
    assert ("01_backprop", "submitted") in listed
    assert workspace.stray_fetches(root) == []
    # The instructor's lab reads the settings as the tab does (its folder, then the Jupyter
    # set-up `course lab --instructor` gives it): nbgrader's default, the lab's root.
    from nbgrader.apps import NbGrader

    _, env = workspace.lab_command(root, instructor=True, extra=[])
    monkeypatch.delenv("JUPYTER_CONFIG_DIR", raising=False)
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", env["JUPYTER_CONFIG_PATH"])
    monkeypatch.setenv("NBGRADER_EXCHANGE", str(exchange))
    monkeypatch.chdir(root)
    app = NbGrader()
    app.load_config_file()
    assert "assignment_dir" not in app.config.Exchange
    assert app.config.Exchange.root == str(exchange)
    (root / "01_backprop").mkdir()  # a copy fetched before the tab used work/
    assert workspace.stray_fetches(root) == ["01_backprop"]


# What the formgrader reads as its log level: each handler's `self.log.level`, the Jupyter
# server's own logger (nbgrader's formgrader/base.py, `api`), with each Jupyter set-up.
FORMGRADER_LOG_LEVEL = """
from jupyter_server.serverapp import ServerApp
app = ServerApp.instance()
app.load_config_file()
print(app.log.level)
"""


@pytest.mark.parametrize("where", ["course lab --instructor", "hub"])
def test_the_formgraders_dialogs_log_no_debug_lines(tmp_path, monkeypatch, where):
    """Walk 53, finding 24: the formgrader's *Generate* dialog was a page of `[DEBUG]
    Checksum for code cell ...` lines. The formgrader logs its commands at the level of the
    server's own logger, which traitlets leaves at DEBUG (only its console handler says
    INFO); each instructor set-up sets that logger to INFO."""
    import logging
    import sys

    from course import workspace

    repo = Path(cli.__file__).resolve().parent.parent
    monkeypatch.delenv("JUPYTER_CONFIG_DIR", raising=False)
    monkeypatch.delenv("JUPYTER_CONFIG_PATH", raising=False)
    if where == "hub":  # hub/jupyterhub_config.py: the instructor's set-up, alone
        env = dict(os.environ, JUPYTER_CONFIG_PATH=str(repo / "hub" / "jupyter" / "instructor"))
    else:
        _, env = workspace.lab_command(repo, instructor=True, extra=[])
    env.update(HOME=str(tmp_path), JUPYTER_CONFIG_DIR=str(tmp_path / "no-user-config"))
    out = subprocess.run(
        [sys.executable, "-c", FORMGRADER_LOG_LEVEL],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(out.split()[-1]) == logging.INFO
