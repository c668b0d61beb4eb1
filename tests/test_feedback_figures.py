"""Pictures in feedback, for what failed: a curve over its reference band, heat maps of
where an array is wrong."""

import nbformat
import numpy as np
import pytest

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


def test_a_judged_training_cell_embeds_the_curve_that_left_its_band():
    chk = model.get_check("mlp_training")
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
    assert 0 < float(cell["outputs"][2]["data"]["text/plain"]) < 2  # the accuracy still counts


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


def test_the_curve_picture_draws_the_band_the_judge_applies():
    from course.grader.figures import passing_band
    from course.grader.judge import judge_one

    want = np.array([2.3, 1.1, -0.4, 0.07])
    rule = Rule("loss curve", rtol=0.05)
    low, high = passing_band(want, rule.rtol)
    inside = 1 - 1e-9
    for edge in (low + (want - low) * (1 - inside), high - (high - want) * (1 - inside)):
        assert judge_one("c:", edge, want, rule).passed
    for outside in (low - 1e-6 * np.abs(want), high + 1e-6 * np.abs(want)):
        for i in range(len(want)):
            got = want.copy()
            got[i] = outside[i]
            assert not judge_one("c:", got, want, rule).passed
