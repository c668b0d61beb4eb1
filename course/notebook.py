"""Small helpers that notebooks import instead of pasting."""

import ast
import inspect
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

from IPython.display import Markdown, display

from course.carry import CarriedCodeMissing, assigned_names


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
        if isinstance(error, CheckItFailed | CarriedCodeMissing):  # says what, and why
            what = str(error)
        elif isinstance(error, NotImplementedError):
            what = f"not written yet: {error or kind}"
        elif isinstance(error, AttributeError) and (unrun := exercise_not_run(error)):
            what = unrun
        elif isinstance(error, NameError):
            cause = knock_on(error)
            what = (
                f"{kind}: {error}: {cause}"
                if cause
                else f"{kind}: {error} (did an earlier cell fail?)"
            )
        else:
            what = f"{kind}: {error}" if str(error) else kind
        # A stub's message already names its exercise and function.
        plain = isinstance(error, NotImplementedError | CheckItFailed) or what.startswith(
            EXERCISE_NOT_RUN
        )
        where = "" if plain else _where(error.__traceback__)
        print(f"{exercise}, check it FAILED: {what}{where}", file=sys.stderr)
    else:
        print(f"{exercise}: check it passed.")


# A method that an exercise adds to the learner's class (`@add_to_class(Value)` above
# `def exp`) exists only once its cell has run: before that, a check of it raised
# "AttributeError: 'Value' object has no attribute 'exp' (raised in the check itself)", which
# blames the check (walk 53, finding 5).
EXERCISE_NOT_RUN = "not written yet (or its cell not run): "


def exercise_not_run(error: AttributeError, folder: Path | None = None) -> str:
    """For a missing attribute of a class of the learner's notebook, which a cell of that
    notebook (the one in `folder`, the kernel's working directory) defines, why it is
    missing in words ("not written yet (or its cell not run): Exercise 1.3: write
    Value.exp", the stub's own words when the cell still has them); else ""."""
    owner = getattr(error, "obj", None)
    cls = owner if isinstance(owner, type) else type(owner)
    name = getattr(error, "name", None)
    if owner is None or not name or cls.__module__ != "__main__":  # not a notebook's class
        return ""
    import nbformat  # here: every notebook imports this module, few ever need it

    from course.carry import notebook_of

    notebook = notebook_of(folder or Path.cwd())
    try:
        cells = nbformat.read(notebook, as_version=4).cells if notebook else []
    except Exception:  # noqa: BLE001 (an unreadable notebook: the plain message instead)
        return ""
    for cell in cells:
        method = _method_in(cell.source, cls.__name__, name) if cell.cell_type == "code" else None
        if method is not None:
            stub = _stub_message(method)
            return EXERCISE_NOT_RUN + (stub or f"run the cell that defines {cls.__name__}.{name}")
    return ""


def _method_in(source: str, class_name: str, name: str) -> ast.FunctionDef | None:
    """The def of `class_name.name` in a cell: inside `class class_name`, or a top-level def
    under `@add_to_class(class_name)`; None if the cell defines no such method."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    for node in body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            found = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name]
            if found:
                return found[0]
        if isinstance(node, ast.FunctionDef) and node.name == name:
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and getattr(decorator.func, "id", "") == "add_to_class"
                    and [getattr(a, "id", "") for a in decorator.args] == [class_name]
                ):
                    return node
    return None


def _stub_message(method: ast.FunctionDef) -> str:
    """The words of a released stub in the method ("Exercise 1.3: write Value.exp"), or "" once
    the learner has replaced it."""
    for node in ast.walk(method):
        if (
            isinstance(node, ast.Raise)
            and isinstance(node.exc, ast.Call)
            and getattr(node.exc.func, "id", "") == "NotImplementedError"
            and node.exc.args
            and isinstance(node.exc.args[0], ast.Constant)
            and isinstance(node.exc.args[0].value, str)
        ):
            return node.exc.args[0].value
    return ""


def plain(value):
    """A control's value as a person would type it: a slider's 1.4 - 0.1 is 1.3, not
    1.2999999999999998 (which a title or a printed line would show)."""
    return float(f"{value:.12g}") if isinstance(value, float) else value


def explore_plot(function, shown_when=None, **controls):
    """`ipywidgets.interact` for a function that draws a matplotlib figure (and may print).

    The figure is kept as a PNG in an Image widget, a value the kernel holds: every view of
    the widget shows it, a reopened notebook's too, where an `interact`'s plot (drawn in an
    Output widget) stays blank until a slider moves. What the function prints is shown under
    the figure; an error it raises is shown there too, in words, never swallowed.
    controls: as for `interact` (a widget, a list of options, ...), one per argument; a
    float reaches the function rounded to 12 digits (`plain`).
    shown_when: {argument: predicate of every argument's value}: that control is shown only
    while it acts on what is drawn, e.g. {"forget_bias": lambda v: v["cell"] == "lstm"}.
    """
    import html
    import io
    from contextlib import redirect_stdout
    from unittest import mock

    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    text = widgets.HTML()

    def draw(**values):
        before, printed = set(plt.get_fignums()), io.StringIO()
        try:
            with redirect_stdout(printed), mock.patch.object(plt, "show", lambda *a, **k: None):
                function(**{name: plain(value) for name, value in values.items()})
        except Exception as error:  # noqa: BLE001 (shown to the learner, as interact does)
            printed.write(f"{type(error).__name__}: {error}\n")
        figures = [plt.figure(n) for n in plt.get_fignums() if n not in before]
        if figures:
            png = io.BytesIO()
            figures[-1].savefig(png, format="png", bbox_inches="tight")
            image.value = png.getvalue()
            # Shown at its own size, as the inline backend shows a figure (PNG: IHDR's width).
            image.width = str(int.from_bytes(image.value[16:20], "big"))
        # No figure this time (an error before drawing: carried code missing): no picture,
        # neither an empty Image, which a browser shows as a broken-image icon, nor the last
        # one, drawn for other values of the controls.
        image.layout.display = None if figures else "none"
        for figure in figures:
            plt.close(figure)
        words = printed.getvalue()
        text.value = f"<pre>{html.escape(words)}</pre>" if words else ""

    ui = widgets.interactive(draw, **controls)  # draws once, now: the image is there at once
    for control in ui.children[:-1]:  # long argument names are not cut
        if hasattr(control, "style") and hasattr(control.style, "description_width"):
            control.style.description_width = "initial"
    shown_when = shown_when or {}
    unknown = set(shown_when) - {w._kwarg for w in ui.kwargs_widgets}
    if unknown:
        raise ValueError(f"explore_plot: shown_when names no control: {', '.join(unknown)}")

    def show_or_hide(_=None):
        values = {w._kwarg: w.value for w in ui.kwargs_widgets}
        for control in ui.kwargs_widgets:
            if control._kwarg in shown_when:
                control.layout.display = None if shown_when[control._kwarg](values) else "none"

    show_or_hide()
    for control in ui.kwargs_widgets:
        control.observe(show_or_hide, "value")
    box = widgets.VBox([*ui.children[:-1], image, text])  # ui's own Output stays unused
    display(box)
    return box


# ---------------------------------------------------------------- knock-on failures

# What each cell that failed would have set, by name: {name: the cell's first line}. A later
# NameError for one of them follows from that failure; it is not a new bug, and the
# learner is told which cell to fix (issue 53, item 3: a plotting cell said only "name
# 'losses' is not defined" after the training cell above it had failed).
UNSET_BY_FAILURE: dict[str, str] = {}


def first_line(source: str) -> str:
    lines = [line.strip() for line in source.splitlines() if line.strip()]
    code = [line for line in lines if not line.startswith("#")]
    return (code or lines or ["(empty cell)"])[0][:80]


def knock_on(error: NameError) -> str:
    """Why a NameError follows from an earlier failure, in words, or "" if it does not."""
    cell = UNSET_BY_FAILURE.get(getattr(error, "name", None) or "")
    if not cell:
        return ""
    return f"an earlier cell that sets it failed (`{cell}`): fix that cell first, then run this one"


def note_cell(result) -> None:
    """IPython's post_run_cell: remember what a failed cell left unset; forget it once set."""
    source = getattr(result.info, "raw_cell", "") or ""
    names = assigned_names(source)
    if result.error_in_exec is not None or result.error_before_exec is not None:
        UNSET_BY_FAILURE.update(dict.fromkeys(names, first_line(source)))
    else:
        for name in names:
            UNSET_BY_FAILURE.pop(name, None)


def explain_name_error(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for a NameError: the usual traceback, its message saying which
    earlier failed cell it follows from (Validate and `course validate` show it). IPython
    shows nothing itself for an exception with a handler: it is shown here."""
    cause = knock_on(value)
    if cause and value.args and cause not in str(value.args[0]):
        value.args = (f"{value.args[0]}: {cause}", *value.args[1:])
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    return []


def _watch_cells() -> None:
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:  # imported outside a notebook: a test, the build
        return
    if note_cell not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", note_cell)
        shell.set_custom_exc((NameError,), explain_name_error)
    # Run All goes on past an exercise not written yet (course.carry, "Run All goes on").
    from course.carry import _guard_run_all

    _guard_run_all()


_watch_cells()
