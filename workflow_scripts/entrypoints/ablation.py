"""Entry points of the causal head checks (rules/ablation.smk; docs/ablation.md)."""

from __future__ import annotations

from typing import Any

from ..core.table_names import COREF_BEST
from . import entry_point


@entry_point("head_disabling")
def head_disabling(smk: Any) -> None:
    from ..ablation.disabling import run_head_disabling

    p, wc = smk.params, smk.wildcards
    run_head_disabling(smk.input.checkpoint, smk.input.dev, smk.output[0], task=dict(p.task),
                       settings=dict(p.settings), modes=list(p.modes), max_examples=p.max_examples,
                       batch_size=p.batch_size, device=p.device, threads=smk.threads, offline=p.offline,
                       mirror=p.mirror, model=wc.model, checkpoint=f"{wc.task}.seed{wc.seed}.final")


@entry_point("head_disabling_figure")
def head_disabling_figure(smk: Any) -> None:
    from ..ablation.figures import plot_head_disabling

    plot_head_disabling(smk.input.table, smk.output.png, smk.output.pdf, model=smk.wildcards.model)


@entry_point("found_heads")
def found_heads(smk: Any) -> None:
    from ..ablation.found_heads import run_found_heads

    p, i = smk.params, smk.input
    run_found_heads(dependency_best=i.dependency_best, coref_best=i.get(COREF_BEST), pretrained=i.pretrained,
                    finetuned=list(i.finetuned), dev=list(i.dev), tasks=[dict(t) for t in p.tasks],
                    settings=[dict(s) for s in p.settings], train_maps=i.train_maps, train_index=i.train_index,
                    train_annotation=i.train_annotation, test_tokens=i.test_tokens,
                    test_annotation=i.test_annotation, output=smk.output[0], model=smk.wildcards.model,
                    treebank=p.treebank, relations=list(p.relations), select_split=p.select_split,
                    score_split=p.score_split, modes=list(p.modes), max_examples=p.max_examples,
                    batch_size=p.batch_size, device=p.device, threads=smk.threads, random_seed=p.random_seed,
                    offline=p.offline, mirror=p.mirror, probe=dict(p.probe))


@entry_point("ablation_table")
def ablation_table(smk: Any) -> None:
    from ..ablation.tables import COLUMNS, stack_parts

    stack_parts(list(smk.input), smk.output[0], COLUMNS[smk.wildcards.table], list(smk.params.key))
