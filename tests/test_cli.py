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
