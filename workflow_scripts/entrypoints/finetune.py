"""Entry points of the fine-tuning stage (rules/finetune.smk).

rules/finetune.smk has one rule per task, ``finetune_{task}`` (each with its own outputs and
settings); they all run :func:`finetune` (registered for the pattern ``finetune_{task}``), with the task's
entry in ``params.task``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import entry_point


@entry_point("finetune_{task}")
def finetune(smk: Any) -> None:
    from ..data.entries import TaskSpec
    from ..finetune.training import finetune as run_finetune

    run_finetune(model_name=smk.wildcards.model, task=TaskSpec.from_params(dict(smk.params.task)),
                 seed=int(smk.wildcards.seed),
                 pretrained=smk.input.pretrained, train_path=smk.input.train, dev_path=smk.input.dev,
                 # {RESULTS}/checkpoints/{model}: the final checkpoint's folder is one level below.
                 checkpoint_root=Path(smk.output.final).parent.parent, metrics_path=smk.output.metrics,
                 settings=dict(smk.params.settings), threads=smk.threads, offline=smk.params.offline,
                 mirror=smk.params.mirror)


@entry_point("finetune_metrics_table")
def finetune_metrics_table(smk: Any) -> None:
    from ..finetune.tables import metrics_table

    metrics_table(list(smk.input), smk.output[0])
