"""The command line passes on only what was said: its defaults are autograde.grade's own."""

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
    assert cli.main(["export"]) == 0
    assert "up to date" in capsys.readouterr().out
    config = selfcheck.validate_settings(tmp_path / "site-packages")
    assert config.Validator.validate_all is True
    assert config.ExchangeFactory.submit == "course.grader.exchange.PrivateSubmit"
