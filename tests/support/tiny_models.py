"""Tiny randomly initialised encoders written by the tests themselves, and checkpoint manifests for them."""

from __future__ import annotations

from pathlib import Path

WORDS = ["the", "a", "an", "cat", "dog", "dogs", "sat", "on", "mat", "is", "was", "not", "do", "does", "did", "n't",
         "can", "ca", "wo", "won", "will", "it", "its", "'s", "he", "she", "they", "i", "we", "you", "runs", "ran",
         "quickly", "big", "small", "red", ",", ".", "!", "?", "'", "-", "café", "naïve", "über", "new", "york",
         "house", "sees", "saw", "walked", "walk", "go", "ing", "ed", "s"]


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


def write_manifest(directory: Path, model_dir: Path, name: str = "pretrained") -> Path:
    """A checkpoint manifest in ``directory`` that loads the tiny model saved in ``model_dir``."""
    import shutil

    from workflow_scripts.models.checkpoints import OWN_KINDS, WEIGHTS, parse_checkpoint_name
    from workflow_scripts.models.checkpoints import write_manifest as write

    if parse_checkpoint_name(name)["kind"] in OWN_KINDS:  # the workflow's own checkpoints hold their weights
        weights = Path(directory) / WEIGHTS
        shutil.rmtree(weights, ignore_errors=True)
        shutil.copytree(model_dir, weights)
        model_dir = weights
    return write(directory, model="tiny", name=name, load_from=str(model_dir))


def placeholder_checkpoint(directory: Path, name: str = "pretrained", **extra) -> Path:
    """A checkpoint manifest whose weights are nowhere: for analyses that read dumps, never the model."""
    from workflow_scripts.models.checkpoints import OWN_KINDS, WEIGHTS, parse_checkpoint_name
    from workflow_scripts.models.checkpoints import write_manifest as write

    own = parse_checkpoint_name(name)["kind"] in OWN_KINDS  # their weights/ folder, empty
    return write(directory, model="tiny", name=name, load_from=Path(directory) / WEIGHTS if own else "nowhere",
                 **extra)
