"""`course demo` (issue 22, item 3): it leaves a graded course to open in the formgrader,
prints paths that exist, and writes nothing outside its folder (not the user's nbgrader
submission cache, where the demo students would appear as the user's own submissions)."""

import subprocess
import sys

import pytest

from course.paths import tool_env


@pytest.mark.slow
@pytest.mark.xdist_group("demo")
def test_demo_leaves_a_graded_course_and_touches_nothing_else(tmp_path):
    home = tmp_path / "home"  # the user's home: nbgrader's default cache lives under it
    home.mkdir()
    demo = tmp_path / "demo"
    env = tool_env(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"))
    env.pop("COURSE_ROOT", None)
    proc = subprocess.run(
        [sys.executable, "-m", "course.cli", "demo", "--into", str(demo)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    course = demo / "course"
    assert (course / "gradebook.db").is_file()
    assert (course / "grades.csv").read_text().count("01_backprop") == 4
    for student in ("ada", "blaise", "carl", "dora"):
        assert (course / "feedback" / student / "01_backprop" / "backprop.html").is_file()
        assert (course / "autograded" / student / "01_backprop" / "backprop.ipynb").is_file()
    assert f"course lab --instructor --course {course}" in proc.stdout
    assert str(course / "grades.csv") in proc.stdout
    # Kernels may leave caches (matplotlib, IPython) in a home; submissions must not.
    assert not list(home.rglob("nbgrader_cache")), "demo submissions in the user's cache"
    assert not [p for p in home.rglob("*") if "01_backprop" in p.name]
    assert (demo / "cache").is_dir()

    # A second run replaces the demo; a folder it did not make is refused, untouched.
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    proc = subprocess.run(
        [sys.executable, "-m", "course.cli", "demo", "--into", str(other)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "is not a demo folder" in proc.stderr
    assert (other / "notes.txt").read_text() == "mine"
