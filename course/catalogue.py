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
    "02_linear": Assignment(
        title="02 Linear classifiers",
        builds="SVM and softmax losses, with loops and vectorised, trained on real digits",
        leak="floating point: a softmax that overflows or logs a zero stops training",
    ),
    "03_multilayer": Assignment(
        title="03 Multilayer networks",
        builds="modular layers, a two-layer network and its training loop",
        leak="the weight scale and the step size decide whether the network learns",
    ),
    "04_optimisers": Assignment(
        title="04 Initialisation and optimisers",
        builds="weight initialisation, a deep network, momentum, RMSProp, Adam and AdamW",
        leak="at depth the first draw decides whether anything trains; every update rule's "
        "settings steer the descent",
    ),
}
