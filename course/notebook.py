"""Small helpers that notebooks import instead of pasting."""

import inspect

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
