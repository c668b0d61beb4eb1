"""The shipped digits and the generated toy sets are what the notebooks say they are."""

import hashlib

import numpy as np

from course import data


def test_the_digits_file_is_the_documented_one():
    digest = hashlib.sha256(data.DIGITS_FILE.read_bytes()).hexdigest()
    assert digest == "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
    images, labels = data.load_digits()
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert images.min() == 0.0 and images.max() == 1.0
    assert np.all(np.bincount(labels) >= 170)


def test_the_split_is_fixed_complete_and_balanced():
    split = data.digits()
    assert [len(a) for a in split] == [1199, 1199, 299, 299, 299, 299]
    # Every image lands in exactly one part: the parts' pixel sums add up to the whole's.
    total = sum(float(X.sum()) for X in (split.X_train, split.X_val, split.X_test))
    assert abs(total - float(data.load_digits()[0].sum())) < 1e-6
    for y in (split.y_val, split.y_test):
        assert np.bincount(y, minlength=10).min() >= 29
    again = data.digits()
    assert all(np.array_equal(a, b) for a, b in zip(split, again, strict=True))
    assert split.y_train[:10].tolist() == [4, 6, 2, 5, 7, 0, 7, 0, 1, 4]  # same on every machine


def test_toy_sets_have_the_documented_shapes_and_labels():
    X, y = data.spirals(50, classes=3)
    assert X.shape == (150, 2) and set(y.tolist()) == {0, 1, 2}
    assert np.abs(X).max() < 1.5
    X, y = data.blobs(40, classes=4)
    assert X.shape == (160, 2) and np.bincount(y).tolist() == [40] * 4
    X, y = data.two_moons(30)
    assert X.shape == (30, 2) and set(y.tolist()) == {-1.0, 1.0}


def test_the_text_is_the_documented_one_and_round_trips():
    # The plain text's digest, as course/datasets/README.md states it.
    text = data.genesis_text()
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()
    assert digest == "e7b72bfd25d395f55a3bd0c1ada5cbf3fd627f61734d239503d834ac9b5e23b6"
    chars = data.char_data()
    assert len(chars.chars) == 60 and len(chars.train) + len(chars.val) == len(text)
    assert chars.decode(chars.train[:16]) == "In the beginning"
    assert np.array_equal(chars.encode("God"), chars.train[17:20])


def test_char_data_refuses_bad_input():
    import pytest

    with pytest.raises(ValueError, match="empty"):
        data.char_data("")
    with pytest.raises(ValueError, match="val_fraction"):
        data.char_data("abc", val_fraction=1.0)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        data.char_data("abc").encode("abd")
