"""Everything Leaks: the course's importable toolkit.

- `course.gradcheck`: relative error, numerical gradients, per-variable comparison tables.
- `course.data`: the data sets, shipped or generated deterministically, never downloaded.
- `course.plots`: the course's figures (loss curves, decision boundaries, error against h).
- `course.mlp`: a tiny multilayer perceptron built on any scalar `Value` class.
- `course.grading`: how hidden checks probe a student's functions and judge the results.
- `course.build`: text sources -> source notebooks -> release/ and reference values.
- `course.cli`: the `course` command.
"""

__version__ = "0.1.0"

import sys as _sys

# jsonschema imports an optional IRI checker that compiles a grammar at import time (1.3 s
# in every grading process); nbformat's notebook schema has no IRI field to check.
_sys.modules.setdefault("rfc3987_syntax", None)
