"""Pictures in feedback, for what failed: a curve over its reference band, heat maps of
where an array is wrong."""

import nbformat
import numpy as np
import pytest

from course.checks import get_check
from course.grader import judge, model, probe, references
from course.grader.figures import pictures
from course.grader.model import Check, Result, Rule
from course.grader.nbgrader_ext import judge_cell

PNG = b"\x89PNG\r\n\x1a\n"


def fake_check(**rules):
    return Check(name="fake", notebook="x/y", points=1, probe=lambda *a: None, rules=rules)


def test_a_curve_is_drawn_over_its_band_when_it_leaves_it():
    chk = fake_check(loss=Rule("training loss", rtol=1e-6, picture="curve"))
    want = np.linspace(1.0, 0.1, 20)
    left = want * 1.05
    results = judge.judge(chk, {"loss:curve": left}, {"loss:curve": want})
    [png] = pictures(chk, {"loss:curve": left}, {"loss:curve": want}, results)
    assert png.startswith(PNG)
    inside = want * (1 + 1e-9)
    results = judge.judge(chk, {"loss:curve": inside}, {"loss:curve": want})
    assert pictures(chk, {"loss:curve": inside}, {"loss:curve": want}, results) == []


@pytest.mark.parametrize(
    ("shape", "drawn"), [((3, 5), True), ((2, 3, 4), True), ((1, 5), False), ((6,), False)]
)
def test_heat_maps_only_for_failed_matrices(shape, drawn):
    chk = fake_check(grad=Rule("gradient of", rtol=1e-7))
    want = np.random.default_rng(0).standard_normal(shape)
    wrong = -want
    results = [Result("grad:W", False, 1.0, "wrong")]
    assert bool(pictures(chk, {"grad:W": wrong}, {"grad:W": want}, results)) == drawn
    passed = [Result("grad:W", True, 1.0)]
    assert pictures(chk, {"grad:W": want}, {"grad:W": want}, passed) == []


def test_no_picture_of_a_stated_error_nor_of_values_that_are_not_numbers():
    """A case whose answer is an error (Rule.raises): a student who returned an array there
    got a grader fault, and their whole notebook was dropped (CI, stop 38)."""
    chk = fake_check(out=Rule("output", rtol=1e-7))
    array = np.ones((3, 4))
    failed = [Result("out:untiled", False, 1.0, "should raise")]
    assert (
        pictures(chk, {"out:untiled": array}, {"out:untiled": model.Broken("ValueError")}, failed)
        == []
    )
    assert pictures(chk, {"out:untiled": model.Broken("x")}, {"out:untiled": array}, failed) == []
    assert pictures(chk, {"out:untiled": array}, {"out:untiled": "not a number"}, failed) == []


def test_a_judged_training_cell_embeds_the_curve_that_left_its_band():
    chk = get_check("mlp_training")
    reference = references.load_reference(chk)
    got = {k: v * 1.01 if k.startswith("loss") else v for k, v in reference.items()}
    payload = {
        "check": "mlp_training",
        "outputs": {k: model.encode(v) for k, v in got.items()},
    }
    cell = {
        "cell_type": "code",
        "execution_count": 3,
        "metadata": {
            "nbgrader": {"grade": True, "solution": False, "grade_id": "mlp_training", "points": 2}
        },
        "outputs": [
            {
                "output_type": "display_data",
                "metadata": {},
                "data": {probe.PROBE_MIME: payload, "text/plain": "..."},
            }
        ],
    }
    cell = nbformat.from_dict(cell)
    judge_cell(cell)
    kinds = [o["output_type"] for o in cell["outputs"]]
    assert kinds == ["stream", "display_data", "execute_result"]
    assert "image/png" in cell["outputs"][1]["data"]
    # The accuracy (a guessable number) is credited only with the curve.
    assert float(cell["outputs"][2]["data"]["text/plain"]) == 0.0


def test_undecodable_results_score_zero_instead_of_crashing_the_grader():
    cell = nbformat.from_dict(
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {
                "nbgrader": {"grade": True, "solution": False, "grade_id": "value_ops", "points": 3}
            },
            "outputs": [
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {
                        probe.PROBE_MIME: {
                            "check": "value_ops",
                            "outputs": {"data:a + b": {"array": ["x"], "shape": [9]}},
                        },
                        "text/plain": "...",
                    },
                }
            ],
        }
    )
    judge_cell(cell)
    assert cell.outputs[-1]["data"]["text/plain"] == "0.0"
    assert "tampered output" in cell.outputs[0]["text"]


def test_a_curve_picture_does_not_show_the_reference_beyond_coarse_levels():
    """Two references that differ (one above the student's curve, one below, by different
    amounts) give the same picture: it shows where and roughly how badly, not the curve."""
    got = np.linspace(1.0, 0.1, 20)
    above, below = got * (1 + 3e-3), got * (1 - 6e-3)
    assert pictures_curve(got, above) == pictures_curve(got, below)


def test_a_heat_map_does_not_show_the_sign_or_size_of_a_wrong_entry():
    got = np.random.default_rng(1).standard_normal((4, 5))
    flipped, tripled = got.copy(), got.copy()
    flipped[1, 2], tripled[1, 2] = -got[1, 2], 3 * got[1, 2]
    assert pictures_heat(got, flipped) == pictures_heat(got, tripled)
    assert pictures_heat(got, flipped) != pictures_heat(got, got * (1 + 1e-3))  # where it is


def pictures_curve(got, want):
    chk = fake_check(loss=Rule("training loss", rtol=1e-6, picture="curve"))
    results = judge.judge(chk, {"loss:": got}, {"loss:": want})
    [png] = pictures(chk, {"loss:": got}, {"loss:": want}, results)
    return png


def pictures_heat(got, want):
    chk = fake_check(grad=Rule("gradient of", rtol=1e-7))
    results = judge.judge(chk, {"grad:W": got}, {"grad:W": want})
    [png] = pictures(chk, {"grad:W": got}, {"grad:W": want}, results)
    return png


@pytest.mark.parametrize("shape", [(2, 3), (2, 40), (7, 4)])
def test_a_heat_map_ticks_whole_rows_and_columns(shape, monkeypatch):
    """Issue 22, item 12: no tick at -0.5 or 0.5 on a grid of rows and columns."""
    from course.grader import figures

    drawn = []
    monkeypatch.setattr(figures, "_png", lambda fig: drawn.append(fig) or b"")
    got = np.ones(shape)
    figures.heatmap_picture("dx", got, got * (1 + 1e-3), rtol=1e-7)
    [fig] = drawn
    ax = fig.axes[0]
    for ticks, size in ((ax.get_xticks(), shape[1]), (ax.get_yticks(), shape[0])):
        shown = [t for t in ticks if -0.5 <= t <= size - 0.5]
        assert shown and all(float(t).is_integer() for t in shown), ticks


def test_a_curve_out_to_the_largest_float_is_drawn_without_those_steps():
    """Round 7: matplotlib cannot lay out an axis out to 1.7e308 (finite): those steps are
    left out of the curve (the right panel shows them far off), and the picture is drawn."""
    want = np.linspace(2.0, 1.0, 12)
    got = want.copy()
    got[3:] = 1.7e308
    got[5] = -1.7e308
    assert pictures_curve(got, want).startswith(PNG)


def test_a_picture_that_cannot_be_drawn_is_left_out_with_a_line_saying_so(monkeypatch):
    """Round 7: a feedback picture never stops the grading (a GraderFault stops the class):
    it is left out, its figure closed, and the report says so."""
    import matplotlib.pyplot as plt

    from course.grader import figures

    def broken(*args):
        plt.figure()
        raise ValueError("arange: cannot compute length")

    monkeypatch.setattr(figures, "curve_picture", broken)
    chk = fake_check(loss=Rule("training loss", rtol=1e-6, picture="curve"))
    want = np.linspace(1.0, 0.1, 20)
    results = judge.judge(chk, {"loss:curve": want * 2}, {"loss:curve": want})
    open_before = plt.get_fignums()
    notes = []
    assert pictures(chk, {"loss:curve": want * 2}, {"loss:curve": want}, results, notes) == []
    assert len(notes) == 1 and "could not be drawn" in notes[0], notes
    assert plt.get_fignums() == open_before
