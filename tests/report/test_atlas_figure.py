"""The atlas figure (workflow_scripts/report/atlas_figure.py) hides no head: read back from the drawn marks.

A 2-layer decoder whose induction head (layer 1, head 0) scores 0.97 beside a neighbour of its layer at 0.02: both
share the layer's relative depth, (1 + 0.5) / 2, and were drawn at one point, the weaker over the stronger.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pandas as pd
import pytest

from workflow_scripts.report.atlas_figure import atlas_figure, draw_atlas, head_positions

matplotlib.use("Agg")

COLUMNS = ["model", "family", "parameters", "series", "revision", "step", "checkpoint", "role", "detail", "layer",
           "num_layers", "relative_depth", "head", "score", "ci_low", "ci_high", "random_score", "rank"]
# (layer, head) -> induction score; the table lists the weak head after the strong one, as a table may.
DECODER = {(0, 0): 0.10, (0, 1): 0.05, (1, 0): 0.97, (1, 1): 0.02}


def _atlas() -> pd.DataFrame:
    rows = []
    for (model, family, shape) in (("tiny-gpt2", "gpt2", DECODER), ("enc", "bert", {(0, 0): 0.3, (0, 1): 0.6})):
        layers = 1 + max(layer for layer, _ in shape)
        ranks = {key: rank for rank, key in enumerate(sorted(shape, key=shape.get, reverse=True), start=1)}
        for role, scale in (("induction", 1.0), ("sink", 0.5)):
            for (layer, head), score in sorted(shape.items(), key=lambda item: -item[1]):
                rows.append({"model": model, "family": family, "parameters": 1000, "series": model, "revision": None,
                             "step": None, "checkpoint": "pretrained", "role": role, "detail": "random_repeated",
                             "layer": layer, "num_layers": layers, "relative_depth": (layer + 0.5) / layers,
                             "head": head, "score": score * scale, "ci_low": None, "ci_high": None,
                             "random_score": None, "rank": ranks[(layer, head)]})
    return pd.DataFrame(rows, columns=COLUMNS)


def _collection(ax, label: str):
    found = [c for c in ax.collections if c.get_label() == label]
    assert len(found) == 1, [c.get_label() for c in ax.collections]
    return found[0]


@pytest.fixture
def figure():
    import matplotlib.pyplot as plt

    drawn = atlas_figure(_atlas(), top=4)
    yield drawn
    plt.close(drawn)


def test_two_heads_of_one_layer_are_both_visible_and_the_stronger_is_ringed(figure):
    ax = next(a for a in figure.axes if a.get_title() == "induction score")
    heads = _collection(ax, "heads")
    points, scores = heads.get_offsets(), np.asarray(heads.get_array())
    decoder = points[:, 1] == 0  # the first model's row
    strong = points[decoder & np.isclose(scores, 0.97)]
    weak = points[decoder & np.isclose(scores, 0.02)]
    assert len(strong) == 1 and len(weak) == 1
    # At different places, each inside layer 1's slice of depth [0.5, 1]: (1 + (head + 0.5) / 2) / 2.
    assert strong[0][0] == pytest.approx(0.625) and weak[0][0] == pytest.approx(0.875)
    # Drawn by score: the 0.97 head is the decoder's last mark, on top of any it touches.
    assert np.isclose(scores[decoder][-1], 0.97) and list(scores[decoder]) == sorted(scores[decoder])
    # The ring marks each model's top head: the 0.97 head for the decoder.
    rings = _collection(ax, "top head").get_offsets()
    assert len(rings) == 2
    assert any(np.allclose(ring, strong[0]) for ring in rings)
    # The colour scale spans the panel's scores, and says so.
    assert heads.norm.vmin == pytest.approx(0.02) and heads.norm.vmax == pytest.approx(0.97)
    assert any(a.get_ylabel() == "induction score: 0.02 to 0.97" for a in figure.axes)


def test_every_head_of_a_model_has_its_own_place_inside_its_layers_slice():
    frame = _atlas()
    x = head_positions(frame)
    decoder = frame[(frame["model"] == "tiny-gpt2") & (frame["role"] == "induction")]
    places = x[decoder.index]
    assert places.nunique() == 4
    assert ((places > decoder["layer"] / 2) & (places < (decoder["layer"] + 1) / 2)).all()


def test_the_file_is_drawn_from_the_table(tmp_path):
    table = tmp_path / "atlas.csv"
    _atlas().to_csv(table, index=False)
    draw_atlas(table, tmp_path / "atlas.png", tmp_path / "atlas.pdf")
    assert (tmp_path / "atlas.png").stat().st_size > 0 and (tmp_path / "atlas.pdf").stat().st_size > 0


def test_a_fine_tuned_checkpoints_heads_stay_out_of_the_pretrained_row_and_num_heads_places_them():
    import matplotlib.pyplot as plt

    frame = _atlas()
    tuned = frame[(frame["model"] == "tiny-gpt2") & (frame["role"] == "induction")].assign(
        checkpoint="cola.seed1.final", score=0.5)
    # The atlas's num_heads: a model with 4 heads a layer whose rows name heads 0 and 1 only.
    frame = pd.concat([frame, tuned], ignore_index=True).assign(num_heads=lambda f: f["model"].map(
        {"tiny-gpt2": 4, "enc": 2}))
    figure = atlas_figure(frame, top=4)
    try:
        ax = next(a for a in figure.axes if a.get_title() == "induction score")
        heads = _collection(ax, "heads")
        decoder = heads.get_offsets()[:, 1] == 0
        scores = np.asarray(heads.get_array())[decoder]
        assert sorted(scores) == [0.02, 0.05, 0.10, 0.97]  # the pretrained heads only
        x = heads.get_offsets()[decoder][np.isclose(scores, 0.97)][0][0]
        assert x == pytest.approx((1 + 0.5 / 4) / 2)
    finally:
        plt.close(figure)


def test_the_colour_bar_says_both_ends_of_a_narrow_span():
    from workflow_scripts.report.atlas_figure import span_text

    assert span_text(0.02, 0.97) == "0.02 to 0.97"
    assert span_text(0.14712, 0.14714) == "0.14712 to 0.14714"  # 3 or 4 digits would say one number twice
    assert span_text(-0.0, -0.0) == "0 to 0" and span_text(1.0, 1.0) == "1 to 1"
