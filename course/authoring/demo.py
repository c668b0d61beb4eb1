"""`course demo`: the instructor's whole pipeline, headless, on four bundled demo students.

In a copy of the course in `demo/course/` (replaced on each run, and nothing written outside
`demo/`): generate the assignment (gradebook), release it to the demo course's own exchange;
each student fetches it in `demo/home/<student>/`, answers (the reference solution, nothing,
or one of two classic bugs) and submits, with nbgrader's submission cache in `demo/cache/`
(not the user's own, where the demo students would show up as the user's submissions);
the instructor collects, autogrades, generates feedback and exports grades. Every step is
the real nbgrader command. Then a fifth student shows code carried forward (course.carry):
a bug in his 03 is named in 04's feedback, and fixing 03 fixes 04. What is left is a
graded course to open in the formgrader: `course lab --instructor --course demo/course`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from course.authoring.classroom import fill, mutate, solution_sources
from course.grader import autograde
from course.grader.autograde import nbgrader as run_nbgrader
from course.grader.scratch import ScratchCourse
from course.paths import course_root
from course.terminal import wrapped

ASSIGNMENT, NOTEBOOK = "01_backprop", "backprop"
CARRY_FROM, CARRY_TO = "03_multilayer", "04_optimisers"  # code carried forward (course.carry)


def demo_answers(solutions: dict[str, str]) -> dict[str, dict[str, str] | None]:
    """{student: answers to fill in, or None to submit the release untouched}."""
    overwrite = mutate(
        solutions["value_core"],
        "self.grad += out.grad\n            other.grad += out.grad",
        "self.grad = out.grad\n            other.grad = out.grad",
    )
    forward_difference = mutate(
        mutate(
            solutions["eval_numerical_gradient_solution"],
            "x[ix] = old - h\n        f_minus",
            "x[ix] = old\n        f_minus",
        ),
        "(f_plus - f_minus) / (2 * h)",
        "(f_plus - f_minus) / h",
    )
    return {
        "ada": solutions,  # the reference solution
        "blaise": None,  # submitted the release untouched
        "carl": {**solutions, "value_core": overwrite},  # assigns grads instead of adding
        "dora": {**solutions, "eval_numerical_gradient_solution": forward_difference},
    }


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


MARKER = ".everything-leaks-demo"


def main(into: Path | None = None) -> int:
    demo = Path(into) if into else course_root() / "demo"
    if demo.exists():
        if not (demo / MARKER).exists():
            print(
                f"course demo: {demo} exists and is not a demo folder (it would be replaced): "
                "choose a new or earlier demo folder with --into, e.g. --into /tmp/demo",
                file=sys.stderr,
            )
            return 2
        shutil.rmtree(demo)
    demo.mkdir(parents=True)
    (demo / MARKER).write_text("made by `course demo`; replaced by its next run\n")
    return run(demo)


def run(scratch: Path) -> int:
    start = time.perf_counter()
    course = ScratchCourse(scratch / "course")
    # The course's own exchange (its nbgrader_config.py default), and a submission cache of
    # the demo's own: nbgrader's default cache is the user's, shared with their real lab.
    exchange_args = [
        f"--Exchange.root={course.root / '.nbgrader' / 'exchange'}",
        f"--Exchange.cache={scratch / 'cache'}",
        "--CourseDirectory.course_id=everything-leaks",
    ]

    def nbgrader(*args: str, cwd: Path) -> None:
        run_nbgrader(cwd, *args, *exchange_args, env=course.env)

    step(f"instructor: generate and release {ASSIGNMENT}")
    course.register(ASSIGNMENT)
    nbgrader("release_assignment", ASSIGNMENT, "--force", cwd=course.root)

    solutions = solution_sources(course.source_notebook(ASSIGNMENT, NOTEBOOK))
    for student, answers in demo_answers(solutions).items():
        step(f"student {student}: fetch, answer, submit")
        home = scratch / "home" / student
        home.mkdir(parents=True)
        nbgrader("fetch_assignment", ASSIGNMENT, cwd=home)
        path = home / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        if answers is not None:
            nbformat.write(fill(nbformat.read(path, as_version=4), answers), path)
        nbgrader("submit", ASSIGNMENT, f"--student={student}", cwd=home)

    step("instructor: collect, autograde, feedback, export")
    nbgrader("collect", ASSIGNMENT, cwd=course.root)
    statuses = autograde.grade(course.root, ASSIGNMENT)
    course.nbgrader("generate_feedback", ASSIGNMENT, "--force")
    course.nbgrader("export", "--to", str(course.root / "grades.csv"))
    print(f"feedback: {course.root / 'feedback'}/<student>/{ASSIGNMENT}/{NOTEBOOK}.html")
    print(f"grades:   {course.root / 'grades.csv'}")

    step(f"grades of {ASSIGNMENT} (points per grade cell)")
    print_cell_table(course.root)
    autograde.print_table(statuses)
    step("what the feedback tells carl and dora (first failure of each check)")
    for student in ("carl", "dora"):
        print_failures(course.root / "autograded" / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    carried_forward(course, scratch, nbgrader)
    print(f"\ndemo finished in {time.perf_counter() - start:.0f} s; the graded course is kept in")
    print(f"{course.root}: open it in the formgrader with")
    print(f"  course lab --instructor --course {course.root}")
    return 0


def carried_forward(course: ScratchCourse, scratch: Path, nbgrader) -> None:
    """emil's 03 has a bug in affine_backward; 04 imports his 03 code (course.carry) and its
    feedback names the bug; he fixes 03, exports again, resubmits, and 04 is right."""
    step(f"student emil: {CARRY_FROM} with a bug in affine_backward, then {CARRY_TO}")
    course.register(CARRY_TO)
    for assignment in (CARRY_FROM, CARRY_TO):
        nbgrader("release_assignment", assignment, "--force", cwd=course.root)
    home = scratch / "home" / "emil"
    home.mkdir(parents=True)
    answers = {
        CARRY_FROM: solution_sources(course.source_notebook(CARRY_FROM, "multilayer")),
        CARRY_TO: solution_sources(course.source_notebook(CARRY_TO, "optimisers")),
    }
    correct = answers[CARRY_FROM]["affine_backward_solution"]
    answers[CARRY_FROM]["affine_backward_solution"] = mutate(correct, "dw = x", "dw = 2 * x")
    for assignment, name in ((CARRY_FROM, "multilayer"), (CARRY_TO, "optimisers")):
        nbgrader("fetch_assignment", assignment, cwd=home)
        path = home / assignment / f"{name}.ipynb"
        # 04 trimmed to its graded cells (and the carry cell), to keep the demo short
        answered = fill(nbformat.read(path, as_version=4), answers[assignment], trim=True)
        nbformat.write(answered, path)

    def submit_and_grade(label: str) -> None:
        course_cli("export", "--work", str(home), cwd=home, env=course.env)
        nbgrader("submit", CARRY_TO, "--student=emil", cwd=home)
        nbgrader("collect", CARRY_TO, "--update", cwd=course.root)
        [status] = autograde.grade(course.root, CARRY_TO, log=lambda _: None)
        graded = course.root / "autograded" / "emil" / CARRY_TO / "optimisers.ipynb"
        print(f"{label}: {status.score:g} / {status.max_score:g} points in {CARRY_TO}")
        for cell in nbformat.read(graded, as_version=4).cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "fully_connected_net":
                text = "".join(o.get("text", "") for o in cell.outputs)
                print("\n".join(line for line in text.splitlines()[:3]))

    submit_and_grade("emil, 03 with the bug")
    step("emil fixes affine_backward in 03, exports, resubmits 04")
    path = home / CARRY_FROM / "multilayer.ipynb"
    fixed = fill(nbformat.read(path, as_version=4), {"affine_backward_solution": correct})
    nbformat.write(fixed, path)
    submit_and_grade("emil, 03 fixed")


def course_cli(*args: str, cwd: Path, env: dict) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "course.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"course {args[0]} failed:\n{proc.stderr[-3000:]}")
    print(proc.stdout.strip())


def print_cell_table(root: Path) -> None:
    by_student = autograde.cell_grades(root, ASSIGNMENT, NOTEBOOK)
    cells = [g.grade_id for g in next(iter(by_student.values()), [])]
    print("student  " + "  ".join(f"{c:>{max(len(c), 5)}}" for c in cells) + "  total")
    for student, grades in sorted(by_student.items()):
        row = "  ".join(f"{g.score:>{max(len(g.grade_id), 5)}g}" for g in grades)
        score, full = sum(g.score for g in grades), sum(g.max_score for g in grades)
        print(f"{student:<8} {row}  {score:g}/{full:g}")


def print_failures(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        text = "".join(
            o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout"
        )
        lines = text.splitlines()
        if any(line.lstrip().startswith("FAIL") for line in lines):
            first_fail = next(line for line in lines if line.lstrip().startswith("FAIL"))
            print(f"{path.parents[1].name}: {lines[0]}")
            print("\n".join(wrapped(first_fail, 3)))
