"""The package's layout holds: imports go one way, and assignments declare themselves once.

Layers, from the bottom: what learners import in notebooks; the probes (what a student's
kernel runs: the grade cell's entry, the probe machinery and the checks); the grader's
core (the judge and its references); the nbgrader integration; the class pipeline and the
learner's own grading; authoring; the commands. A module imports only from its own layer
or below, at its top or inside a function, and what importing it really loads obeys the
same order; no module imports, however indirectly, one that imports it back.
"""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course.checks import assignment_modules, assignments, checks_by_name

REPO = Path(__file__).resolve().parent.parent  # this checkout, whatever $COURSE_ROOT says
PACKAGE = REPO / "course"

LAYERS = [
    # 0: learners import these in notebooks (and `paths`, where the course is; `terminal`,
    # how the commands print on one).
    {"course", "course.gradcheck", "course.data", "course.plots", "course.training",
     "course.mlp", "course.deepnet", "course.notebook", "course.paths", "course.carry",
     "course.terminal", "course.landscape", "course.stats", "course.runs"},
    # 1: the probes, all that a grading kernel loads of the course beside layer 0.
    {"course.grading", "course.grader", "course.grader.model", "course.grader.probe",
     "course.checks", "course.checks.*"},
    # 2: the grader's core: the judge, its references, the source solutions' runs.
    {"course.grader.cells", "course.grader.files", "course.grader.sources",
     "course.grader.judge", "course.grader.references", "course.grader.figures"},
    # 3: nbgrader integration.
    {"course.grader.nbgrader_ext", "course.grader.sandbox", "course.grader.kernel_client",
     "course.grader.inputs", "course.grader.nbgrader_internals", "course.grader.cluster",
     "course.grader.exchange", "course.grader.sanitize", "course.grader.logsafe"},
    # 4: the class pipeline, and the learner's own grading in a scratch course.
    {"course.grader.autograde", "course.grader.parallel", "course.grader.recording",
     "course.grader.scratch", "course.selfcheck", "course.workspace"},
    # 5: authoring.
    {"course.authoring", "course.authoring.*"},
    # 6: the commands.
    {"course.cli"},
]  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str) -> int:
    for index, layer in enumerate(LAYERS):
        if name in layer or any(
            pattern.endswith(".*") and name.startswith(pattern[:-1]) for pattern in layer
        ):
            return index
    raise AssertionError(f"{name} is in no layer: add it to LAYERS in {__file__}")


def course_imports(path: Path) -> set[str]:
    """Every module of `course` that a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from course.grader import judge` imports the module course.grader.judge.
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.split(".")[0] == "course" and is_module(name)}


def is_module(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (PACKAGE / relative).with_suffix(".py").exists() or (PACKAGE / relative).is_dir()


# Python files of packages: course/jupyter/ holds Jupyter's config files (run by traitlets,
# never imported), not modules.
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if (p.parent / "__init__.py").is_file())


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_go_down_the_layers(path):
    name = module_name(path)
    upward = sorted(i for i in course_imports(path) if layer_of(i) > layer_of(name))
    assert not upward, f"{name} (layer {layer_of(name)}) imports from above it: {upward}"


# Run in a fresh interpreter: each module imported in a child forked before any of `course`.
LOADS = """
import json, os, sys
found = {}
for name in sys.argv[1:]:
    read, write = os.pipe()
    if os.fork() == 0:
        __import__(name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "course")
        os.write(write, json.dumps(loaded).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        found[name] = json.loads(pipe.read() or "null")
    os.wait()
print(json.dumps(found))
"""


def test_what_importing_a_module_loads_goes_down_the_layers():
    """What `import X` really loads, not only X's own import lines: an import of a module
    that imports upward, or a package that imports its modules, shows here."""
    names = [module_name(p) for p in MODULES]
    proc = subprocess.run(
        [sys.executable, "-c", LOADS, *names], capture_output=True, text=True, check=True
    )
    for name, loaded in json.loads(proc.stdout).items():
        assert loaded is not None, f"importing {name} fails"
        upward = sorted(m for m in loaded if layer_of(m) > layer_of(name))
        assert not upward, f"importing {name} (layer {layer_of(name)}) loads {upward}"


def test_no_module_imports_one_that_imports_it_back():
    """No cycle, through imports at the top, inside functions or for types only."""
    graph = {module_name(p): course_imports(p) - {module_name(p)} for p in MODULES}

    def reached(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for found in graph.get(todo.pop(), set()) - seen:
                seen.add(found)
                todo.append(found)
        return seen

    cyclic = sorted(name for name in graph if name in reached(name))
    assert not cyclic, f"modules on an import cycle: {cyclic}"


def test_the_probe_imports_nothing_the_judge_needs():
    imported = course_imports(PACKAGE / "grader" / "probe.py")
    assert imported <= {"course.grader", "course.grader.model"}, imported


def test_an_upward_import_inside_a_function_is_caught(tmp_path):
    learner = tmp_path / "plots.py"
    learner.write_text("def draw():\n    from course.grader import judge\n")
    imported = course_imports(learner)
    assert "course.grader.judge" in imported
    assert any(layer_of(name) > layer_of("course.plots") for name in imported)


def test_the_package_never_imports_the_tests():
    """The tests import the package, never the other way: no module of course/ imports
    tests/ (an import statement, or importlib.import_module("tests...")), at its top or
    inside a function. `course bench --bands` reads the variants as data
    (course.authoring.variants.of_module)."""
    found = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module"):
                names = [ast.unparse(node.args[0]).strip("'\"f")] if node.args else []
            found += [f"{module_name(path)}: {n}" for n in names if n.split(".")[0] == "tests"]
    assert not found, found


def test_a_checks_module_imports_no_other_assignments():
    """What several assignments share is in course.checks.common: a rule changed for one
    assignment moves no other's grade, and its kernel loads no other's module."""
    for m in assignment_modules():
        others = {o.__name__ for o in assignment_modules()} - {m.__name__}
        imported = course_imports(Path(m.__file__)) & others
        assert not imported, f"{m.__name__} imports {sorted(imported)}: move it to common.py"


def test_the_index_lists_each_modules_checks():
    """course.checks.INDEX is how a grade cell's kernel imports only its own module: it
    must list exactly the checks each module registers."""
    import course.checks
    from course.grader import model

    checks_by_name()
    registered = {}
    for m in assignment_modules():
        module = m.__name__.rsplit(".", 1)[1]
        registered[module] = [
            c.name for c in model.CHECKS.values() if c.notebook == m.ASSIGNMENT.key
        ]
    index = {module: list(names) for module, names in course.checks.INDEX.items()}
    for module, names in registered.items():
        assert index.get(module) == names, (
            f"course/checks/__init__.py: INDEX[{module!r}] should be {tuple(names)}"
        )
    assert set(index) == set(registered), (
        f"INDEX names no module {sorted(set(index) - set(registered))}"
    )


# What a grading kernel holds of `course` after a grade cell: the probe machinery, the
# learner library its probes call, and the checks modules of the checks it probes (its own
# assignment's; an earlier assignment's that it carries: finished_net runs 03's layers).
KERNEL_SIDE = {
    "course",
    "course.grading",
    "course.grader",
    "course.grader.model",
    "course.grader.probe",
    "course.checks",
    "course.checks.common",
    "course.gradcheck",
}
IN_A_GRADING_KERNEL = {
    "softmax_numerics": KERNEL_SIDE | {"course.checks.linear"},
    "batchnorm_forward": KERNEL_SIDE | {"course.checks.normalisation", "course.training"},
    "finished_net": KERNEL_SIDE | {"course.checks.normalisation", "course.checks.multilayer",
                                   "course.training"},
}  # fmt: skip


def test_a_grading_kernel_loads_only_its_own_checks():
    """A real kernel, started as grading starts it, runs grade cells (with the grader's seed
    line): it loads no other assignment's checks, nothing of the judge and no authoring."""
    from nbformat.v4 import new_code_cell, new_notebook

    from course.grader.inputs import seed_line
    from course.grader.kernel_client import PromptNotebookClient

    show = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'course'))"
    for name, expected in IN_A_GRADING_KERNEL.items():
        grade_cell = f'from course.grading import check\n\ncheck("{name}", globals())'
        cell = f"{seed_line(name, 12345)}\n{grade_cell}"
        nb = new_notebook(cells=[new_code_cell(cell), new_code_cell(show)])
        PromptNotebookClient(nb, kernel_name="python3", timeout=600).execute()
        assert "application/vnd.everything-leaks.probe+json" in nb.cells[0].outputs[0]["data"]
        loaded = set(ast.literal_eval(nb.cells[1].outputs[0]["text"]))
        assert loaded == expected, (
            f"{name}: extra {sorted(loaded - expected)}, missing {sorted(expected - loaded)}"
        )


def test_the_readme_table_is_the_declared_assignments():
    readme = (REPO / "README.md").read_text()
    rows = re.findall(r"^\| (\d\d [^|]+?) \| (.+?) \| (.+?) \|$", readme, flags=re.M)
    declared = [(a.title, a.builds, a.leak) for a in assignments().values()]
    assert rows == declared, "README's assignment table differs from the checks' ASSIGNMENT"


def test_every_assignment_has_its_three_files():
    root = REPO
    for assignment in assignments().values():
        name = assignment.notebook
        assert (root / "source" / assignment.id / f"{name}.pct.py").exists()
        assert (PACKAGE / "checks" / f"{name}.py").exists()
        assert (root / "tests" / f"variants_{name}.py").exists()


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout")
def test_what_an_instructors_day_leaves_in_the_course_folder_is_ignored():
    """Walk 53, finding 30: after the README's instructor commands, `grades.csv` (`nbgrader
    export`) and an assignment fetched into the course folder (`01_backprop/`: the
    instructor's lab, `nbgrader fetch_assignment`) were untracked files in `git status`.
    They are ignored at the top only: the course's own folders of the same names, and every
    committed file, are not."""
    leaves = ["grades.csv", "01_backprop/backprop.ipynb", "09_leaks/leaks.ipynb"]
    content = ["source/01_backprop/backprop.ipynb", "release/01_backprop/backprop.ipynb"]
    content += ["references/01_backprop/backprop.json", "autograded/README.md"]

    def ignored(paths: list[str]) -> list[str]:
        run = subprocess.run(
            ["git", "check-ignore", "--no-index", "--stdin"],
            cwd=REPO,
            input="\n".join(paths),
            capture_output=True,
            text=True,
        )
        assert run.returncode in (0, 1), run.stderr  # 1: none of them
        return run.stdout.split()

    assert ignored(leaves) == leaves
    assert ignored(content) == []
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--ignored", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert tracked == ""  # no committed file is ignored


def test_loading_the_config_changes_nothing_in_the_process(monkeypatch):
    """nbgrader_config.py holds settings only (issue 13): nbgrader loads it several times,
    and so do `course grade` and the tests, in processes that must stay as they were."""
    from traitlets.config.loader import PyFileConfigLoader

    for name in ("COURSE_ROOT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config()
    assert dict(os.environ) == before
    assert config.SeedHiddenChecks.course_root == str(REPO)


def test_the_hubs_student_set_up_validates_as_make_lab_does():
    """Round 8: on the hub, Validate said "Success!" on a blank notebook: the hub's student
    set-up did not validate every cell, as the course's nbgrader_config.py does for
    `make lab`. Its Lab settings are the local student set-up's too."""
    import json

    from traitlets.config.loader import PyFileConfigLoader

    root = Path(__file__).resolve().parents[1]
    hub = root / "hub" / "jupyter" / "student"
    config = PyFileConfigLoader("nbgrader_config.py", path=str(hub)).load_config()
    assert config.Validator.validate_all is True
    course = (root / "nbgrader_config.py").read_text()
    assert "c.Validator.validate_all = True" in course
    quiet = ["--IPKernelApp.log_level=ERROR"]  # no warning of TCP under Validate
    assert config.Validator.Execute.extra_arguments == quiet
    assert f"c.Validator.Execute.extra_arguments = {quiet!r}".replace("'", '"') in course
    overrides = "labconfig/default_setting_overrides.json"
    local = root / "course" / "jupyter" / "student"
    assert json.loads((hub / overrides).read_text()) == json.loads((local / overrides).read_text())
    # The instructor's lab settings too (`course lab --instructor`, issue 33's third walk).
    hub, local = hub.parent / "instructor", local.parent / "instructor"
    assert json.loads((hub / overrides).read_text()) == json.loads((local / overrides).read_text())
