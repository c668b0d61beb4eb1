"""Round 14 (issue 31, trust round 3): numerical backward passes earned the training checks'
points. Round 12's complex-step layers earn nothing on their own checks, but the training
checks (05's normalised_training, 06's convnet_training, 07's char_training, 08's
transformer_training) built a model on them and judged only its loss curve: a few small
steps, well within a cell's time, and 3 points each. A training check is now credited only
if every backward pass it trains through passed its own check's sub-checks that every
gradient requires (Check.trains_through; course.grader.judge.by_hand_failure), judged from
that check's own cell, outside the kernel.

Each attack below is judged in-process on the training check (round 12's tests judge the
same attacks on the layers' own checks); the block's is graded for real (`course grade`),
beside the reference, which keeps its full marks there."""

import pytest

from tests.test_attacks_round12 import ATTACKS_06, ATTACKS_07, BLOCK, FCNET, _judge

CASES = {
    "05": ("05_normalisation", "normalisation", {"fully_connected_net_solution": FCNET},
           ["finished_net", "normalised_training"]),
    "06": ("06_convolution", "convolution", ATTACKS_06,
           ["max_pool_naive", "conv_fast", "spatial_batchnorm", "convnet_training"]),
    "07": ("07_recurrent", "recurrent", ATTACKS_07,
           ["temporal_layers", "temporal_softmax_loss", "char_training"]),
    "08": ("08_attention", "attention", {"block_solution": BLOCK},
           ["block", "transformer_training"]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_training_check_earns_nothing_from_numerical_backward_passes(case):
    """Round 12's tests judge the layers' own checks against the zeros control; here the
    training check, which that control cannot train with either, earns nothing at all."""
    assignment, notebook, attack, checks = CASES[case]
    got = _judge(assignment, notebook, attack, checks[-1:])
    assert got == {checks[-1]: 0.0}, got


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_reference_keeps_its_training_points(case):
    assignment, notebook, _, checks = CASES[case]
    scores = _judge(assignment, notebook, {}, checks[-1:])
    assert scores[checks[-1]] == 3.0, scores


@pytest.mark.slow
def test_numerical_block_graded_for_real_earns_no_training_points(tmp_path):
    from tests.harness import Batch

    batch = Batch(tmp_path / "course", "08_attention", "attention")
    batch.submit("honest", batch.answered(trim=True))
    batch.submit("cstep", batch.answered({"block_solution": BLOCK}, trim=True))
    done = batch.course_grade()
    assert done.returncode in (0, 1), done.stdout + done.stderr
    scores = batch.scores()
    assert scores["honest"] == batch.max_scores(), scores["honest"]
    assert scores["cstep"]["transformer_training"] == 0.0, scores["cstep"]
    assert scores["cstep"]["block"] < 4.0, scores["cstep"]
    # Every other check of the numerical submission is as the honest one's.
    for check in set(scores["honest"]) - {"block", "transformer_training"}:
        assert scores["cstep"][check] == scores["honest"][check], check
