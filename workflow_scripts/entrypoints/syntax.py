"""Entry points of the syntax and coreference analyses (rules/syntax.smk, METHODS 7.3-7.5)."""

from __future__ import annotations

from typing import Any

from . import entry_point


@entry_point("coref_windows")
def coref_windows(smk: Any) -> None:
    """The coreference treebank's documents cut into windows (corpus ``smk.params.corpus``, gumwin by default)."""
    from ..data.windows import write_windows

    write_windows(smk.input.sentences, smk.input.mentions, smk.output.data, smk.output.mentions,
                  max_words=smk.params.window_words, corpus=smk.params.corpus)


@entry_point("dependency_scores_shard")
def dependency_scores_shard(smk: Any) -> None:
    from ..syntax.dependency import dependency_scores_shard as run

    run(smk.input.dump, smk.input.tokens, smk.input.annotation, smk.output[0], shard_group=smk.wildcards.shard_group,
        max_offset=smk.params.max_offset, threads=smk.threads)


@entry_point("dependency_scores")
def dependency_scores(smk: Any) -> None:
    from ..syntax.dependency import dependency_scores_gather

    dependency_scores_gather(smk.input.dump, list(smk.input.partials), smk.output[0])


@entry_point("dependency_tables")
def dependency_tables(smk: Any) -> None:
    from ..syntax.dependency_tables import summarise_dependency

    # part_keys: (model, checkpoint, treebank, split), one per part; labelled: treebank -> has relation labels
    parts = dict(zip(map(tuple, smk.params.part_keys), smk.input.parts))
    summarise_dependency(parts, smk.output.heads, smk.output.best, relations=smk.params.relations,
                         select_split=smk.params.select_split, score_split=smk.params.score_split,
                         resamples=smk.params.resamples, seed=smk.params.seed, labelled=smk.params.labelled,
                         halves_output=smk.output.halves)


@entry_point("coreference_scores")
def coreference_scores(smk: Any) -> None:
    from pathlib import Path

    from ..syntax.coreference import score_coreference_heads

    score_coreference_heads(Path(smk.input.dump).parent, smk.input.tokens, smk.input.annotation,
                            smk.input.mentions, smk.output[0])


@entry_point("coreference_tables")
def coreference_tables(smk: Any) -> None:
    from ..syntax.coreference import summarise_coreference

    parts = dict(zip(smk.params.part_keys, smk.input.parts))
    summarise_coreference(parts, smk.output.heads, smk.output.best, resamples=smk.params.resamples,
                          seed=smk.params.seed)


@entry_point("probe_features")
def probe_features(smk: Any) -> None:
    from pathlib import Path

    from ..probing.features import build_probe_features

    build_probe_features(Path(smk.input.dump).parent, smk.input.tokens, smk.input.annotation, smk.output.maps,
                         smk.output.index, max_sentences=smk.params.max_sentences, seed=smk.params.seed)


@entry_point("probe_attention")
def probe_attention(smk: Any) -> None:
    from ..syntax.probes.training import run_attention_probe

    run_attention_probe(smk.wildcards.probe, smk.input.train_maps, smk.input.train_index, smk.input.test_maps,
                        smk.input.test_index, smk.input.train_annotation, smk.input.test_annotation,
                        smk.input.get("glove"), smk.output[0], epochs=smk.params.epochs, lr=smk.params.lr,
                        seed=smk.params.seed, exclude_punct=smk.params.exclude_punct,
                        batch_sentences=smk.params.batch_sentences, threads=smk.threads)


@entry_point("probe_baseline")
def probe_baseline(smk: Any) -> None:
    from ..syntax.probes.training import run_baseline_probe

    run_baseline_probe(smk.wildcards.probe, smk.input.train_tokens, smk.input.test_tokens,
                       smk.input.train_annotation, smk.input.test_annotation, smk.input.get("glove"), smk.output[0],
                       epochs=smk.params.epochs, lr=smk.params.lr, seed=smk.params.seed,
                       max_train_sentences=smk.params.max_train_sentences, exclude_punct=smk.params.exclude_punct,
                       batch_sentences=smk.params.batch_sentences, threads=smk.threads)


@entry_point("probe_mst")
def probe_mst(smk: Any) -> None:
    from ..syntax.probes.mst import run_mst

    run_mst(smk.input.test_maps, smk.input.test_index, smk.input.test_annotation, smk.input.selection,
            smk.output[0], exclude_punct=smk.params.exclude_punct)


@entry_point("probes_table")
def probes_table(smk: Any) -> None:
    from ..syntax.probes.tables import summarise_probes

    # part_keys: (model, checkpoint or 'none', treebank, probe), one per part
    parts = [(*key, path) for key, path in zip(smk.params.part_keys, smk.input.parts)]
    summarise_probes(parts, smk.output[0], resamples=smk.params.resamples, seed=smk.params.seed)


@entry_point("dependency_heatmaps")
def dependency_heatmaps(smk: Any) -> None:
    from ..syntax.figures import dependency_heatmaps as draw

    draw(smk.input.heads, smk.input.best, smk.output.png, smk.output.pdf, model=smk.wildcards.model,
         checkpoint=smk.wildcards.checkpoint, treebank=smk.wildcards.treebank, relations=smk.params.relations,
         select_split=smk.params.select_split, score_split=smk.params.score_split)


@entry_point("best_head_maps")
def best_head_maps(smk: Any) -> None:
    from pathlib import Path

    from ..syntax.figures import best_head_maps as draw

    draw(Path(smk.input.dump).parent, smk.input.tokens, smk.input.annotation, smk.input.best, smk.output.png,
         smk.output.pdf, model=smk.wildcards.model, checkpoint=smk.wildcards.checkpoint,
         treebank=smk.wildcards.treebank, relations=smk.params.relations, select_split=smk.params.select_split,
         score_split=smk.params.score_split, example_id=smk.params.example_id)
