"""What the commands print for a person at a terminal: report lines wrapped to its width,
progress bars that fit it.

A terminal may have no size: a pipe (`course check | cat`), a log, a pseudo-terminal that
nobody sized (COLUMNS and LINES unset, 0 by 0). tqdm reads such a terminal as -1 by -1 and
shows nothing, so `course check` showed an empty line instead of its progress; here it is
88 columns by 24 lines.
"""

from __future__ import annotations

import os
import sys
import textwrap

FALLBACK = os.terminal_size((88, 24))  # without a terminal's own size


def size(stream=None) -> os.terminal_size:
    """The size of the terminal `stream` (default: stdout) writes to: $COLUMNS and $LINES
    if set, else the terminal's, else FALLBACK."""
    try:
        own = os.get_terminal_size((stream or sys.stdout).fileno())
    except (AttributeError, ValueError, OSError):
        own = FALLBACK
    found = []
    for name, mine, fallback in zip(("COLUMNS", "LINES"), own, FALLBACK, strict=True):
        try:
            said = int(os.environ.get(name, ""))
        except ValueError:
            said = 0
        found.append(said if said > 0 else mine or fallback)
    return os.terminal_size(found)


def columns(stream=None) -> int:
    return size(stream).columns


def bar_size(stream) -> dict:
    """tqdm's ncols and nrows for a progress bar on `stream` (one column short, as tqdm's
    own: no terminal's automatic wrap)."""
    columns, lines = size(stream)
    return {"ncols": columns - 1, "nrows": lines}


def wrapped(line: str, indent: int = 0, hang: int | None = None) -> list[str]:
    """A report line ("FAIL ...", "CAUSE ...", "Credit: ...", "note: ...") wrapped to
    stdout's width, `indent` spaces in, its further lines indented under the text after its
    first word (or `hang` spaces in)."""
    line = line.strip()
    label = line.split(" ", 1)[0] + " " if " " in line else ""
    hang = " " * (indent + len(label) if hang is None else hang)
    return textwrap.wrap(
        line,
        width=max(columns() - 1, len(hang) + 20),  # -1: no terminal's own wrap after it
        initial_indent=" " * indent,
        subsequent_indent=hang,
        break_long_words=False,  # a name or a path stays whole, to copy
        break_on_hyphens=False,
    ) or [" " * indent]
