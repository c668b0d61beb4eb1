"""Data sets. Nothing is downloaded.

- `digits`: the UCI optical-recognition handwritten digits (8x8 images, 1,797 of them),
  shipped in `course/datasets/` (source and licence: its README), split into train,
  validation and test sets the same way on every machine.
- `genesis_text`, `char_data`: the Book of Genesis, King James Version (public domain),
  shipped in `course/datasets/` (source and licence: its README), and that text encoded
  as integer character ids for a character-level language model.
- `two_moons`, `spirals`, `blobs`: 2-D toy sets for pictures, generated from a fixed seed
  with NumPy's PCG64 generator, whose stream is the same on every platform.
"""

from pathlib import Path
from typing import NamedTuple

import numpy as np

DIGITS_FILE = Path(__file__).parent / "datasets" / "optdigits.csv.gz"
TEXT_FILE = Path(__file__).parent / "datasets" / "genesis.txt.gz"


class Split(NamedTuple):
    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def load_digits() -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 digits: images (N, 8, 8) float64 in [0, 1], labels (N,) int64 in 0..9.

    The file holds one image a row: 64 pixel counts in 0..16, then the label.
    """
    if not DIGITS_FILE.exists():
        raise FileNotFoundError(f"{DIGITS_FILE} is missing: the course ships it (see its README)")
    table = np.loadtxt(DIGITS_FILE, delimiter=",", dtype=np.int64)
    if table.shape[1] != 65 or table[:, :64].max() > 16 or not set(table[:, 64]) <= set(range(10)):
        raise ValueError(f"{DIGITS_FILE} is not the 8x8 digits table it should be")
    return table[:, :64].reshape(-1, 8, 8) / 16.0, table[:, 64]


def digits(val_fraction: float = 1 / 6, test_fraction: float = 1 / 6, seed: int = 0) -> Split:
    """The digits, split per class (each split keeps the class balance), flattened to
    (N, 64) rows in [0, 1]. The default split is 1,199 / 299 / 299 and never changes:
    validation is for choosing hyper-parameters, test is looked at once, at the end.
    """
    images, labels = load_digits()
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[], [], []]
    for digit in range(10):
        members = rng.permutation(np.flatnonzero(labels == digit))
        n_val = round(len(members) * val_fraction)
        n_test = round(len(members) * test_fraction)
        parts[0].append(members[n_val + n_test :])
        parts[1].append(members[:n_val])
        parts[2].append(members[n_val : n_val + n_test])
    X = images.reshape(len(images), -1)
    out = []
    for part in parts:
        index = rng.permutation(np.concatenate(part))  # classes interleaved, not in blocks
        out += [X[index], labels[index]]
    return Split(*out)


def genesis_text() -> str:
    """The Book of Genesis (King James Version), one verse a line, without verse numbers:
    196,818 characters over 60 distinct ones (letters, punctuation, space, newline)."""
    import gzip

    if not TEXT_FILE.exists():
        raise FileNotFoundError(f"{TEXT_FILE} is missing: the course ships it (see its README)")
    text = gzip.decompress(TEXT_FILE.read_bytes()).decode("ascii")
    if not text.startswith("In the beginning God created") or len(text) != 196_818:
        raise ValueError(f"{TEXT_FILE} is not the text of Genesis it should be")
    return text


class CharData(NamedTuple):
    """A text as character ids: `chars[i]` is the character of id i (sorted, so the ids
    are the same on every machine); `train` and `val` are int64 id arrays."""

    chars: str
    train: np.ndarray
    val: np.ndarray

    def encode(self, text: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.chars)}
        unknown = sorted(set(text) - set(index))
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown}")
        return np.array([index[c] for c in text], dtype=np.int64)

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in np.ravel(ids))


def char_data(text: str | None = None, val_fraction: float = 0.1) -> CharData:
    """A text (Genesis by default) as character ids: the first 1 - val_fraction of it for
    training, the rest (the last chapters) for validation."""
    text = genesis_text() if text is None else text
    if not text:
        raise ValueError("char_data: the text is empty")
    if not 0 <= val_fraction < 1:
        raise ValueError(f"char_data: val_fraction {val_fraction} is not in [0, 1)")
    chars = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    ids = np.array([index[c] for c in text], dtype=np.int64)
    cut = len(ids) - int(round(len(ids) * val_fraction))
    return CharData(chars, ids[:cut], ids[cut:])


def two_moons(n: int = 100, noise: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles.

    Returns X (n, 2) float64 and y (n,) in {-1, +1}: the labels a margin (hinge) loss
    expects. The first n // 2 points are the upper moon (y = -1).
    """
    rng = np.random.default_rng(seed)
    n_upper = n // 2
    t_upper = np.linspace(0.0, np.pi, n_upper)
    t_lower = np.linspace(0.0, np.pi, n - n_upper)
    upper = np.stack([np.cos(t_upper), np.sin(t_upper)], axis=1)
    lower = np.stack([1.0 - np.cos(t_lower), 0.5 - np.sin(t_lower)], axis=1)
    X = np.concatenate([upper, lower]) + noise * rng.standard_normal((n, 2))
    # Centre and scale so that tanh units start in their linear range.
    X = (X - np.array([0.5, 0.25])) / np.array([1.0, 0.5])
    y = np.concatenate([-np.ones(n_upper), np.ones(n - n_upper)])
    return X, y


def spirals(
    n_per_class: int = 100, classes: int = 3, noise: float = 0.2, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Interleaved spiral arms, one per class: no line separates them.

    Returns X (n_per_class * classes, 2) float64 within about [-1, 1] and y int64 in
    0..classes-1, class by class.
    """
    rng = np.random.default_rng(seed)
    X, y = [], []
    for k in range(classes):
        r = np.linspace(0.0, 1.0, n_per_class)
        t = np.linspace(k * 4.0, (k + 1) * 4.0, n_per_class) + noise * rng.standard_normal(
            n_per_class
        )
        X.append(np.stack([r * np.sin(t), r * np.cos(t)], axis=1))
        y.append(np.full(n_per_class, k))
    return np.concatenate(X), np.concatenate(y)


def blobs(
    n_per_class: int = 100, classes: int = 3, spread: float = 0.35, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian clusters with centres on a circle of radius 1: a line separates each.

    Returns X (n_per_class * classes, 2) float64 and y int64 in 0..classes-1.
    """
    rng = np.random.default_rng(seed)
    angles = 2 * np.pi * np.arange(classes) / classes
    centres = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    X = np.concatenate([c + spread * rng.standard_normal((n_per_class, 2)) for c in centres])
    return X, np.repeat(np.arange(classes), n_per_class)
