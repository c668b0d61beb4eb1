"""The kernel reports observations, never conclusions; and no graded answer can be
imported from the package (issue 14, items 2 and 3).

Everything here runs in this process (course.authoring.classroom's fast path): a probe
runs as it would in a kernel, its outputs go through JSON, and the grader's verdict is
drawn with the grader's own, unpatched code, as in a real run.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import json
import os
import pkgutil
import sys
import threading
import zlib
from contextlib import contextmanager

import numpy as np
import pytest

import course
from course.authoring.build import notebook_from_text, solution_namespace
from course.authoring.classroom import solution_sources
from course.checks import checks_by_name
from course.grader import model, probe
from course.grader.judge import verdict
from course.paths import course_root
from tests import (
    variants_attention,
    variants_backprop,
    variants_convolution,
    variants_leaks,
    variants_linear,
    variants_multilayer,
    variants_normalisation,
    variants_optimisers,
    variants_recurrent,
)
from tests.test_mutants import answers_of

MODULES = [
    variants_backprop,
    variants_linear,
    variants_multilayer,
    variants_optimisers,
    variants_normalisation,
    variants_convolution,
    variants_recurrent,
    variants_attention,
    variants_leaks,
]
ALL_CHECKS = sorted(checks_by_name())


@functools.cache
def source_notebook(assignment: str, notebook: str):
    return notebook_from_text(
        (course_root() / "source" / assignment / f"{notebook}.pct.py").read_text()
    )


@functools.cache
def blank_answers(assignment: str, notebook: str) -> tuple:
    release = course_root() / "release" / assignment / f"{notebook}.ipynb"
    import nbformat

    return tuple(solution_sources(nbformat.read(release, as_version=4)).items())


def namespace_of(module, answers: dict) -> dict:
    nb = source_notebook(module.ASSIGNMENT, module.NOTEBOOK)
    return solution_namespace(nb, "variant", answers)


def judged(name: str, outputs: dict) -> float:
    """The grader's verdict on outputs, after the JSON trip a kernel's display takes."""
    try:
        payload = {"check": name, "outputs": {k: model.encode(v) for k, v in outputs.items()}}
        sent = json.dumps(payload)
    except (TypeError, ValueError):  # a kernel's grade cell raises: no payload, no points
        return 0.0
    return verdict(name, json.loads(sent))[0]


def checks_of(module) -> list[str]:
    return sorted(
        n for n, c in checks_by_name().items() if c.notebook.startswith(module.ASSIGNMENT)
    )


# ---------------------------------------------------------------- observations only


@pytest.mark.parametrize("name", ALL_CHECKS)
def test_every_rule_that_decides_has_a_grader_side_measure(name):
    for prefix, rule in model.CHECKS[name].rules.items():
        assert rule.kind in {"close", "true", "below"}
        if rule.kind != "close":
            assert callable(rule.measure), f"{name} {prefix}: decided by the kernel"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_the_solutions_send_only_numbers_and_arrays(module):
    """A probe records observations: no boolean, no verdict, nothing but numbers."""
    namespace = namespace_of(module, {})
    for name in checks_of(module):
        for key, value in probe.probe(model.CHECKS[name], namespace).items():
            if model.rule_for(model.CHECKS[name], key).raises:  # an error contract: raised
                assert isinstance(value, model.Broken), f"{name} {key}: did not raise"
                continue
            assert type(value) is float or (
                isinstance(value, np.ndarray) and value.dtype == np.float64
            ), f"{name} {key}: {type(value).__name__}"


@pytest.mark.parametrize("name", ALL_CHECKS)
def test_a_conclusion_sent_in_place_of_an_observation_earns_nothing(name):
    """For a rule that decides with a measure, True, 0.0 or 1.0 sent by the kernel (the
    attack of issue 14: "sends `true` for rules of kind true") never earns its points."""
    chk = model.CHECKS[name]
    reference = json.loads((course_root() / "references" / f"{chk.notebook}.json").read_text())
    keys = list(reference[name])
    for forged in (True, 0.0, 1.0):
        outputs = {key: forged for key in keys}
        assert judged(name, outputs) == 0.0, f"{name}: {forged!r} everywhere earns points"


# Which check modules each assignment's probes run: its own (they import no other's;
# tests/test_layout.py).
PROBE_MODULES = {m.ASSIGNMENT.id: [m.__name__] for m in course.checks.assignment_modules()}


def probe_helpers(assignment: str) -> list[tuple[object, str]]:
    """(module, name) of every function a probe of `assignment` may call in a kernel: its
    check modules, the shared measures, and the probe's own helpers."""
    modules = [importlib.import_module(m) for m in PROBE_MODULES[assignment]]
    modules += [importlib.import_module("course.checks.common"), probe]
    found = []
    for mod in modules:
        for attr, value in vars(mod).items():
            if mod is probe and attr in ("probe", "check"):
                continue  # replacing the whole probe forges the payload: test_adversarial
            if inspect.isfunction(value) and value.__module__ == mod.__name__:
                found.append((mod, attr))
    return found


REPLACEMENTS = {
    "always True": lambda *a, **k: True,
    "the first argument": lambda *a, **k: a[0] if a else True,
}


@contextmanager
def patched(mod, attr, replacement):
    original = getattr(mod, attr)
    setattr(mod, attr, replacement)
    try:
        yield
    finally:
        setattr(mod, attr, original)


def probed(name: str, namespace: dict) -> dict:
    try:
        return probe.probe(model.CHECKS[name], namespace)
    except Exception as exc:  # noqa: BLE001 (a patched probe may fail anywhere: no points)
        return {"_stopped": model.Broken(f"raised {type(exc).__name__}")}


# A helper the honest probe never calls leaves a patched probe's run the same as the honest
# one (probes are seeded), so by default only the helpers it calls are patched: validated
# against patching every helper on all eight assignments, which `make sweep` still does.
EVERY_PATCH = os.environ.get("EVERY_PATCH") == "1"


def probed_noting_calls(name: str, namespace: dict, helpers) -> tuple[dict, list]:
    """The honest probe's outputs, and which of `helpers` its run called (on any thread)."""
    by_code: dict = {}
    for mod, attr in helpers:
        by_code.setdefault(getattr(mod, attr).__code__, []).append((mod, attr))
    ran: set = set()

    def note(frame, event, arg):
        if event == "call" and frame.f_code in by_code:
            ran.add(frame.f_code)

    before, before_threads = sys.getprofile(), threading.getprofile()
    sys.setprofile(note)
    threading.setprofile(note)
    try:
        outputs = probed(name, namespace)
    finally:
        sys.setprofile(before)
        threading.setprofile(before_threads)
    return outputs, [h for h in helpers if getattr(h[0], h[1]).__code__ in ran]


def variants_losing_points(module) -> list[tuple[str, dict]]:
    """The blank release and the first mutants: any point patching adds is forged."""
    chosen = [("blank", dict(blank_answers(module.ASSIGNMENT, module.NOTEBOOK)))]
    chosen += [(v.name, answers_of(module, v)) for v in module.MUTANTS[:1]]
    return chosen


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_patching_any_probe_helper_in_the_kernel_earns_nothing(module):
    """A kernel may replace any helper of the probe (issue 14 patched
    `course.checks.backprop._unless_moved`): the grader judges with its own code, so the
    patched probe's outputs never score more than the honest probe's."""
    helpers = probe_helpers(module.ASSIGNMENT)
    for label, answers in variants_losing_points(module):
        namespace = namespace_of(module, answers)
        for name in checks_of(module):
            outputs, called = probed_noting_calls(name, namespace, helpers)
            honest = judged(name, outputs)
            for mod, attr in helpers if EVERY_PATCH else called:
                for how, replacement in REPLACEMENTS.items():
                    with patched(mod, attr, replacement):
                        outputs = probed(name, namespace)
                    got = judged(name, outputs)  # the grader's code, unpatched
                    assert got <= honest, (
                        f"{label}: patching {mod.__name__}.{attr} ({how}) raises {name} "
                        f"from {honest} to {got}"
                    )


# ---------------------------------------------------------------- nothing to import

# Modules that act on files, processes and the gradebook (commands, the grading pipeline,
# authoring): calling their functions with a probe's arguments would act on this machine,
# and none of them computes anything a check grades.
NOT_CALLED = (
    "course.cli",
    "course.carry",  # reads and writes work/: nbformat.read(2) closed the worker's stderr
    "course.selfcheck",
    "course.workspace",
    "course.authoring",
    "course.grader.parallel",
    "course.grader.autograde",
    "course.grader.recording",
    "course.grader.sandbox",
    "course.grader.kernel_client",
    "course.grader.nbgrader_ext",
    "course.grader.inputs",
    "course.jupyter",
)


def package_callables() -> dict[str, object]:
    """{dotted name: object} of every function and class the package defines (module
    attributes, and the callables inside module-level dicts, lists and tuples)."""
    found = {}
    for info in pkgutil.walk_packages(course.__path__, "course."):
        if info.name.startswith(NOT_CALLED):
            continue
        mod = importlib.import_module(info.name)
        for attr, value in vars(mod).items():
            candidates = {attr: value}
            if isinstance(value, dict):
                candidates = {f"{attr}[{k!r}]": v for k, v in value.items()}
            elif isinstance(value, list | tuple):
                candidates = {f"{attr}[{i}]": v for i, v in enumerate(value)}
            for label, obj in candidates.items():
                for inner, item in enumerate(obj) if isinstance(obj, tuple) else [(None, obj)]:
                    suffix = "" if inner is None else f"[{inner}]"
                    module_name = getattr(item, "__module__", "") or ""
                    if callable(item) and module_name.startswith("course"):
                        found[f"{info.name}.{label}{suffix}"] = item
    return found


def student_names(name: str, namespace: dict) -> list[str]:
    """The names a check reads from the notebook (the graded functions)."""
    read = []

    class Recording(dict):
        def __getitem__(self, key):
            read.append(key)
            return dict.__getitem__(self, key)

    probe.probe(model.CHECKS[name], Recording(namespace))
    return sorted(set(read))


def test_the_probe_modules_are_all_patched():
    assert set(PROBE_MODULES) == {m.ASSIGNMENT for m in MODULES}
    assert {m for ms in PROBE_MODULES.values() for m in ms} == {
        m.__name__ for m in course.checks.assignment_modules()
    }


def test_the_walk_finds_the_helpers_issue_14_imported():
    found = package_callables()
    assert "course.gradcheck.gradient_error" in found
    assert "course.checks.linear.record_loss" in found
    assert "course.deepnet.layer_statistics" in found
    assert not any(k.startswith("course.gradcheck.numerical_gradient") for k in found)
    assert not any("softmax_regression" in k or "ACTIVATIONS" in k for k in found)


def built_once(make):
    """`make(kind, rng, data)`, memoised on kind and the rng's state: a deep copy of what it
    made, with the rng moved on to where making it left it."""
    made = {}

    def cached(kind, rng, data):
        key = (kind, json.dumps(rng.bit_generator.state, sort_keys=True, default=str))
        if key not in made:
            made[key] = (make(kind, rng, data), rng.bit_generator.state)
        run, after = made[key]
        rng.bit_generator.state = after
        return copy.deepcopy(run)

    return cached


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_no_function_of_the_package_passes_a_graded_check(module, monkeypatch):
    """Bound to a graded name in a blank notebook, no function or class of the package
    (course.gradcheck, course.checks.*, course.deepnet, ... as a grading kernel can import
    them) earns a point in any check."""
    # The grader's yardstick runs once a group, not for as long as its argument says (up
    # to 3 s a call): called as every candidate of every check, that was most of this test.
    from course.checks import convolution

    monkeypatch.setattr(convolution, "YARDSTICK_SECONDS", (0.0, 0.0))
    # 09's diagnose builds the same runs before every candidate's call (an edge run trains
    # EDGE_DRAWS runs ten steps each: most of this test's 400 s): built once, then each
    # call gets its own copy, and the rng is left as building it would leave it.
    from course.checks import leaks

    monkeypatch.setattr(leaks, "make_edge_run", built_once(leaks.make_edge_run))
    candidates = package_callables()
    blank = dict(blank_answers(module.ASSIGNMENT, module.NOTEBOOK))
    solutions = namespace_of(module, {})
    base = namespace_of(module, blank)
    earned = []
    for name in checks_of(module):
        for graded in student_names(name, solutions):
            for label, candidate in candidates.items():
                namespace = {**base, graded: candidate}
                points = judged(name, probed(name, namespace))
                if points > 0:
                    earned.append(f"{label} as {graded}: {points} in {name}")
    assert not earned, earned


# ---------------------------------------------------------------- inputs nobody knows


@pytest.mark.slow
@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_the_committed_references_replayed_on_other_inputs_earn_nothing(module):
    """Issue 14, row 5: a cell that displays the committed references/ as each check's
    payload. On a grading run's inputs (other seeds), no sub-check of it is credited:
    every value that does not depend on the inputs (a constant gradient, an API default,
    a training accuracy of 1.0) is credited only with one that does."""
    from course.authoring.build import compute_references

    names = checks_of(module)
    # Each check's seed from its own name: a check added to another assignment leaves
    # them all as they were (by rank in the sorted names, adding 07's moved 05's
    # `predictions` to a seed where a committed prediction fell within its 2% band).
    seeds = {name: 7919 * (1 + zlib.crc32(name.encode()) % 100_003) for name in model.CHECKS}
    fresh = compute_references(course_root(), seeds, module.ASSIGNMENT)
    for refs in fresh.values():
        committed = json.loads(
            (course_root() / "references" / f"{model.CHECKS[names[0]].notebook}.json").read_text()
        )
        for name, ref in refs.items():
            payload = {"check": name, "outputs": committed[name]}
            reference = {k: model.decode(v) for k, v in ref.items()}
            assert verdict(name, payload, "", reference)[0] == 0.0, name
