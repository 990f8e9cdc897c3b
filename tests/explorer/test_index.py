"""The explorer's index page (explorer/index.py): every model linked to its page, described by the models table."""

from __future__ import annotations

import pandas as pd
import pytest

from workflow_scripts.explorer.index import index_page


def test_every_model_is_listed_with_its_page_and_shape(tmp_path):
    models = tmp_path / "models.csv"
    pd.DataFrame([{"name": "bert<b>", "model_type": "bert", "num_layers": 12.0, "num_heads": 12, "hidden_size": 768,
                   "vocab_size": 30522, "source": "hub", "revision": None},
                  {"name": "pythia-160m-step1000", "model_type": "gpt_neox", "num_layers": 12, "num_heads": 12,
                   "hidden_size": 768, "vocab_size": 50304, "source": "hub", "revision": "step1000"}]).to_csv(models)
    out = tmp_path / "explorer" / "_index.html"
    index_page(["bert<b>", "pythia-160m-step1000", "unknown"],
               ["R/explorer/bert<b>.html", "R/explorer/pythia-160m-step1000.html", "R/explorer/unknown.html"],
               models, out)
    text = out.read_text()
    assert "Head explorer: 3 models" in text and "<script" not in text
    assert '<a href="bert&lt;b&gt;.html">bert&lt;b&gt;</a>' in text  # escaped, linked beside the index
    assert "<td>gpt_neox</td><td>12</td><td>12</td><td>768</td><td>50304</td><td>hub</td><td>step1000</td>" in text
    assert '<a href="unknown.html">unknown</a><td></td>' not in text and "<td>unknown</td>" not in text
    with pytest.raises(ValueError, match="2 models but 1 pages"):
        index_page(["a", "b"], ["a.html"], models, out)
