"""Shared fixtures for every test folder: tiny models built by the tests themselves, and the tiny study built once.

Plain helpers (no fixtures) live in tests/support and are imported from there, never from here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.mirror import write_tiny_study
from support.tiny_models import save_tiny_model
from support.workflow_runs import console, snakemake


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert"), kind="bert")


@pytest.fixture(scope="session")
def tiny_bert_cased(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert-cased"), kind="bert", cased=True)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-roberta"), kind="roberta", layers=3, heads=4)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, tiny_roberta) -> Path:
    """A tiny GPT-2 (random weights) with a byte-level BPE tokenizer (the tiny RoBERTa's: GPT-2's vocabulary
    scheme)."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta)
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
              ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_stanza(tmp_path_factory) -> dict:
    """Tiny stanza models (tokenizer, multi-word token expander, tagger, parser) trained here, offline, on a
    tiny treebank the test writes (tests/support/stanza_models.py; about 15-25 s once per session)."""
    pytest.importorskip("stanza")
    from support.stanza_models import train_tiny_stanza

    return train_tiny_stanza(tmp_path_factory.mktemp("tiny-stanza"))


@pytest.fixture(scope="session")
def tiny_study(tmp_path_factory, tiny_bert) -> Path:
    """The tiny study (tests/support/mirror.py: every stage on the tiny BERT, a tiny mirror, two shards per dump),
    built with the real DAG once per test session: the end-to-end tests of the study as a whole read it, and those
    that damage, rerun or extend it work on a copy of their own (``support.workflow_runs.copy_study``). Never write
    into it."""
    work = write_tiny_study(tmp_path_factory.mktemp("tiny-study"), tiny_bert, num_shards=2, relative_mirror=True)
    result = snakemake(work)
    assert result.returncode == 0, console(result)[-6000:]
    return work
