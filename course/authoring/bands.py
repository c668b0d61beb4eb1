"""`course bench --bands`: the bands of the training checks, against measured spreads.

A training check compares a curve (or what a trained network outputs) with the reference's
within a relative band (LOSS_BAND, CONVNET_BAND of course/checks). Training amplifies
rounding, so the band must come from measurement: for each such check and a few secret
seeds, every correct implementation of its notebook (the ALTERNATES of
tests/variants_<module>.py) is probed beside the solutions on the same seed, and its
largest relative deviation from them (course.grader.judge.close_errors, as the rule
judges) is printed with the band and the smallest deviation of the MUTANTS that the check
must catch (each mutant's largest deviation over the banded keys, the smallest over the
mutants and the seeds where no other sub-check of the cell catches it: there the band
alone decides).

Reads the checkout's tests/variants_*.py as data (course.authoring.variants.of_module; the
package never imports the tests): an authoring tool, not a grading one.
"""

from __future__ import annotations

import importlib
import math
import time
from dataclasses import dataclass, field

import numpy as np

from course.grader.inputs import seed_of

# {check: (checks module, name of its band constant, the rules it bands)}. The rules that
# compare a curve or a trained network's outputs: rtol=LOSS_BAND / CONVNET_BAND, and 05's
# test-mode scores after training (its own constant, SCORES_BAND).
BANDED = {
    "mlp_training": ("backprop", "LOSS_BAND", ("loss",)),
    "two_layer_training": ("multilayer", "LOSS_BAND", ("loss",)),
    "normalised_training": ("normalisation", "LOSS_BAND", ("loss",)),
    "normalised_training:scores": ("normalisation", "SCORES_BAND", ("scores",)),
    "convnet_training": ("convolution", "CONVNET_BAND", ("curve",)),
    "char_training": ("recurrent", "LOSS_BAND", ("loss",)),
    "transformer_training": ("attention", "LOSS_BAND", ("loss",)),
}
SEEDS = 3


@dataclass
class Row:
    check: str
    band: float
    correct: float = 0.0  # the largest deviation of any alternate, any seed
    correct_by: str = ""
    # The smallest deviation (the largest over the banded keys) of a mutant on a seed where
    # no other sub-check catches it: the band must stay below it.
    mutant: float = math.inf
    mutant_by: str = ""
    raw: float = math.inf  # the smallest deviation of any mutant, caught elsewhere or not
    raw_by: str = ""
    alternates: int = 0
    mutants: int = 0
    untouched: list = field(default_factory=list)  # mutants of cells the check never runs
    inside: list = field(default_factory=list)  # mutants inside the band, caught only elsewhere
    seconds: float = 0.0


def deviation(got: dict, want: dict, rules: tuple[str, ...], check) -> float:
    """The largest relative error, as the rule measures it, of any banded key (inf where a
    key is missing, broken, of another shape or not finite)."""
    from course.grader.judge import close_errors
    from course.grader.model import Broken, rule_for

    worst = 0.0
    for key, ref in want.items():
        if key.partition(":")[0] not in rules:
            continue
        value = got.get(key)
        if value is None or isinstance(value, Broken) or isinstance(ref, Broken):
            return math.inf
        a, b = np.asarray(value, dtype=np.float64), np.asarray(ref, dtype=np.float64)
        if a.shape != b.shape or not np.all(np.isfinite(a)):
            return math.inf
        errors = close_errors(a, b, rule_for(check, key).noise_floor)
        worst = max(worst, float(np.max(errors)) if errors.size else 0.0)
    return worst


def caught_elsewhere(check, got: dict, want: dict, rules: tuple[str, ...]) -> bool:
    """Whether a sub-check outside the banded rules fails on its own (not merely 'not
    credited while' a banded one fails)."""
    from course.grader.judge import judge

    return any(
        not r.passed and "not credited while" not in r.message
        for r in judge(check, got, want)
        if r.key.partition(":")[0] not in rules
    )


def measure(entry: str, seeds: int = SEEDS) -> Row:
    from course.authoring.variants import (
        answers_of,
        changed_cells,
        of_module,
        source_notebook,
        traced,
    )
    from course.checks import get_check
    from course.grader.probe import probe
    from course.grader.sources import solution_namespace

    name = entry.partition(":")[0]
    module_name, constant, rules = BANDED[entry]
    checks_module = importlib.import_module(f"course.checks.{module_name}")
    check = get_check(name)
    band = float(getattr(checks_module, constant))
    for rule in rules:
        assert check.rules[rule].rtol == band, f"{entry}: rule {rule} is not banded by {constant}"
    variants = of_module(module_name)
    nb = source_notebook(variants.ASSIGNMENT, variants.NOTEBOOK)
    row = Row(entry, band)
    started = time.perf_counter()
    secret = [seed_of(b"bands", name, str(i)) for i in range(seeds)]
    reference = solution_namespace(nb, "solution")
    first, ran = traced(check, nb, reference, secret[0])
    wants = [first] + [probe(check, reference, s) for s in secret[1:]]

    def untouched(variant) -> bool:
        """A variant that only redefines cells this check never runs probes exactly as the
        solutions do (the harness's in_process_affected): not probed."""
        changed = changed_cells(variants, variant)
        return changed is not None and not changed & ran

    for alternate in variants.ALTERNATES:
        if untouched(alternate):
            continue
        namespace = solution_namespace(nb, "variant", answers_of(variants, alternate))
        row.alternates += 1
        for s, want in zip(secret, wants, strict=True):
            d = deviation(probe(check, namespace, s), want, rules, check)
            if d > row.correct:
                row.correct, row.correct_by = d, alternate.name
    for mutant in variants.MUTANTS:
        if name not in mutant.loses or mutant.name in variants.EXPECTED_SURVIVORS:
            continue
        if untouched(mutant):
            row.untouched.append(mutant.name)
            continue
        namespace = solution_namespace(nb, "variant", answers_of(variants, mutant))
        row.mutants += 1
        # The band must stay below the mutant's deviation on every seed where no other
        # sub-check of the cell catches it; the raw smallest deviation is printed too.
        limit, least = math.inf, math.inf
        for s, want in zip(secret, wants, strict=True):
            got = probe(check, namespace, s)
            d = deviation(got, want, rules, check)
            least = min(least, d)
            if not caught_elsewhere(check, got, want, rules):
                limit = min(limit, d)
        if limit <= band:
            row.inside.append(mutant.name)
        if limit < row.mutant:
            row.mutant, row.mutant_by = limit, mutant.name
        if least < row.raw:
            row.raw, row.raw_by = least, mutant.name
    row.seconds = time.perf_counter() - started
    return row


def main(only: list[str] | None = None, seeds: int = SEEDS) -> int:
    """Print the table; exit 1 if a correct implementation falls outside a band, or a mutant
    that must fail there falls inside it and no other sub-check catches it."""
    rows = []
    print(
        f"{'check (rule)':<28} {'band':>8} {'correct max':>12} {'mutant min':>12}  "
        f"{'margins':>17}  alternates / mutants ({seeds} secret seeds)"
    )
    for entry in only or BANDED:
        row = measure(entry, seeds)
        rows.append(row)
        rule = ",".join(BANDED[entry][2])
        up = row.band / row.correct if row.correct else math.inf
        down = row.mutant / row.band
        print(
            f"{row.check.partition(':')[0] + ' (' + rule + ')':<28} {row.band:8.0e} "
            f"{row.correct:12.2e} {row.mutant:12.2e}  {up:7.1e}x {down:7.1e}x  "
            f"{row.alternates} / {row.mutants}  ({row.seconds:.0f} s)"
        )
        print(f"    largest correct: {row.correct_by or '(all exact)'}")
        print(f"    closest mutant caught by the band alone: {row.mutant_by or '(none)'}")
        if row.raw < row.mutant:
            print(f"    closer, caught by another sub-check: {row.raw_by} ({row.raw:.2e})")
        for name in row.untouched:
            print(f"    a mutant of a cell the check never runs (not probed): {name}")
        for name in row.inside:
            print(f"    INSIDE THE BAND, caught by nothing else: {name}")
    bad = [r for r in rows if r.correct > r.band or r.inside]
    return 1 if bad else 0
