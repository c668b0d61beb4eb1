"""Small helpers that notebooks import instead of pasting."""

import inspect
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

from IPython.display import Markdown, display


def add_to_class(cls):
    """Decorator: attach the decorated function to `cls` as a method (as in d2l).

    Lets a notebook build one class across several cells, one idea per cell.
    """

    def attach(function):
        setattr(cls, function.__name__, function)
        return function

    return attach


def show_source(obj) -> None:
    """Display the source of a course helper, so a notebook can teach what it imports."""
    display(Markdown(f"```python\n{inspect.getsource(obj)}\n```"))


class CheckItFailed(AssertionError):
    """A "check it" line that does not hold."""


def expect(lines: dict[str, bool]) -> None:
    """Print each line of a "check it" cell as ok or WRONG; raise naming the wrong ones.

    lines: {what is checked: whether it holds}. Use it inside `with check_it(...)`.
    """
    width = max(len(name) for name in lines)
    for name, ok in lines.items():
        print(f"{name:<{width}}  {'ok' if ok else 'WRONG'}")
    wrong = [name for name, ok in lines.items() if not ok]
    if wrong:
        raise CheckItFailed(f"wrong: {', '.join(wrong)}")


def _where(tb) -> str:
    """The innermost frame of the learner's own code (a notebook cell), in words."""
    frames = [
        f
        for f in traceback.extract_tb(tb)
        if not f.filename.startswith(_PACKAGE_DIR) and "site-packages" not in f.filename
    ]
    if not frames:
        return ""
    frame = frames[-1]
    name = "the check itself" if frame.name == "<module>" else f"`{frame.name}`"
    return f" (raised in {name}: `{(frame.line or '').strip()}`)"


_PACKAGE_DIR = str(Path(__file__).resolve().parent)


@contextmanager
def check_it(exercise: str):
    """Run a "check it" cell's body; on any failure, say so on stderr and carry on.

    Nothing is raised, so Run All goes on to the next exercise, which may not depend on
    this one; the message on stderr makes the cell fail nbgrader's Validate (which
    counts stderr as a failure with `Validator.validate_all`), cell by cell.
    """
    try:
        yield
    except Exception as error:  # noqa: BLE001 (every failure is reported, none hidden)
        kind = type(error).__name__
        if isinstance(error, CheckItFailed):
            what = str(error)
        elif isinstance(error, NotImplementedError):
            what = f"not written yet: {error or kind}"
        elif isinstance(error, NameError):
            what = f"{kind}: {error} (did an earlier cell fail?)"
        else:
            what = f"{kind}: {error}" if str(error) else kind
        # A stub's message already names its exercise and function.
        plain = isinstance(error, NotImplementedError | CheckItFailed)
        where = "" if plain else _where(error.__traceback__)
        print(f"{exercise}, check it FAILED: {what}{where}", file=sys.stderr)
    else:
        print(f"{exercise}: check it passed.")
