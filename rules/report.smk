# The report stage: the study beside the published numbers of [C], [K] and [L], and one summary page per model.
# paper_comparison reads report/paper_values.csv and every study table that this config produces (a table the
# config does not produce is left out, with the reason, so that its paper items say why they have no value);
# summary_figure draws one A4 page per model under {RESULTS}/figures/summary/. Both are report() outputs:
#   snakemake --report report.html
# See docs/report.md.
import os

REPORT_CATEGORY = "Summary"
REPORT_FIGURES = f"{RESULTS}/figures/summary"
# An input (not a param): editing the published numbers reruns the comparison and the summary pages.
PAPER_VALUES = os.path.join(workflow.basedir, "report", "paper_values.csv")


def report_outputs():
    """The comparison table and one summary page (PNG and PDF) per study model."""
    return [f"{RESULTS}/tables/paper_comparison.csv"] + [
        f"{REPORT_FIGURES}/{model}.{ext}" for model in STUDY["models"] for ext in ("png", "pdf")
    ]


def _report_tables():
    """name -> path of every study table the report reads that this config produces, or -> why it does not."""
    no_syntax = (f"the study dumps no EWT {' and '.join(SYNTAX_SPLITS)} attention "
                 "(study.treebanks, attention.corpora)")
    no_effects = "the study analyses no task's dev inputs (study.tasks, finetune_effects.tasks)"
    produced = {
        "models": True,
        "surface_heads": (bool(surface_pairs()), f"the study dumps no {SURFACE['corpus']}/{SURFACE['split']} "
                          "attention (study.wiki, attention.corpora, surface.corpus)"),
        "dependency_best": (bool(syntax_pairs()), no_syntax),
        "probes": (bool(syntax_pairs()), no_syntax),
        "coref_best": (bool(coref_pairs()), f"the study scores no GUM {SYNTAX['coref_split']} coreference "
                       "(study.treebanks, data.coreference_treebanks, attention.corpora)"),
        "finetune_metrics": (bool(FINETUNE_RUNS), "the study fine-tunes no model (study.tasks, finetune.tasks; "
                             "offline: only tasks whose train split the mirror holds)"),
        **{name: (bool(FE_TASKS), no_effects)
           for name in ("pattern_classes", "pattern_classifier", "lexical_top_layers", "lexical_last_layer")},
    }
    tables, absent = {}, {}
    for name, state in produced.items():
        made, why = (state, "") if state is True else state
        if made:
            tables[name] = f"{RESULTS}/tables/{name}.csv"
        else:
            absent[name] = why
    return tables, absent


REPORT_TABLES, REPORT_ABSENT = _report_tables()
# What the config selects, for the reasons of missing items and the protocol labels ("held out (train→dev)",
# "same split (dev→dev, as [C])") (workflow_scripts.report.comparison.StudyContext).
REPORT_CONTEXT = {
    "models": list(STUDY["models"]),
    "relations": list(SYNTAX["relations"]),
    "select_split": SYNTAX_SELECT,
    "score_split": SYNTAX_SCORE,
    "tasks": list(STUDY["tasks"]),
    "finetuned_tasks": list(FINETUNE_TASKS),
    "analysed_tasks": list(FE_TASKS),
    "predictions": FE["predictions"],
    "glove": STUDY["glove"],
    "annotator": config["annotation"]["annotator"],
    # How treebank sentences were fed (the captions say it; the tables carry it per row).
    "input_protocol": config["attention"]["input_protocol"],
    # The bootstrap resamples B of the syntax tables: a p-value at the floor 1/B prints as "p < 1/B".
    "resamples": SYNTAX["bootstrap_resamples"],
}


rule paper_comparison:
    input:
        paper_values=PAPER_VALUES,
        **REPORT_TABLES,
    output:
        report(
            f"{RESULTS}/tables/paper_comparison.csv",
            caption="../report/paper_comparison.rst",
            category=REPORT_CATEGORY,
        ),
    params:
        absent=REPORT_ABSENT,
        context=REPORT_CONTEXT,
    log:
        f"{RESULTS}/logs/report/paper_comparison.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"


rule summary_figure:
    input:
        paper_values=PAPER_VALUES,
        **REPORT_TABLES,
    output:
        png=report(
            f"{REPORT_FIGURES}/{{model}}.png",
            caption="../report/summary_figure.rst",
            category=REPORT_CATEGORY,
        ),
        pdf=f"{REPORT_FIGURES}/{{model}}.pdf",
    params:
        absent=REPORT_ABSENT,
        context=REPORT_CONTEXT,
    log:
        f"{RESULTS}/logs/report/summary_figure_{{model}}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/surface.yaml"
    script:
        "scripts/entry.py"
