"""Everything Leaks: the course's importable toolkit.

Learners import these in notebooks (their import paths are frozen: released notebooks and
learners' copies use them):
- `course.gradcheck`: relative error, the error of a gradient against centred differences,
  per-variable comparison tables.
- `course.data`: the data sets, shipped or generated deterministically, never downloaded.
- `course.plots`: the course's figures (loss curves, decision boundaries, error against h).
- `course.training`, `course.mlp`, `course.deepnet`: training loops and small networks
  that run on the learner's own functions.
- `course.landscape`: loss landscapes of the learner's own networks (interpolation,
  filter-normalised slices, the training path's PCA), as numbers and pictures.
- `course.notebook`: small notebook helpers (show a function's source, add a method).
- `course.grading`: what a grade cell imports (`check`), nothing else.
- `course.carry`: the learner's own functions from an earlier assignment (`carry(...)`).

The rest serves instructors and the course itself:
- `course.grader`: the trusted grading machinery (data model, probe, judge, references,
  secret inputs, feedback figures, nbgrader extensions and internals, sandbox,
  `course grade`'s pipeline, scratch courses).
- `course.checks`: the hidden checks, one module per assignment, and their registry.
- `course.authoring`: build, references, the demo and the benchmarks.
- `course.cli`, `course.selfcheck`, `course.workspace`: the `course` command and `make lab`.
"""

__version__ = "0.1.0"

import sys as _sys

# jsonschema imports an optional IRI checker that compiles a grammar at import time (1.3 s
# in every grading process); nbformat's notebook schema has no IRI field to check.
_sys.modules.setdefault("rfc3987_syntax", None)
