"""Entry point of the head explorer (rules/explorer.smk).

The rule passes one named input per study table the page reads (those the study produces), ``patterns`` (the
pattern features files) and ``example_dumps`` (dump manifests) with ``example_tokens``, and ``params.layout``
saying which checkpoint and task each of those files is and which head measures the grid shows
(workflow_scripts/study/plans/explorer.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.io import listed
from ..core.table_names import ATLAS, MODELS, ROLE_AGREEMENT
from . import entry_point


@entry_point("head_explorer")
def head_explorer(smk: Any) -> None:
    from ..explorer.page import head_explorer as run
    from ..study.plans.explorer import explorer_tables

    p = smk.params
    layout = p.layout
    patterns = listed(smk.input.get("patterns"))
    dumps = listed(smk.input.get("example_dumps"))
    run(smk.wildcards.model, {name: smk.input.get(name) for name in explorer_tables()}, smk.output[0],
        head_measures=layout.get("measures", []),
        pattern_parts=[(c, t, path) for (c, t), path in zip(layout["pattern_parts"], patterns, strict=True)],
        relations=list(p.relations), select_split=p.select_split,
        example_dumps=[(c, label, Path(manifest).parent)
                       for (c, label), manifest in zip(layout["example_checkpoints"], dumps, strict=True)],
        example_tokens=smk.input.get("example_tokens"), corpus=layout["corpus"], split=layout["split"],
        examples=p.examples, max_tokens=p.max_tokens, example_ids=p.example_ids, max_megabytes=p.max_megabytes)


@entry_point("explorer_index")
def explorer_index(smk: Any) -> None:
    from ..explorer.index import index_page

    index_page(list(smk.params.models), list(smk.params.pages), smk.input[MODELS], smk.output[0],
               atlas=smk.input.get(ATLAS), agreement=smk.input.get(ROLE_AGREEMENT), treebank=smk.params.treebank)
