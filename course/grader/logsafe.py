"""Log records with the control characters of what they quote escaped.

Students choose the names of their submission folders and files, and nbgrader logs those
names to the instructor's terminal: ESC sequences there retitle or clear it, or erase the
very line that reports a cheat (round 6 of the attacks). nbgrader_config.py attaches these
filters to every nbgrader command's console log (`Application.logging_config`).
"""

from __future__ import annotations

import logging
import re

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """text with each control character but tab and newline as a visible escape."""
    return CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class Printable(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if CONTROL.search(message):
            record.msg, record.args = printable(message), ()
        return True
