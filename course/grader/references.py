"""Reference outputs: every hidden check's probe run on the source solutions."""

from __future__ import annotations

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
    data = json.loads(path.read_text())
    if check.name not in data:
        raise KeyError(f"{path} has no reference for {check.name!r}: run `course references`")
    return {key: decode(v) for key, v in data[check.name].items()}
