"""What a student variant is, for the mutation harness (tests/test_mutants.py).

A mutant is a realistic bug, written as text edits of the reference solution; it must
lose points in the grade cells named by `loses`. An alternate is a different correct
implementation, written out in full; it must keep full marks.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mutant:
    name: str
    cell: str  # grade id of the solution cell it edits
    edits: tuple[tuple[str, str], ...]  # (old, new); each old must occur exactly once
    loses: frozenset[str] = field(default_factory=frozenset)  # grade cells that must lose points
    code: str | None = None  # a whole replacement of the cell, instead of edits
    # Grade cells (of `loses`) where the bug is a wrong value (an output, a gradient, a
    # state): they may keep at most WRONG_VALUE_CAP of their points, not merely lose some
    # (course.grader.model.Rule.cap).
    capped: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Alternate:
    name: str
    answers: dict  # {grade id of a solution cell: full code}


def m(name, cell, loses, *edits):
    return Mutant(name, cell, tuple(edits), frozenset(loses))


def wrong(name, cell, loses, *edits, capped=None):
    """A mutant whose bug is a wrong value: each cell of `capped` (all of `loses` unless
    given) keeps at most WRONG_VALUE_CAP of its points, not just less than all of them."""
    loses = frozenset(loses)
    capped = loses if capped is None else frozenset(capped)
    assert capped <= loses, f"{name}: a capped cell must be one it loses points in"
    return Mutant(name, cell, tuple(edits), loses, capped=capped)


@dataclass(frozen=True)
class Convention:
    """Code in a well-known convention other than the course's (PyTorch's momentum, the
    AdamW paper's decay, Glorot's fans): it must lose points in the grade cells `loses`,
    since the course's convention is the API, and each of those cells' report must name
    it (`names`, case-insensitive) rather than misdiagnose it."""

    name: str
    answers: dict  # {grade id of a solution cell: full code}
    loses: frozenset[str]
    names: str
