"""Labels shared by the study's tables: heads as the papers print them, and the directions a head is scored in
as a dependency parser (dependency_best.csv's ``direction``, read by the syntax stage and the found-heads check).
Importable by jobs that draw nothing (no matplotlib)."""

from __future__ import annotations

# A head predicts, for each word, the word it attends to most (dependent -> head), or the word that attends to it
# most (head -> dependent); `either` is the better of the two per relation.
DEP_TO_HEAD = "dependent_to_head"
HEAD_TO_DEP = "head_to_dependent"
EITHER = "either"
DIRECTIONS = (DEP_TO_HEAD, HEAD_TO_DEP)
# A causal model's word attends only to itself and the words before it (docs/syntax.md): dependent -> head over the
# dependents whose head precedes them, head -> dependent over those whose head follows them, and their union (every
# dependent with a head counted once, in the direction its arc allows).
DEP_TO_PRECEDING_HEAD = "dependent_to_preceding_head"
HEAD_TO_PRECEDING_DEP = "head_to_preceding_dependent"
CAUSAL_UNION = "causal_union"
CAUSAL_DIRECTIONS = (DEP_TO_PRECEDING_HEAD, HEAD_TO_PRECEDING_DEP, CAUSAL_UNION)


def head_label(layer: int, head: int) -> str:
    """1-based "layer-head" label as the papers print it (outputs stay 0-based)."""
    return f"{int(layer) + 1}-{int(head) + 1}"
