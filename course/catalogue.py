"""The course's assignments: what each builds and which leak it shows."""

from typing import NamedTuple


class Assignment(NamedTuple):
    title: str
    builds: str
    leak: str


CATALOGUE = {
    "01_backprop": Assignment(
        title="01 Backprop by hand",
        builds="a scalar autograd engine and a gradient checker",
        leak="numerics and bookkeeping decide whether a gradient is right",
    ),
}
