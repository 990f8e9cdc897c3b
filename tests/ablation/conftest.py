"""Fixtures of the ablation tests: a tiny fine-tuned classifier checkpoint and a tiny dev table of its task."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workflow_scripts.data.entries import task_spec
from workflow_scripts.data.tables import text_task_schema

DEV_SENTENCES = ["The cat sat on the mat.", "Don't walk!", "the big red dog walked quickly on the mat .",
                 "They can't see the house.", "a café", "New York is big , is it not ?", "i sat", "We ran.",
                 "she saw a small dog", "the dogs walk", "he runs quickly", "it is not red"]


@pytest.fixture(scope="session")
def tiny_task() -> dict:
    """The params of an SST-2-like task entry (accuracy; the text_a of a dev table)."""
    return task_spec("sst2", {"glue": "sst2"}).params()


@pytest.fixture(scope="session")
def tiny_classifier(tiny_bert, tmp_path_factory) -> Path:
    """The manifest of a 'fine-tuned' tiny BERT: a random classifier whose bias splits the dev sentences
    half and half, so that the examples near its boundary change class when a head is disabled."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from workflow_scripts.models.checkpoints import write_manifest

    directory = tmp_path_factory.mktemp("tiny-classifier") / "sst2.seed1.final"
    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(tiny_bert, num_labels=2, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    with torch.no_grad():
        logits = model(**tokenizer(DEV_SENTENCES, padding=True, return_tensors="pt")).logits
        model.classifier.bias[1] -= (logits[:, 1] - logits[:, 0]).median()
    weights = directory / "weights"
    model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    return write_manifest(directory, model="tiny", name="sst2.seed1.final", load_from=str(weights.resolve()))


@pytest.fixture
def tiny_dev(tmp_path) -> Path:
    labels = [i % 2 for i in range(len(DEV_SENTENCES))]
    table = pa.Table.from_pydict({"example_id": list(range(len(DEV_SENTENCES))),
                                  "source_id": [str(i) for i in range(len(DEV_SENTENCES))],
                                  "text_a": DEV_SENTENCES, "text_b": [None] * len(DEV_SENTENCES), "label": labels},
                                 schema=text_task_schema(False))
    path = tmp_path / "dev.parquet"
    pq.write_table(table, path)
    return path
