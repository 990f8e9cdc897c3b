"""Corpus words on figure axes are drawn as written, never parsed as matplotlib math text."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from workflow_scripts.core.figures import literal_text  # noqa: E402

WORDS = ["$\\frac$", "US$ 5", "$x^2$", "plain"]


def test_a_malformed_formula_in_a_corpus_fails_raw_matplotlib():
    figure, ax = plt.subplots()
    ax.set_xticks(range(1), WORDS[:1])
    with pytest.raises(ValueError):
        figure.canvas.draw()
    plt.close(figure)


def test_literal_text_draws_every_word_as_written(tmp_path):
    figure, ax = plt.subplots()
    ax.set_xticks(range(len(WORDS)), [literal_text(word) for word in WORDS])
    figure.savefig(tmp_path / "words.png")
    drawn = [label.get_text() for label in ax.get_xticklabels()]
    plt.close(figure)
    assert [text.replace("\\$", "$") for text in drawn] == WORDS
    assert literal_text("plain") == "plain"
