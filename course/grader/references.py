"""Reference outputs: every hidden check's probe run on the source solutions."""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

from course.grader.model import Check, decode
from course.paths import references_dir


def reference_path(notebook: str) -> Path:
    return references_dir() / f"{notebook}.json"


def load_reference(check: Check) -> dict:
    path = reference_path(check.notebook)
    if not path.exists():
        raise FileNotFoundError(f"no reference values at {path}: run `course references`")
    data = _parsed(path.read_text())
    if check.name not in data:
        raise KeyError(f"{path} has no reference for {check.name!r}: run `course references`")
    return {key: decode(copy.deepcopy(v)) for key, v in data[check.name].items()}


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> dict:
    """A references file's text, parsed once: a class's grading judges every check of a
    notebook against the same file. Keyed by the text itself, so a rewritten file is never
    read stale; the values are decoded afresh per call, so no caller shares an array."""
    return json.loads(text)
