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
    return {key: _fresh(v) for key, v in data[check.name].items()}


def _fresh(value):
    """A parsed value decoded for one caller: an array or a Broken is built anew by decode;
    anything else (a list, a number) is copied, so that no caller shares it with the cache.
    (Deep-copying every value before decoding took a sixth of a probe-heavy test's time.)"""
    decoded = decode(value)
    return copy.deepcopy(decoded) if decoded is value else decoded


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> dict:
    """A references file's text, parsed once: a class's grading judges every check of a
    notebook against the same file. Keyed by the text itself, so a rewritten file is never
    read stale; the values are decoded afresh per call, so no caller shares an array."""
    return json.loads(text)
