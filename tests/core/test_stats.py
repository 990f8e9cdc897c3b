"""Shared statistics: bootstrap p-values bounded below by 1/B, their printed form, and grouped held-out splits."""

from __future__ import annotations

import numpy as np
import pytest

from workflow_scripts.core.stats import (
    bootstrap_p_value,
    format_p_value,
    grouped_holdout,
    paired_bootstrap_test,
)


@pytest.mark.parametrize("resamples, text", [(1000, "< 0.001"), (200, "< 0.005"), (50, "< 0.02")])
def test_a_huge_difference_has_p_at_the_floor_never_zero(resamples, text):
    # 40 units, every one far better after than before: no resampled difference reaches 0 (k = 0).
    before, after, total = np.zeros(40), np.full(40, 9.0), np.full(40, 10.0)
    difference, low, high, p = paired_bootstrap_test(before, after, total, resamples=resamples, seed=3)
    assert difference == pytest.approx(0.9) and low == pytest.approx(0.9) and high == pytest.approx(0.9)
    assert p > 0 and p == pytest.approx(1 / resamples)
    assert format_p_value(p, resamples) == text
    # The same the other way round (a huge drop).
    difference, _, _, p = paired_bootstrap_test(after, before, total, resamples=resamples, seed=3)
    assert difference == pytest.approx(-0.9) and p == pytest.approx(1 / resamples)


def test_bootstrap_p_value_counts_the_other_side_of_zero():
    samples = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    assert bootstrap_p_value(samples, 2.0) == pytest.approx(2 * 2 / 10)  # -1 and 0: k = 2
    assert bootstrap_p_value(samples, -2.0) == pytest.approx(1.0)  # 9 of 10 above 0, doubled, capped at 1
    assert bootstrap_p_value(samples + 10, 12.0) == pytest.approx(1 / 10)  # k = 0: the floor 1/B
    assert bootstrap_p_value(np.zeros(0), 1.0) != bootstrap_p_value(np.zeros(0), 1.0)  # NaN without resamples


def test_a_paired_test_with_no_difference_is_not_significant():
    rng = np.random.default_rng(0)
    before = rng.integers(0, 10, 30).astype(float)
    _, low, high, p = paired_bootstrap_test(before, before, np.full(30, 10.0), resamples=500, seed=0)
    assert p == 1.0 and low == high == 0.0


def test_p_values_print_as_below_the_floor_or_with_two_digits():
    assert format_p_value(0.001, 1000) == "< 0.001"
    assert format_p_value(0.0, 1000) == "< 0.001"  # an older table's 0 is no exact 0 either
    assert format_p_value(0.002, 1000) == "0.002"  # k = 1: 2/B
    assert format_p_value(0.01234, 1000) == "0.012"
    assert format_p_value(1 / 300, 300) == "< 0.00333"
    assert format_p_value(1.0, 1000) == "1"
    assert format_p_value(float("nan"), 1000) == format_p_value(None, 1000) == format_p_value("", 1000) == "n/a"


def test_grouped_holdout_never_splits_a_group_and_stratifies():
    rng = np.random.default_rng(1)
    # 60 groups (examples) of 1-4 items (maps) with mixed classes 0-3.
    groups = np.repeat(np.arange(60), rng.integers(1, 5, 60))
    classes = rng.integers(0, 4, len(groups))
    test = grouped_holdout(classes, groups, 0.25, seed=0)
    assert not set(groups[test]) & set(groups[~test]), "a group on both sides"
    for k in range(4):
        share = test[classes == k].mean()
        assert 0.15 <= share <= 0.35, (k, share)
    assert np.array_equal(test, grouped_holdout(classes, groups, 0.25, seed=0)), "seeded"
    assert not np.array_equal(test, grouped_holdout(classes, groups, 0.25, seed=1))


def test_grouped_holdout_keeps_a_class_of_one_group_in_training():
    # Class 2 lives in group "c" only: c stays in training, even though it also holds class 0.
    classes = np.array([0, 0, 1, 1, 0, 2, 2, 1, 0])
    groups = np.array(["a", "a", "b", "b", "c", "c", "c", "d", "e"])
    for seed in range(10):
        test = grouped_holdout(classes, groups, 0.5, seed=seed)
        assert not test[groups == "c"].any()
        assert not set(groups[test]) & set(groups[~test])
        for k in (0, 1):  # found in two groups or more: something on each side
            assert test[classes == k].any() and (~test[classes == k]).any()


def test_grouped_holdout_with_one_item_per_group_is_a_stratified_split():
    classes = np.repeat(np.arange(3), 20)
    test = grouped_holdout(classes, np.arange(60), 0.25, seed=0)
    assert [int(test[classes == k].sum()) for k in range(3)] == [5, 5, 5]
    assert not grouped_holdout(classes, np.arange(60), 0.0, seed=0).any()


def test_plogp_and_entropy_take_0_log_0_as_0_and_keep_every_float16_value_its_own_log():
    from workflow_scripts.core.stats import entropy, plogp

    p = np.array([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(entropy(p), [np.log(2), 0.0], rtol=1e-6)
    assert plogp(p).dtype == np.float32 and plogp(np.float32(0.0)) == 0
    smallest = np.float32(np.finfo(np.float16).smallest_subnormal)  # about 6e-8: its own log, not the floor's
    assert plogp(smallest) == smallest * np.log(smallest)
