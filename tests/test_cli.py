"""The command line: it passes on only what was said (its defaults are autograde.grade's
own), each command's --help says what it does with an example, a bad input says what to do."""

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
