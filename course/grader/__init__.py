"""The grader: hidden checks that probe a student's functions on grader-chosen inputs
and judge the results outside the student's kernel.

A check has two halves, kept apart on purpose:
- `probe(student, rng, outputs)` calls the student's functions on inputs drawn from a
  generator seeded by the check's name, and records what they return (floats, float64
  arrays, or `Broken` with the reason), one key per sub-check. An exception fails only the
  keys it touches.
- `judge(check, outputs, reference)` compares those outputs with the same probe run on
  the source solutions (`references/`, computed by `course references`), key by key,
  under the `Rule` that the key's prefix names.

The halves run in different places. A grade cell calls `check(name, globals())` in the
student's kernel, which only probes and displays the outputs; `verdict` judges them in
the grader's process (course.grader.nbgrader_ext.JudgeHiddenChecks), so student code never sees
a reference value and cannot write its own score. Reports say what went wrong and the
likely mistake, never an expected value.
"""
