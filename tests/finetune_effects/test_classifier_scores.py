"""The pattern CNN's scores and their intervals (workflow_scripts/finetune_effects/classifier_scores.py) on predictions
set here: every example's maps resampled together."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.finetune_effects.classifier_scores import f1_scores, macro_f1_accuracy, score_intervals


def test_a_perfect_and_a_half_right_classifier():
    truth = np.array([0, 1, 2, 0, 1, 2])
    groups = np.array(["a", "a", "b", "b", "c", "c"])
    perfect = score_intervals(truth, truth, groups, resamples=200, seed=0)
    assert perfect == {"macro_f1_low": 1.0, "macro_f1_high": 1.0, "accuracy_low": 1.0, "accuracy_high": 1.0}
    # Example a's two maps right, b's and c's wrong: each resample's accuracy is a's share of the maps drawn, from 0
    # (a not drawn: 8 of 27 resamples) to 1 (a drawn three times: 1 of 27, more than the 2.5% the interval leaves out).
    predicted = np.array([0, 1, 0, 1, 2, 0])
    assert f1_scores(truth, predicted)[1] == pytest.approx(1 / 3)
    found = score_intervals(truth, predicted, groups, resamples=2000, seed=0)
    assert found["accuracy_low"] == 0.0 and found["accuracy_high"] == 1.0
    assert found["macro_f1_low"] <= f1_scores(truth, predicted)[0] <= found["macro_f1_high"]
    assert score_intervals(truth, predicted, groups, resamples=2000, seed=0) == found  # seeded


def test_no_interval_from_one_example_or_no_resample():
    truth = np.array([0, 1])
    for groups, resamples in ((np.array(["a", "a"]), 100), (np.array(["a", "b"]), 0)):
        found = score_intervals(truth, truth, groups, resamples=resamples, seed=0)
        assert all(np.isnan(v) for v in found.values())


def test_the_bootstrap_s_scores_are_sklearn_s():
    rng = np.random.default_rng(1)
    for size in range(1, 40):
        truth = rng.integers(0, 3, size=size)  # some classes absent from both sides
        predicted = np.where(rng.random(size) < 0.6, truth, rng.integers(0, 5, size=size))
        macro, accuracy, _ = f1_scores(truth, predicted)
        assert macro_f1_accuracy(truth, predicted) == pytest.approx((macro, accuracy))
