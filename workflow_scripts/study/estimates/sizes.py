"""Sizes behind a study's forecast (workflow_scripts/study/forecast/), its dump budget check and its job priorities:
examples per split, layers and heads per model, attention values per dump, each with what it rests on.

Where the results folder already holds a table (data table, token table, model card) the number is
read from it; otherwise from the built-in corpora's release sizes and token lengths measured on the
offline study, below, each with its source. Nothing else is guessed: the rest is "unknown" or a bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.json_files import read_json_object
from ...core.subjects import base_model
from ...data.corpora import WINDOW_SUFFIX
from ...models.model_config import find_config
from ...models.shape import ModelShape, may_ask_hub
from ..model import Study

# Bytes on disk per float16 attention value, by attention.compression: measured on the 1000-segment wiki
# dump of all-MiniLM-L6-v2 (docs/attention.md); trained maps are float16 with near-random low bits, so it
# holds for any model. Random-init maps are near uniform and compress better (1.44 against 1.80 bytes in
# the offline study's zstd dumps), so the plan errs high for them.
BYTES_PER_VALUE = {"lz4": 1.98, "zstd": 1.77, "none": 2.00}


# Examples in the built-in corpora's splits, where no data table exists yet. GLUE: num_examples of the
# Hugging Face dataset nyu-mll/glue (its README's dataset_info), the source downloaded without a mirror.
# WiC: the official release (train/dev/test pairs). UD 2.16: sentences of the release files (EWT: the
# release's stats; GUM: train from its stats.xml, dev and test counted in the files). A mirror holding a
# cut copy has fewer (the offline mirror's SST-2 train: 19,999).
GLUE_SIZES = {"cola": {"train": 8551, "dev": 1043}, "sst2": {"train": 67349, "dev": 872},
              "mrpc": {"train": 3668, "dev": 408}, "qqp": {"train": 363846, "dev": 40430},
              "stsb": {"train": 5749, "dev": 1500}, "qnli": {"train": 104743, "dev": 5463},
              "mnli": {"train": 392702, "dev_matched": 9815, "dev_mismatched": 9832},
              "rte": {"train": 2490, "dev": 277}, "wnli": {"train": 635, "dev": 71}}
WIC_SIZES = {"train": 5428, "dev": 638, "test": 1400}
UD_SIZES = {("UD_English-EWT", "r2.16"): {"train": 12544, "dev": 2001, "test": 2077},
            ("UD_English-GUM", "r2.16"): {"train": 10224, "dev": 1575, "test": 1464}}
# GUM 2.16 dev cut into windows of at most 100 words (syntax.coref_window_words' default), as counted by
# the coref_windows job of the offline study.
GUM_DEV_WINDOWS_100 = 339

# Mean T^2 per example (T: tokens, special tokens included), measured on the offline study's token tables
# of all-MiniLM-L6-v2 at max_length 128 (results of `snakemake --profile profiles/offline`; task dev splits
# capped at their first 1000 examples, treebanks fed as gold words). MiniLM uses bert-base-uncased's
# WordPiece vocabulary and lower-casing, so bert-base-uncased has the same T per example; a cased or
# other tokenizer differs by a few tokens, hence an estimate. Wiki: WikiText-2 segments of 128 words
# (data.wiki.max_words' default; 716 of 1000 reach max_length). Splits not measured get only the bound.
MEASURED_MAX_LENGTH = 128
MEAN_T2 = {("glue", "cola", "dev"): 160.7, ("glue", "sst2", "dev"): 740.7, ("glue", "mrpc", "dev"): 2994.0,
           ("glue", "stsb", "dev"): 979.7, ("glue", "qnli", "dev"): 3025.7, ("glue", "rte", "dev"): 5222.0,
           ("glue", "wnli", "dev"): 1671.5, ("wic", "wic", "dev"): 498.9,
           ("ud", "UD_English-EWT", "train"): 611.7, ("ud", "UD_English-EWT", "dev"): 443.0,
           ("ud", "UD_English-GUM", "dev"): 679.3, ("windows", "UD_English-GUM", "dev"): 8794.2,
           ("wiki", "wiki", "segments"): 12558.0}


# --- sizes: examples, layers and heads, tokens ------------------------------------------------------------


def _source_key(study: Study, corpus: str) -> tuple[str, str, str | None]:
    """What a corpus is made from, whatever its entry's name: ('glue', task), ('ud', repository, release)..."""
    kind = study.corpora.kind(corpus)
    if kind == "task":
        spec = study.corpora.tasks[corpus]
        return (spec.reader, spec.source["task"] if spec.reader == "glue" else spec.reader, None)
    if kind in ("treebank", "windows"):
        entry = study.corpora.treebanks[corpus.removesuffix(WINDOW_SUFFIX) if kind == "windows" else corpus]
        release = entry.release or study.corpora.ud_release
        return ("windows" if kind == "windows" else entry.source, entry.location, release)
    return (kind, corpus, None)


def split_size(study: Study, corpus: str, split: str) -> tuple[int | None, str]:
    """Examples of a split, and where the number comes from."""
    table = Path(study.paths.data_table(corpus, split))
    if table.is_file():
        import pyarrow.parquet as pq

        return pq.read_metadata(table).num_rows, "data table"
    source, name, release = _source_key(study, corpus)
    if corpus == "wiki":
        return study.config["data"]["wiki"]["n_segments"], "data.wiki.n_segments"
    size = None
    if source == "glue":
        size = GLUE_SIZES.get(name, {}).get(split)
    elif source == "wic":
        size = WIC_SIZES.get(split)
    elif source == "ud":
        size = UD_SIZES.get((name, release), {}).get(split)
    elif (source, name, release, split) == ("windows", "UD_English-GUM", "r2.16", "dev"):
        size = GUM_DEV_WINDOWS_100 if study.config["syntax"]["coref_window_words"] == 100 else None
    return size, "release size" if size is not None else "unknown"


def model_shape(study: Study, model: str, *, network: bool) -> ModelShape:
    """The shape of a study model (models/shape.py): its card in the results (the numbers its job loaded), else its
    config from the first source models/model_config.py finds (local config.json, the recorded configs, the hub
    where allowed: network given and the study not offline)."""
    entry = study.config["models"][model]
    card = read_json_object(Path(study.results) / "models" / model / "model.json")
    if card and card.get("num_layers") and card.get("num_heads"):
        # The card's numbers are those its job loaded; the config.json here says whether the weights have a
        # masked-LM head and, with the card, what the model type is.
        local = find_config(model, entry)
        config = local.keys if local.from_local_file else {}
        model_type = config.get("model_type") or card.get("model_type")
        keys = {**card, "model_type": model_type, "architectures": config.get("architectures")}
        return ModelShape.from_config(keys, source="model card")
    found = find_config(model, entry, hub_allowed=may_ask_hub(network=network, offline=study.offline))
    if found.found:
        return found.shape()
    return ModelShape(source=f"unknown (needs the model's config; {found.source})")


def token_table_t2(study: Study, model: str, corpus: str, split: str, *, causal: bool = False) -> int | None:
    """Sum of T^2 (a causal model's dump: T(T+1)/2) over the examples of the results' token table, when it was made
    with today's settings."""
    path = Path(study.paths.token_table(model, corpus, split))
    if not path.is_file():
        return None
    import numpy as np
    import pyarrow.parquet as pq

    from ...core.io import read_metadata

    meta = read_metadata(path)
    wanted = {"max_length": study.config["models"][model]["max_length"],
              "max_examples": study.config["attention"]["max_examples"].get(corpus),
              # tables made before the key say nothing of it: null, as they were made
              "prepend_bos": study.config["models"][model].get("prepend_bos")}
    if corpus in study.treebank_corpora:
        wanted["input_protocol"] = study.config["attention"]["input_protocol"]
    if any(meta.get(key) != value for key, value in wanted.items()):
        return None  # its job reruns with other settings: the table says nothing about the new one
    _, counts = np.unique(pq.read_table(path, columns=["example_id"])["example_id"].to_numpy(), return_counts=True)
    counts = counts.astype(np.int64)
    return int((counts * (counts + 1) // 2).sum()) if causal else int((counts ** 2).sum())


def _mean_t2(study: Study, model: str, corpus: str, split: str) -> float | None:
    """The measured mean T^2 where the settings are those it was measured under."""
    source, name, _ = _source_key(study, corpus)
    config = study.config
    if config["models"][model]["max_length"] != MEASURED_MAX_LENGTH:
        return None
    if corpus in study.treebank_corpora and config["attention"]["input_protocol"] != "words":
        return None
    if source == "windows" and config["syntax"]["coref_window_words"] != 100:
        return None
    if corpus == "wiki" and config["data"]["wiki"]["max_words"] != 128:
        return None
    return MEAN_T2.get((source, name, split))


@dataclass
class DumpSize:
    model: str
    checkpoint: str
    corpus: str
    split: str
    examples: int | None      # examples dumped (at most, when examples_basis says 'at most')
    examples_basis: str
    values: float | None      # attention values: exact (token table) or estimated (measured mean T^2)
    values_basis: str
    values_max: int | None    # examples x layers x heads x max_length^2


def size_dump(study: Study, dump: tuple[str, str, str, str], shape: tuple[int, int] | None, *,
              causal: bool = False) -> DumpSize:
    """The values a dump stores: T^2 per map, T(T+1)/2 for a causal model's (attention/layout.py)."""
    subject, checkpoint, corpus, split = dump
    model = base_model(subject)  # every signal of a model has the model's token tables and sizes
    size, basis = split_size(study, corpus, split)
    cap = study.config["attention"]["max_examples"].get(corpus)
    if size is None and cap:
        size, basis = cap, "at most attention.max_examples"
    elif size is not None and cap and cap < size:
        size, basis = cap, f"attention.max_examples (of {size:,}, {basis})"
    if shape is None or size is None:
        why = "unknown layers/heads" if shape is None else "unknown size"
        return DumpSize(*dump, size, basis, None, why, None)
    lh = shape[0] * shape[1]
    max_length = study.config["models"][model]["max_length"]
    values_max = size * lh * (max_length * (max_length + 1) // 2 if causal else max_length ** 2)
    exact = token_table_t2(study, model, corpus, split, causal=causal)
    if exact is not None:
        return DumpSize(*dump, size, basis, float(exact * lh), "token table", values_max)
    mean = _mean_t2(study, model, corpus, split)
    if mean is not None and "at most" not in basis:
        # A triangle holds (T^2 + T) / 2 values; sqrt(mean T^2) >= mean T, so this errs high.
        per_map = (mean + mean ** 0.5) / 2 if causal else mean
        return DumpSize(*dump, size, basis, size * lh * per_map, "measured mean T^2", values_max)
    return DumpSize(*dump, size, basis, None, "bound only", values_max)
