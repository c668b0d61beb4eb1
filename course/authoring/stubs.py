"""Released stubs that say which exercise they belong to.

nbgrader's `ClearSolutions` replaces every solution region with one fixed stub,
`raise NotImplementedError()`: a learner who presses Run All on a fresh notebook then meets a
bare `NotImplementedError` with nothing saying which exercise or function it is. `NamedStubs`
writes, for each region, `raise NotImplementedError("Exercise 1.3: write Value.exp")`: the
exercise is the notebook's latest `### Exercise N.M` heading (or `## N · ...` part heading)
before the cell, the function the nearest enclosing `def` (with its `class`).
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions

EXERCISE = re.compile(r"^#{2,3}\s+(Exercise\s+\d+(?:\.\d+)?)\b", re.MULTILINE)
PART = re.compile(r"^##\s+(\d+)\s+·\s*(.*)$", re.MULTILINE)
ATTACHED = re.compile(r"^\s*@add_to_class\((\w+)\)")
DEF = re.compile(r"^(\s*)(?:def|class)\s+(\w+)")


def exercise_of(markdown: str, current: str) -> str:
    """The exercise a markdown cell opens, or `current` when it opens none."""
    label = current
    for line in markdown.splitlines():
        if m := EXERCISE.match(line):
            label = m.group(1)
        elif m := PART.match(line):
            label = f"Part {m.group(1)} ({m.group(2).strip()})"
    return label


def enclosing(lines: list[str], index: int, indent: int) -> str:
    """Dotted name of the defs and classes around lines[index] (indented by `indent`)."""
    names = []
    for j in range(index - 1, -1, -1):
        m = DEF.match(lines[j])
        if m and len(m.group(1)) < indent:
            names.append(m.group(2))
            indent = len(m.group(1))
            # A method written outside its class: `@add_to_class(Value)` above the def.
            if j > 0 and (attached := ATTACHED.match(lines[j - 1])):
                names.append(attached.group(1))
    return ".".join(reversed(names))


def stub_message(exercise: str, where: str) -> str:
    what = f"write {where}" if where else "write this cell's code (see the text above it)"
    return f"{exercise}: {what}" if exercise else what


class NamedStubs(ClearSolutions):
    """ClearSolutions whose code stubs name their exercise and function."""

    def preprocess(self, nb, resources):
        self._exercises, label = {}, ""
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                label = exercise_of(cell.source, label)
            self._exercises[id(cell)] = label
        return super().preprocess(nb, resources)

    def _replace_solution_region(self, cell, language: str) -> bool:
        if cell.cell_type != "code" or language != "python":
            return super()._replace_solution_region(cell, language)
        exercise = getattr(self, "_exercises", {}).get(id(cell), "")
        stub = self.code_stub[language]
        lines = cell.source.split("\n")
        out, in_solution, replaced = [], False, False
        for i, line in enumerate(lines):
            if self.begin_solution_delimeter in line:
                if in_solution:
                    raise RuntimeError("encountered nested begin solution statements")
                in_solution = replaced = True
                indent = re.match(r"\s*", line).group(0)
                message = stub_message(exercise, enclosing(lines, i, len(indent)))
                text = stub.replace(
                    "raise NotImplementedError()", f"raise NotImplementedError({message!r})"
                )
                out += [indent + piece for piece in text.split("\n")]
            elif self.end_solution_delimeter in line:
                in_solution = False
            elif not in_solution:
                out.append(line)
        if in_solution:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(out)
        return replaced
