"""The solutions pass every check on inputs from any seed, not only the public one.

Each grading run draws secret inputs (course.grader.inputs), and `course grade` refuses to
grade if the source solutions break a check on them. A check whose inputs can land on a
kink, or on a gradient element near zero, therefore fails a whole class's grading for
some secrets: this sweep found five such checks (1 to 10 draws in 200), now fixed in
course.checks.common (clear_of_kinks, rounding_aware_error).

`make test` draws 300 seeds per check: a check that fails on 1 seed in 100 fails on at
least one of them with probability 1 - 0.99**300 = 95% (100 seeds caught it with 63%).
The nine costliest checks (COSTLY_CHECKS, three quarters of the sweep's CPU) draw 150:
78%. A rare failure there costs a grading run one redraw from the secret
(course.grader.inputs), not the class. `make sweep` (SWEEP_SEEDS=1000, before a release;
a set SWEEP_SEEDS is for every check) catches 1 in 100 with 99.996% and 1 in 1000 with
63%. The checks that train, and the one judged by its time, draw fewer (SLOW_CHECKS).
"""

import contextlib
import functools
import io
import os

import numpy as np
import pytest

from course.checks import checks_by_name, common
from course.grader import judge, model, probe
from course.grader.sources import (
    notebook_from_text,
    notebook_key,
    solution_namespace,
    text_sources,
)
from course.paths import course_root

SEEDS = int(os.environ.get("SWEEP_SEEDS", "300"))
SLOW_CHECKS = {
    "mlp_training": 5,
    "normalised_training": 10,
    "convnet_training": 20,
    # Its inputs are normal draws of fixed shapes through a linear map (nothing near a
    # kink or a zero to divide by), judged against itself; only its time can fail, and
    # that is the machine's, not the seed's. 1501 timed pairs a draw: 300 draws took 79 s.
    "conv_fast_speed": 20,
    # Eight whole runs a draw (two of them the edge of 32 draws), each diagnosed by the
    # solution against its true leak (margins: `python -m course.runs`); about 6 s a draw.
    "diagnose": 10,
    # Five runs fixed by the solution (its rate search trains up to 20 x 10 steps a run),
    # each read and trained by the probe: about 3 s a draw.
    "fix": 10,
}  # draws of checks that train, or time
# CPU of 300 seeds on a slow 2-core EPYC (stop 49), the rest 21 s or less each: finished_net
# 200 s (five settings of nudged losses, each a fresh network), lstm_sequence 110, block 100,
# fully_connected_net 75, multihead_backward 73, attention_backward 44, conv_backward_naive
# 41, lstm_step 40, temporal_softmax_loss 37; together 720 of the sweep's 950 s.
COSTLY_CHECKS = {
    "finished_net",
    "lstm_sequence",
    "block",
    "fully_connected_net",
    "multihead_backward",
    "attention_backward",
    "conv_backward_naive",
    "lstm_step",
    "temporal_softmax_loss",
}
COSTLY_SEEDS = SEEDS if "SWEEP_SEEDS" in os.environ else 150  # a set SWEEP_SEEDS is for all
# The large case of the by-hand backward passes (course.checks.common.record_large): its
# inputs are plain normal draws of large arrays, judged by projections to rounding, and it
# costs about as much as all the other cases of its check together: the first few seeds.
LARGE_SEEDS = int(os.environ.get("SWEEP_LARGE_SEEDS", "10"))

CHECKS = sorted(checks_by_name().values(), key=lambda c: c.name)


TEXTS = {notebook_key(text): text for text in text_sources(course_root())}


def draws(name: str) -> int:
    """How many of the SEEDS one check draws."""
    return SLOW_CHECKS.get(name) or (COSTLY_SEEDS if name in COSTLY_CHECKS else SEEDS)


@functools.cache
def namespace(key: str) -> dict:
    """The source solutions' namespace of one notebook, run once per process: each check
    is a test of its own, so xdist's workers share the sweep and run only the notebooks
    their checks need."""
    with contextlib.redirect_stdout(io.StringIO()):
        return solution_namespace(notebook_from_text(TEXTS[key].read_text()), key)


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.name)
def test_the_solutions_pass_on_any_seed(check):
    seeds = np.random.default_rng(2026).integers(0, 2**63, SEEDS)[: draws(check.name)]
    failures = []
    for index, seed in enumerate(seeds):
        common.LARGE_CASES[0] = index < LARGE_SEEDS
        try:
            # As the grader runs the solutions for its references (sources.reference_outputs):
            # trusted, where what only the grader may know is computed (09's true leaks).
            with contextlib.redirect_stdout(io.StringIO()), probe.trusted():
                outputs = probe.probe(check, namespace(check.notebook), int(seed))
        finally:
            common.LARGE_CASES[0] = True
        broken = [  # a stated error contract (Rule.raises) is the solution's right answer
            v.why
            for k, v in outputs.items()
            if isinstance(v, model.Broken) and not judge.rule_for(check, k).raises
        ]
        bad = broken + [r.message for r in judge.judge(check, outputs, outputs) if not r.passed]
        if bad:
            failures.append(f"seed {seed}: {bad[0]}")
    assert not failures, f"{len(failures)} of {len(seeds)} seeds:\n" + "\n".join(failures[:3])
