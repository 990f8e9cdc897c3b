"""The study's tables, each named once: ``NAME`` is ``tables/NAME.csv`` and, where a table is gathered from parts,
each part's file name (``NAME.csv`` or ``NAME.parquet`` in an analysis folder; the probes' parts: the folder
``probes/``).

The stage that writes a table declares it in its plan's ``Analysis`` (``workflow_scripts/study/plans/``: its
caption, report category and figures) by one of these names; the rules ask the plans for its paths; the code that
reads it (the report's pages and atlas, the head explorer, another stage's summary panel) uses the same name from
here, because the science never imports the plans (docs/contributing.md, "Which way imports run"). A per-head
measure's table is named by its ``HeadMeasure`` (``surface/measures.py``) instead, where its recipe adds it.

An analysis named after its main table (most are) takes the table's constant as its name, and so does a figure
named after its table. A name may also equal a rule's, a column's, a config value's (``roles.finetuned``'s
analyses), a partial's label or a published number's analysis (``report/paper_values/``): those are other things,
named where they are declared.
"""

from __future__ import annotations

# data
DATA_SUMMARY = "data_summary"
# models
MODELS = "models"
# finetune
FINETUNE_METRICS = "finetune_metrics"
# attention
ATTENTION_DUMPS = "attention_dumps"
# surface
SURFACE_HEADS = "surface_heads"
SEP_GRADIENT = "sep_gradient"
HEAD_CLUSTERS = "head_clusters"
ATTENTION_DISTANCE = "attention_distance"
HEAD_DIAGNOSTICS = "head_diagnostics"
HEAD_DIAGNOSTICS_HALVES = "head_diagnostics_halves"
SINK_RATES = "sink_rates"
ICL_SCORE = "icl_score"
# syntax
DEPENDENCY_HEADS = "dependency_heads"
DEPENDENCY_BEST = "dependency_best"
DEPENDENCY_HALVES = "dependency_halves"
PROBES = "probes"
COREF_HEADS = "coref_heads"
COREF_BEST = "coref_best"
# finetune_effects
PATTERN_CLASSES = "pattern_classes"
PATTERN_CLASSIFIER = "pattern_classifier"
FINETUNE_CHANGE = "finetune_change"
LEXICAL_LAYERS = "lexical_layers"
LEXICAL_HEADS = "lexical_heads"
LEXICAL_CHANGE = "lexical_change"
LEXICAL_LAST_LAYER = "lexical_last_layer"
LEXICAL_TOP_LAYERS = "lexical_top_layers"
# ablation
HEAD_DISABLING = "head_disabling"
FOUND_HEADS = "found_heads"
# report
PAPER_COMPARISON = "paper_comparison"
SIGNAL_COMPARISON = "signal_comparison"
HEAD_DEVELOPMENT = "head_development"
ATLAS = "atlas"
ATLAS_HALVES = "atlas_halves"
ROLE_AGREEMENT = "role_agreement"
ROLE_CHANGE_BY_LAYER = "role_change_by_layer"
