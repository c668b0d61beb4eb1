"""`course bench --processors`: the solutions' marks on other processors, emulated here.

A grade must not depend on the last bit of a float, which differs from one processor to the
next: NumPy picks SIMD code paths by CPU feature (np.geomspace, exp and log round
differently with and without AVX512), OpenBLAS picks a kernel per processor and sums in
another order with more threads. Each combination below runs the "kernel" (the solutions,
probed as a grade cell probes them) and the "grader" (the references it judges against) in
processes of their own, with NumPy's dispatch (NPY_DISABLE_CPU_FEATURES), OpenBLAS's kernel
(OPENBLAS_CORETYPE) and thread counts set as a processor without those features would set
them. Two ways of judging:

- public: the kernel's outputs against the committed references/ (what `course check`
  does; those were computed on whatever machine ran `course build`);
- secret: against references the grader process computes itself for other seeds (what a
  grading run does), the grader under its own settings.

Every combination must give the solutions full marks (tests/test_processors.py runs two).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from course.checks import checks_by_name
from course.grader import judge, model
from course.grader.inputs import seed_of
from course.paths import course_root

# NumPy 2.4's names (`numpy.show_runtime()`): X86_V4 is the AVX512 baseline (F, CD, BW,
# DQ, VL), X86_V3 the AVX2 one (AVX2, FMA3, BMI, ...). NumPy refuses to disable a feature
# while a later one that implies it stays enabled, hence the whole tail each time.
NO_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"
NO_AVX2 = "X86_V3 " + NO_AVX512

# (name, kernel's environment, grader's environment): a processor with fewer SIMD features
# than this one, or another OpenBLAS kernel, or another thread count, on either side.
COMBINATIONS: list[tuple[str, dict, dict]] = [
    ("this machine", {}, {}),
    ("numpy without AVX512", {"NPY_DISABLE_CPU_FEATURES": NO_AVX512}, {}),
    ("numpy without AVX2", {"NPY_DISABLE_CPU_FEATURES": NO_AVX2}, {}),
    ("grader without AVX512", {}, {"NPY_DISABLE_CPU_FEATURES": NO_AVX512}),
    *(
        (f"OpenBLAS {core}", {"OPENBLAS_CORETYPE": core}, {})
        # NumPy's OpenBLAS runs Prescott on its generic kernel (Katmai) and Zen on Haswell's;
        # the kernel each loads is printed beside it.
        for core in ("Prescott", "Nehalem", "Sandybridge", "Haswell", "Zen", "SkylakeX")
    ),
    ("OpenBLAS SkylakeX, 2 threads", {"OPENBLAS_CORETYPE": "SkylakeX", "THREADS": "2"}, {}),
    (
        "an EPYC: Zen, no AVX512, 2 threads",
        {"OPENBLAS_CORETYPE": "Zen", "NPY_DISABLE_CPU_FEATURES": NO_AVX512, "THREADS": "2"},
        {"THREADS": "1"},
    ),
    ("kernel 2 threads, grader 1", {"THREADS": "2"}, {"THREADS": "1"}),
    ("kernel 1 thread, grader 2", {"THREADS": "1"}, {"THREADS": "2"}),
]


def environment(settings: dict) -> dict:
    """os.environ with `settings` (THREADS: the BLAS and OpenMP thread counts)."""
    env = dict(os.environ)
    for key, value in settings.items():
        if key == "THREADS":
            env.update(OPENBLAS_NUM_THREADS=value, OMP_NUM_THREADS=value, MKL_NUM_THREADS=value)
        else:
            env[key] = value
    return env


def secret_seeds() -> dict[str, int]:
    """Seeds that are not the public ones (a grading run's kind), the same on every run."""
    return {name: seed_of(b"processors", name) for name in checks_by_name()}


def outputs_in(settings: dict, seeds: dict[str, int] | None) -> tuple[dict, str]:
    """({check: encoded outputs of the solutions}, the BLAS kernel loaded), computed in a
    process of its own under `settings`."""
    done = subprocess.run(
        [sys.executable, "-m", "course.authoring.processors", "--outputs"],
        input=json.dumps(seeds),
        env=environment(settings),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the solutions did not run under {settings}:\n{done.stderr[-2000:]}")
    found = json.loads(done.stdout)
    return found["outputs"], found["kernel"]


def _outputs_here() -> None:
    from course.grader.sources import compute_references

    seeds = json.loads(sys.stdin.read())
    by_notebook = compute_references(course_root(), seeds)
    outputs = {name: refs for notebook in by_notebook.values() for name, refs in notebook.items()}
    print(json.dumps({"outputs": outputs, "kernel": blas_kernel()}))


def blas_kernel() -> str:
    """The OpenBLAS kernel (core type) and thread count this process loaded: what
    OPENBLAS_CORETYPE chose, asked of the library NumPy loaded (Linux; "?" elsewhere)."""
    import ctypes

    import numpy as np

    np.ones((2, 2)) @ np.ones((2, 2))  # loads the BLAS library
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return "?"
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for prefix, suffix in (
            ("scipy_openblas_", "64_"),
            ("openblas_", ""),
            ("scipy_openblas_", ""),
        ):
            corename = getattr(lib, f"{prefix}get_corename{suffix}", None)
            threads = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
            if corename is not None and threads is not None:
                corename.restype = ctypes.c_char_p
                return f"{corename().decode()}/{threads()}"
    return "?"


def committed_references() -> dict[str, dict]:
    """{check: encoded outputs} of references/ (public seeds)."""
    found = {}
    for path in sorted((course_root() / "references").glob("*/*.json")):
        found.update(json.loads(path.read_text()))
    return found


def scores(kernel: dict, grader: dict) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """({assignment: (points, out of)}, the reports of checks short of full marks): the
    kernel's outputs judged against the grader's references, as `course check` does."""
    marks: dict[str, tuple[float, float]] = {}
    lost = []
    for name, chk in sorted(checks_by_name().items()):
        outputs = {k: judge.observation(model.decode(v)) for k, v in kernel[name].items()}
        reference = {k: model.decode(v) for k, v in grader[name].items()}
        results = judge.judge(chk, outputs, reference)
        points = judge.score(chk, results)
        assignment = chk.notebook.partition("/")[0]
        got, out_of = marks.get(assignment, (0.0, 0.0))
        marks[assignment] = (got + points, out_of + chk.points)
        if points < chk.points:
            lost.append(judge.report(chk, results, points))
    return marks, lost


def judge_combination(kernel_env: dict, grader_env: dict, secret: bool) -> dict:
    """{"marks": {assignment: (points, out of)}, "lost": reports, "kernel": BLAS kernel}."""
    seeds = secret_seeds() if secret else None
    kernel, loaded = outputs_in(kernel_env, seeds)
    grader = outputs_in(grader_env, seeds)[0] if secret else committed_references()
    marks, lost = scores(kernel, grader)
    return {"marks": marks, "lost": lost, "kernel": loaded}


def main(combinations=None, ways=("public", "secret")) -> int:
    """Print the table of combinations x assignments (each judged each of `ways`); 1 if any
    lost a point."""
    combinations = COMBINATIONS if combinations is None else combinations
    print("the solutions' marks with the kernel and the grader under emulated processors")
    print("(public: against the committed references/, as `course check`; secret: against")
    print("references the grader computes for other seeds, as a grading run)")
    header = None
    failed = False
    for name, kernel_env, grader_env in combinations:
        for how in ways:
            found = judge_combination(kernel_env, grader_env, how == "secret")
            marks = found["marks"]
            if header is None:
                header = sorted(marks)
                print(f"  {'combination':<38}{'judged':<8}{'BLAS kernel':<16}", end="")
                print("".join(f"{a[:2]:>7}" for a in header))
            cells = "".join(
                f"{marks[a][0]:>7g}" if marks[a][0] == marks[a][1] else f"{marks[a][0]:>6g}!"
                for a in header
            )
            print(f"  {name:<38}{how:<8}{found['kernel'][:15]:<16}{cells}", flush=True)
            for report in found["lost"]:
                failed = True
                print("    " + report.replace("\n", "\n    "))
    print("(each column: the assignment's points; ! marks fewer than full marks)")
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--outputs"]:
        _outputs_here()
    else:
        sys.exit(main())
