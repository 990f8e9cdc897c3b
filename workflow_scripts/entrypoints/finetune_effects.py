"""Entry points of the fine-tuning effects analyses (rules/finetune_effects.smk; METHODS 8, 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.table_names import FINETUNE_CHANGE
from . import entry_point


def _thresholds(params: Any):
    from ..finetune_effects.pattern_rules import Thresholds

    return Thresholds.from_mapping(params.thresholds)


@entry_point("pattern_features")
def pattern_features(smk: Any) -> None:
    from ..finetune_effects.patterns import pattern_features as run

    run(Path(smk.input.dump).parent, smk.input.tokens, smk.output[0], thresholds=_thresholds(smk.params),
        max_examples=smk.params.max_examples)


@entry_point("pattern_label_seed")
def pattern_label_seed(smk: Any) -> None:
    from ..core.io import write_csv
    from ..finetune_effects.pattern_cnn import seed_labels

    p = smk.params
    parts = {(checkpoint, task): path for (checkpoint, task), path in zip(p.pairs, smk.input.features)}
    write_csv(seed_labels(parts, p.n, p.seed, balanced=p.balanced), smk.output[0])


@entry_point("pattern_cnn")
def pattern_cnn(smk: Any) -> None:
    from ..finetune_effects.pattern_cnn import train_pattern_cnn

    p = smk.params
    dumps = {(checkpoint, task): (Path(dump).parent, tokens)
             for (checkpoint, task), dump, tokens in zip(p.pairs, smk.input.dumps, smk.input.tokens)}
    cnn = p.cnn
    train_pattern_cnn(smk.input.seeded, smk.input.get("human"), dumps, smk.output.model, smk.output.labels,
                      smk.output.metrics, model=smk.wildcards.model, size=cnn["size"], epochs=cnn["epochs"],
                      seed=cnn["seed"], learning_rate=cnn["learning_rate"], batch_size=cnn["batch_size"],
                      holdout=cnn["holdout"], thresholds=_thresholds(p), threads=smk.threads,
                      resamples=p.resamples, bootstrap_seed=p.bootstrap_seed)


@entry_point("pattern_classes_part")
def pattern_classes_part(smk: Any) -> None:
    from ..finetune_effects.pattern_shares import pattern_classes_part as run

    p, w = smk.params, smk.wildcards
    dump = smk.input.get("dump")
    run(smk.input.features, smk.output[0], model=w.model, checkpoint=w.checkpoint, task=w.corpus,
        checkpoint_manifest=smk.input.checkpoint, classifier=p.classifier, cnn_model=smk.input.get("cnn"),
        dump_dir=Path(dump).parent if dump else None, token_table=smk.input.get("tokens"),
        resamples=p.resamples, seed=p.bootstrap_seed, threads=smk.threads)


@entry_point("finetune_change_part")
def finetune_change_part(smk: Any) -> None:
    from ..finetune_effects.change import finetune_change

    p, w = smk.params, smk.wildcards
    finetune_change(Path(smk.input.pretrained).parent, Path(smk.input.dump).parent, smk.input.tokens, smk.output[0],
                    model=w.model, task=w.corpus, checkpoint=w.checkpoint, checkpoint_manifest=smk.input.checkpoint,
                    max_examples=p.max_examples, resamples=p.resamples, seed=p.bootstrap_seed)


@entry_point("lexical_counts")
def lexical_counts(smk: Any) -> None:
    from ..finetune_effects.lexical import lexical_counts as run

    p = smk.params
    run(Path(smk.input.dump).parent, smk.input.tokens, smk.input.annotation, smk.output.counts,
        mapping=p.categories, exclude_self=p.exclude_self, max_examples=p.max_examples)


@entry_point("finetune_effects_table")
def finetune_effects_table(smk: Any) -> None:
    from ..finetune_effects.patterns import combine_parts

    # The change after fine-tuning may have no part (the study fine-tunes nothing it analyses): its table is then these
    # columns alone; the other tables always have parts.
    empty_columns = {FINETUNE_CHANGE: ["model", "task", "checkpoint", "kind", "seed", "step", "global_step", "layer",
                                         "head", "cosine", "ci_low", "ci_high", "n", "bootstrap_seed"]}
    combine_parts(list(smk.input), smk.output[0], list(smk.params.key), pretrained_only=smk.params.pretrained_only,
                  empty_columns=empty_columns.get(smk.wildcards.table))


@entry_point("lexical_tables")
def lexical_tables(smk: Any) -> None:
    from ..finetune_effects.lexical import lexical_tables as run

    p, out = smk.params, smk.output
    parts = {tuple(target): (counts, manifest)
             for target, counts, manifest in zip(p.targets, smk.input.counts, smk.input.checkpoints)}
    run(parts, layers_out=out.layers, heads_out=out.heads, change_out=out.change, last_layer_out=out.last_layer,
        top_out=out.top, predictions=p.predictions, pretrained_only=p.pretrained_only, resamples=p.resamples,
        seed=p.bootstrap_seed, top_k=p.top_k)


@entry_point("finetune_effects_figures")
def finetune_effects_figures(smk: Any) -> None:
    from ..finetune_effects.figures import (
        plot_finetune_change,
        plot_lexical_layers,
        plot_pattern_classes,
        plot_trajectory,
    )

    i, o = smk.input, smk.output
    plot_pattern_classes(i.classes, o.classes_png, o.classes_pdf)
    plot_finetune_change(i.change, o.change_png, o.change_pdf, pretrained_only=smk.params.pretrained_only)
    plot_lexical_layers(i.lexical, o.lexical_png, o.lexical_pdf)
    plot_trajectory(i.lexical, i.classes, i.change, o.trajectory_png, o.trajectory_pdf)
