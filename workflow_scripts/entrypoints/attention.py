"""Entry points of the attention stage (rules/attention.smk)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import entry_point


@entry_point("annotation")
def annotation(smk: Any) -> None:
    from ..attention.annotate import build_annotation

    build_annotation(smk.wildcards.corpus, smk.input.data, smk.output[0], annotator=smk.params.annotator,
                     spacy_model=smk.params.spacy_model, stanza_dir=smk.params.stanza_dir,
                     stanza_models=smk.params.stanza_models, pretokenized=smk.params.pretokenized,
                     offline=smk.params.offline)


@entry_point("token_table")
@entry_point("treebank_token_table")
@entry_point("bos_token_table")
@entry_point("bos_treebank_token_table")
def token_table(smk: Any) -> None:
    from ..attention.texts import TEXT
    from ..attention.tokens import write_token_table

    # Text corpora are fed as written; treebank_token_table passes attention.input_protocol, and the bos_ rules
    # the model's prepend_bos (rules/attention.smk).
    write_token_table(smk.input.checkpoint, smk.input.data, smk.input.annotation, smk.output[0],
                      max_length=smk.params.max_length, max_examples=smk.params.max_examples,
                      input_protocol=smk.params.get("input_protocol", TEXT), offline=smk.params.offline,
                      prepend_bos=smk.params.get("prepend_bos"))


@entry_point("extract_attention")
def extract_attention(smk: Any) -> None:
    """One shard of a dump (its shard wildcard) of the subject's signal (params.signal, docs/signals.md);
    attention_dump_manifest gathers the shards."""
    from ..core.malloc import reuse_freed_memory

    reuse_freed_memory()  # freed batches' memory reused, not mapped afresh at every batch (core/malloc.py)
    from ..attention.extract import extract_shard
    from ..attention.shards import shard_names, shard_record_path

    out_dir = Path(smk.output.shard).parent
    name = shard_names(smk.params.num_shards)[smk.params.shard_index]
    if Path(smk.output.shard) != out_dir / name or Path(smk.output.record) != shard_record_path(out_dir, name):
        raise RuntimeError(f"rule extract_attention's outputs {smk.output.shard}, {smk.output.record} are not where "
                           f"extract_shard writes shard {name}")
    extract_shard(smk.input.checkpoint, smk.input.tokens, out_dir, index=smk.params.shard_index,
                  n_shards=smk.params.num_shards, compression=smk.params.compression,
                  batch_size=smk.params.batch_size, max_batch_tokens=smk.params.max_batch_tokens,
                  device=smk.params.device, threads=smk.threads, offline=smk.params.offline,
                  implementation=smk.params.implementation, signal=smk.params.signal, dtype=smk.params.dtype)


@entry_point("attention_dump_manifest")
def attention_dump_manifest(smk: Any) -> None:
    from ..attention.gather import gather_manifest

    gather_manifest(Path(smk.output.manifest).parent, smk.params.num_shards)


@entry_point("attention_dumps_table")
def attention_dumps_table(smk: Any) -> None:
    from ..attention.summary import summarize_dumps

    summarize_dumps(list(smk.input.dumps), list(smk.input.tokens), smk.output[0])
