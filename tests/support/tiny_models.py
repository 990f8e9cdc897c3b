"""Tiny randomly initialised models written by the tests themselves (encoders, the tiny GPT-2, any family from a
config), and checkpoint manifests for them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

WORDS = ["the", "a", "an", "cat", "dog", "dogs", "sat", "on", "mat", "is", "was", "not", "do", "does", "did", "n't",
         "can", "ca", "wo", "won", "will", "it", "its", "'s", "he", "she", "they", "i", "we", "you", "runs", "ran",
         "quickly", "big", "small", "red", ",", ".", "!", "?", "'", "-", "café", "naïve", "über", "new", "york",
         "house", "sees", "saw", "walked", "walk", "go", "ing", "ed", "s"]


def _bert_vocab(path: Path, pieces: Sequence[str] | None = None) -> Path:
    """A BERT vocabulary file: the special tokens, then ``pieces`` (default: the tests' words, their suffixes and
    the alphabet)."""
    if pieces is None:
        pieces = [*sorted(set(WORDS)), *("##" + suffix for suffix in ("s", "ed", "ing", "t", "n", "'", "e", "é")),
                  *"abcdefghijklmnopqrstuvwxyz", *("##" + c for c in "abcdefghijklmnopqrstuvwxyz"),
                  "C", "D", "I", "T", "N", "Y", "é", "ï", "ü", "##ï", "##ü"]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *pieces]
    path.write_text("\n".join(dict.fromkeys(tokens)) + "\n", encoding="utf-8")
    return path


def save_tiny_model(directory: Path, *, kind: str = "bert", cased: bool = False, layers: int = 2,
                    heads: int = 2, seed: int = 0, pieces: Sequence[str] | None = None,
                    strip_accents: bool | None = None, masked_lm: bool = False) -> Path:
    """Write a randomly initialised tiny encoder and its tokenizer to ``directory``: the one builder of the tests'
    BERTs and RoBERTas. A BERT's vocabulary is its special tokens and ``pieces`` (default: the tests' words, see
    ``_bert_vocab``); it strips accents where it lowercases unless ``strip_accents`` says otherwise; ``masked_lm``:
    with its masked-LM head (a pretrained checkpoint to fine-tune)."""
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertModel,
        BertTokenizerFast,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    directory.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if kind == "bert":
        vocab = _bert_vocab(directory / "vocab_source.txt", pieces)
        tokenizer = BertTokenizerFast(vocab=str(vocab), do_lower_case=not cased,
                                      strip_accents=not cased if strip_accents is None else strip_accents)
        config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=layers,
                            num_attention_heads=heads, intermediate_size=64, max_position_embeddings=64)
        model = (BertForMaskedLM if masked_lm else BertModel)(config)
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


# The keys a tiny config of a model type needs beyond its size: its own names for the size, special tokens inside a
# small vocabulary (a caller's keys win: a tokenizer's ids), a value head per two query heads where a family groups
# them, one token type where the tests' tokenizers have no second segment.
DECODER_TOKENS = {"bos_token_id": 0, "eos_token_id": 0}
GROUPED_QUERY_TYPES = ("llama", "mistral", "qwen2", "qwen3")


def _type_keys(model_type: str, width: int, layers: int, heads: int, intermediate: int) -> dict:
    table = {
        "distilbert": {"dim": width, "n_layers": layers, "n_heads": heads, "hidden_dim": intermediate},
        "modernbert": {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "cls_token_id": 1, "sep_token_id": 2,
                       "global_attn_every_n_layers": 1},
        "gpt2": DECODER_TOKENS,
        "gpt_neox": DECODER_TOKENS,
        "opt": {"ffn_dim": intermediate, "word_embed_proj_dim": width, "bos_token_id": 2, "eos_token_id": 2,
                "pad_token_id": 1},
        **{t: {**DECODER_TOKENS, "num_key_value_heads": heads // 2} for t in GROUPED_QUERY_TYPES},
        "roberta": {"type_vocab_size": 1},
    }
    return table.get(model_type, {})


def tiny_config(model_type: str, *, layers: int = 2, heads: int = 4, width: int = 32, intermediate: int = 64,
                vocab: int = 50, positions: int = 32, **keys):
    """The config of a tiny model of any ``model_type`` transformers knows: the one family table of the tests
    (``_type_keys``); ``keys`` are added last (a tokenizer's special tokens, ALBERT's embedding size)."""
    from transformers import AutoConfig

    size = {"hidden_size": width, "num_hidden_layers": layers, "num_attention_heads": heads,
            "intermediate_size": intermediate, "vocab_size": vocab, "max_position_embeddings": positions}
    return AutoConfig.for_model(model_type, **{**size, **_type_keys(model_type, width, layers, heads, intermediate),
                                               **keys})


def save_from_config(folder: Path, model_type: str, tokenizer_dir: Path) -> Path:
    """A tiny model of any ``model_type`` transformers knows (2 layers of 4 heads, width 32, random weights:
    :func:`tiny_config`) with the tokenizer in ``tokenizer_dir``."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = tiny_config(model_type, vocab=len(tokenizer), positions=66, bos_token_id=tokenizer.bos_token_id,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    AutoModel.from_config(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_gpt2(folder: Path, tokenizer_dir: Path) -> Path:
    """A tiny GPT-2 (random weights) with the byte-level BPE tokenizer in ``tokenizer_dir`` (the tiny RoBERTa's:
    GPT-2's vocabulary scheme)."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2Model

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    GPT2Model(GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
              ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_random_like(folder: Path, like: Path) -> Path:
    """The architecture and tokenizer of the GPT-2 in ``like`` with random weights (a training run's first
    checkpoint: tests/workflow/test_revision_axis.py)."""
    import torch
    from transformers import AutoConfig, AutoTokenizer, GPT2Model

    torch.manual_seed(0)
    GPT2Model(AutoConfig.from_pretrained(like)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(like).save_pretrained(folder)
    return folder


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
