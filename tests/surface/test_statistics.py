"""Surface statistics (METHODS 7.1) on hand-built maps whose answers are known by construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.dumps import write_dump, write_token_table
from support.maps import SPECIAL5, TOKENS5, column, shifted
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.surface.figures import (
    plot_entropy,
    plot_positional,
    plot_special_tokens,
)
from workflow_scripts.surface.statistics import (
    STATISTICS,
    SurfaceAccumulator,
    concat_parts,
    example_statistics,
    read_token_roles,
    surface_heads,
    token_roles,
    token_text,
)

LN5 = float(np.log(5))


# --- hand-built maps ---------------------------------------------------------------------------


def known_maps(n: int = 5) -> np.ndarray:
    """(1 layer, 4 heads): previous token, next token, all on token 0, uniform."""
    return np.stack([shifted(n, -1), shifted(n, 1), column(n, 0), np.full((n, n), 1.0 / n, np.float32)])[None]


# --- token roles ---------------------------------------------------------------------------------


def test_token_text_strips_word_markers_only():
    assert token_text("Ġ.") == "." and token_text("▁,") == "," and token_text("##s") == "s"
    assert token_text("Ġ") == "Ġ" and token_text(".") == "." and token_text("...") == "..."


def test_roles_come_from_the_special_flag_not_from_strings():
    roles = token_roles(["[CLS]", "a", "[SEP]", ".", "b", "[SEP]"], np.array([0, 0, 0, 0, 0, 1], bool))
    # "[CLS]" and the first "[SEP]" are ordinary tokens here: only the flag counts.
    assert roles.cls == 5 and not roles.sep.any()
    roles = token_roles(TOKENS5, np.array(SPECIAL5))
    assert roles.cls == 0
    assert roles.sep.tolist() == [False, False, False, False, True]
    assert roles.period.tolist() == [False, False, True, False, False]
    assert roles.comma.tolist() == [False, False, False, True, False]


def test_separators_can_be_restricted_to_the_tokenizers_sep_id():
    special = np.array([1, 0, 1, 1], bool)  # e.g. <s> a </s> <pad-like special>
    roles = token_roles(["<s>", "a", "</s>", "<x>"], special, np.array([0, 9, 2, 5]), sep_token_id=2)
    assert roles.cls == 0 and roles.sep.tolist() == [False, False, True, False]


# --- statistics ----------------------------------------------------------------------------------


def test_statistics_of_known_heads():
    roles = token_roles(TOKENS5, np.array(SPECIAL5))
    sums = example_statistics(known_maps(5), roles)  # sums over the 5 rows
    get = {name: sums[i, 0] / 5 for i, name in enumerate(STATISTICS) if name != "cls_entropy"}
    cls_entropy = sums[STATISTICS.index("cls_entropy"), 0]
    # head 0, previous token: rows 1..4 on their previous token, row 0 on itself.
    assert get["prev"][0] == pytest.approx(4 / 5) and get["self"][0] == pytest.approx(1 / 5)
    assert get["next"][0] == 0 and get["entropy"][0] == pytest.approx(0, abs=1e-6)
    # head 1, next token: rows 0..3 on the next token, the last row on itself.
    assert get["next"][1] == pytest.approx(4 / 5) and get["self"][1] == pytest.approx(1 / 5)
    assert get["sep"][1] == pytest.approx(2 / 5)  # row 3 -> 4 (separator) and row 4 -> itself
    assert get["period"][1] == pytest.approx(1 / 5) and get["comma"][1] == pytest.approx(1 / 5)
    # head 2, everything on the first special token.
    assert get["cls"][2] == pytest.approx(1.0) and cls_entropy[2] == pytest.approx(0, abs=1e-6)
    # head 3, uniform over 5 tokens.
    for name in ("cls", "sep", "period", "comma", "self"):
        assert get[name][3] == pytest.approx(1 / 5, rel=1e-5)
    assert get["prev"][3] == pytest.approx(4 / 25, rel=1e-5) and get["next"][3] == pytest.approx(4 / 25, rel=1e-5)
    assert get["entropy"][3] == pytest.approx(LN5, rel=1e-5) and cls_entropy[3] == pytest.approx(LN5, rel=1e-5)


def _loop_reference(maps: np.ndarray, roles) -> np.ndarray:
    """The same sums with explicit loops over heads and rows (slow, obviously right)."""
    layers, heads, n, _ = maps.shape
    out = np.zeros((len(STATISTICS), layers, heads))
    for layer in range(layers):
        for head in range(heads):
            a = maps[layer, head].astype(np.float64)
            for i in range(n):
                row = a[i]
                out[0, layer, head] += row[i - 1] if i > 0 else 0
                out[1, layer, head] += row[i]
                out[2, layer, head] += row[i + 1] if i < n - 1 else 0
                out[3, layer, head] += row[roles.cls]
                out[4, layer, head] += row[roles.sep].sum()
                out[5, layer, head] += row[roles.period].sum()
                out[6, layer, head] += row[roles.comma].sum()
                nz = row[row > 0]
                out[7, layer, head] -= (nz * np.log(nz)).sum()
            nz = a[roles.cls][a[roles.cls] > 0]
            out[8, layer, head] = -(nz * np.log(nz)).sum()
    return out


def test_vectorised_statistics_equal_a_loop_over_heads():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3, 4, 9, 9)) * 3
    maps = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float16)
    tokens = ["<q>", "a", ".", "b", ",", "c", "</q>", "d", "</q>"]
    roles = token_roles(tokens, np.array([1, 0, 0, 0, 0, 0, 1, 0, 1], bool))
    np.testing.assert_allclose(example_statistics(maps, roles), _loop_reference(maps, roles), rtol=1e-4, atol=1e-5)
    # the float16 lookup path and the float32 path give the same sums, bit for bit
    np.testing.assert_array_equal(example_statistics(maps, roles), example_statistics(maps.astype(np.float32), roles))


def test_averages_pool_all_tokens_of_all_examples(tmp_path):
    # Example 0: 5 tokens, every head on the previous token. Example 1: 3 tokens, every head uniform.
    maps = {0: np.broadcast_to(shifted(5, -1), (2, 3, 5, 5)).copy(),
            1: np.full((2, 3, 3, 3), 1 / 3, np.float32)}
    tokens = {0: TOKENS5, 1: ["<q>", "x", "</q>"]}
    special = {0: SPECIAL5, 1: [True, False, True]}
    manifest = write_dump(tmp_path / "dump", maps)
    token_path = write_token_table(tmp_path / "tokens.parquet", tokens, special)
    frame = surface_heads(manifest, token_path, tmp_path / "part.csv", model="m", checkpoint="pretrained",
                          corpus="wiki", split="segments", resamples=200, seed=1)
    assert len(frame) == 6 and frame[["layer", "head"]].values.tolist()[:4] == [[0, 0], [0, 1], [0, 2], [1, 0]]
    assert (frame["n_tokens"] == 8).all() and (frame["n_examples"] == 2).all()
    # prev: 4 of example 0's rows, plus 2 rows x 1/3 of example 1, over 8 tokens.
    np.testing.assert_allclose(frame["prev"], (4 + 2 / 3) / 8, rtol=1e-3)
    np.testing.assert_allclose(frame["self"], (1 + 1) / 8, rtol=1e-3)
    np.testing.assert_allclose(frame["cls"], (2 + 1) / 8, rtol=1e-3)  # ex 0: rows 0, 1 -> 0; ex 1: 3 x 1/3
    np.testing.assert_allclose(frame["sep"], (0 + 1) / 8, rtol=1e-3)
    np.testing.assert_allclose(frame["period"], 1 / 8, rtol=1e-3)  # ex 0: row 3 -> 2
    np.testing.assert_allclose(frame["entropy"], 3 * np.log(3) / 8, rtol=1e-3)
    np.testing.assert_allclose(frame["cls_entropy"], np.log(3) / 2, rtol=1e-3)  # per example: 0 and ln 3
    np.testing.assert_allclose(frame["uniform_entropy"], (5 * LN5 + 3 * np.log(3)) / 8)
    np.testing.assert_allclose(frame["uniform_cls_entropy"], (LN5 + np.log(3)) / 2)
    assert (frame["prev_low"] <= frame["prev"] + 1e-9).all() and (frame["prev"] <= frame["prev_high"] + 1e-9).all()
    written = pd.read_csv(tmp_path / "part.csv")
    assert list(written.columns[:4]) == ["model", "checkpoint", "layer", "head"]
    for name in (*STATISTICS, "n_tokens"):
        assert name in written.columns


def test_storage_order_does_not_change_the_result():
    roles = {i: token_roles(TOKENS5, np.array(SPECIAL5)) for i in range(4)}
    rng = np.random.default_rng(0)
    maps = {i: rng.dirichlet(np.ones(5), size=(2, 2, 5)).astype(np.float16) for i in range(4)}
    frames = []
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        accumulator = SurfaceAccumulator(2, 2)
        for i in order:
            accumulator.add(i, maps[i], roles[i])
        frames.append(accumulator.frame(resamples=100, seed=0))
    pd.testing.assert_frame_equal(frames[0], frames[1])


def test_a_token_table_out_of_step_with_the_dump_is_named(tmp_path):
    manifest = write_dump(tmp_path / "dump", {0: known_maps(5)}, n_shards=1)
    tokens = write_token_table(tmp_path / "tokens.parquet", {0: ["<q>", "a", "</q>"]}, {0: [True, False, True]})
    with pytest.raises(AtlasError, match="out of step"):
        surface_heads(manifest, tokens, tmp_path / "part.csv", model="m", checkpoint="c", corpus="w", split="s",
                      resamples=1000, seed=0)
    missing = write_token_table(tmp_path / "other.parquet", {5: TOKENS5}, {5: SPECIAL5})
    with pytest.raises(AtlasError, match="example 0"):
        surface_heads(manifest, missing, tmp_path / "part.csv", model="m", checkpoint="c", corpus="w", split="s",
                      resamples=1000, seed=0)


def test_read_token_roles(tmp_path):
    path = write_token_table(tmp_path / "t.parquet", {3: TOKENS5, 8: ["<q>", "x", "</q>"]},
                        {3: SPECIAL5, 8: [True, False, True]}, {3: [0, 5, 6, 7, 2], 8: [0, 5, 2]})
    roles = read_token_roles(path, sep_token_id=2)
    assert sorted(roles) == [3, 8] and roles[8].sep.tolist() == [False, False, True]
    assert roles[3].period[2] and roles[3].comma[3]


def test_parts_are_combined_and_figures_drawn(tmp_path):
    parts = []
    for checkpoint in ("random", "pretrained"):
        manifest = write_dump(tmp_path / checkpoint, {0: known_maps(5), 1: known_maps(5)})
        tokens = write_token_table(tmp_path / "tokens.parquet", {0: TOKENS5, 1: TOKENS5}, {0: SPECIAL5, 1: SPECIAL5})
        part = tmp_path / f"{checkpoint}.csv"
        surface_heads(manifest, tokens, part, model="m", checkpoint=checkpoint, corpus="w", split="s", resamples=50,
                      seed=0)
        parts.append(part)
    table = concat_parts(parts, tmp_path / "surface_heads.csv", ["model", "checkpoint", "layer", "head"])
    assert table["checkpoint"].tolist() == ["pretrained"] * 4 + ["random"] * 4
    for plot, name in ((plot_special_tokens, "special"), (plot_positional, "positional"), (plot_entropy, "entropy")):
        plot(tmp_path / "surface_heads.csv", tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
        assert (tmp_path / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert (tmp_path / f"{name}.pdf").read_bytes()[:4] == b"%PDF"
    with pytest.raises(AtlasError, match="no part tables"):
        concat_parts([], tmp_path / "empty.csv", ["model"])


def test_plogp_lookup_of_float16_maps_equals_the_float32_computation():
    """The float16 fast path gives bit for bit what computing p log p in float32 gives."""
    from workflow_scripts.core.stats import PLOGP_FLOOR
    from workflow_scripts.surface.statistics import PLOGP_FLOAT16

    values = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = np.isfinite(values)
    as32 = values[finite].astype(np.float32)
    with np.errstate(invalid="ignore"):
        direct = as32 * np.log(np.maximum(as32, PLOGP_FLOOR))
    np.testing.assert_array_equal(PLOGP_FLOAT16[finite], direct)
    assert PLOGP_FLOAT16[0] == 0.0  # 0 log 0 = 0
