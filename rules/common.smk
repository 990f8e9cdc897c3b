# Shared by every rule file: config validation, the study's selections, paths.
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

sys.path.insert(0, workflow.basedir)

from workflow_scripts.attention.extract import shard_names
from workflow_scripts.study.config import (check_schema, check_semantics, coerce_config, load_schema, selected_corpora,
                                     selected_splits)
from workflow_scripts.data.registry import GLUE_TASKS, find_in_mirror
from workflow_scripts.core.errors import ConfigError

CONFIG_SCHEMA = Path(workflow.basedir) / "schemas" / "config.schema.yaml"

# --config text read as the schema's types (nested values arrive as text: attention='{num_shards: 8}'),
# readable errors first (key, problem, fix), then Snakemake's own validate() to fill in defaults.
try:
    _schema = load_schema(CONFIG_SCHEMA)
    coerce_config(config, _schema)
    check_schema(config, _schema)
    validate(config, str(CONFIG_SCHEMA))
    check_semantics(config)
except ConfigError as error:
    raise WorkflowError(str(error)) from None

RESULTS = config["results"]
MIRROR = config["mirror"]
OFFLINE = config["offline"]
STUDY = config["study"]

# Every split of every selected corpus that the study builds; offline, only mirrored ones.
STUDY_SPLITS = {corpus: selected_splits(config, corpus) for corpus in selected_corpora(config)}
for corpus, splits in STUDY_SPLITS.items():
    if not splits:
        raise WorkflowError(f"corpus {corpus!r}: no split is available offline in the mirror {MIRROR}")

wildcard_constraints:
    split="[a-z_]+",
    task="|".join(GLUE_TASKS),
    treebank="ewt|gum",
    model="[^/]+",
    corpus="[a-z0-9]+",
    checkpoint="[^/]+",


def data_table(corpus, split):
    return f"{RESULTS}/data/{corpus}/{split}.parquet"


def mirror_input(corpus, split):
    """Input function: the mirror files of a split (tracked for reruns), or none to download."""
    return [str(p) for p in find_in_mirror(MIRROR, corpus, split)]


def data_tables():
    tables = [data_table(c, s) for c, splits in STUDY_SPLITS.items() for s in splits]
    for treebank in config["data"]["coreference_treebanks"]:
        if treebank in STUDY_SPLITS:
            tables += [f"{RESULTS}/data/{treebank}/{s}.mentions.parquet" for s in STUDY_SPLITS[treebank]]
    return tables


def model_source(model):
    """The keys of a model entry that say where it comes from (not how it is used, e.g. max_length),
    so that changing a usage setting does not rebuild the model card or its checkpoints."""
    return {k: v for k, v in config["models"][model].items() if k in ("hub", "path", "package", "subdir", "revision")}


def checkpoint_manifest(model, checkpoint):
    """The one file that stands for a checkpoint of any kind (see workflow_scripts.models.checkpoints)."""
    return f"{RESULTS}/checkpoints/{model}/{checkpoint}/checkpoint.json"


def study_outputs():
    return [
        f"{RESULTS}/tables/data_summary.csv",
        f"{RESULTS}/tables/models.csv",
        # Fine-tuning (rules/finetune.smk), when the study fine-tunes anything.
        *([f"{RESULTS}/tables/finetune_metrics.csv"] if FINETUNE_RUNS else []),
        f"{RESULTS}/tables/attention_dumps.csv",
        # Surface, gradient and clustering analyses of [C] (rules/surface.smk): tables and figures.
        *surface_outputs(),
        # Syntax and coreference analyses of [C] (rules/syntax.smk): tables and figures.
        *syntax_outputs(),
        # Fine-tuning effects of [K] and [L] (rules/finetune_effects.smk): tables and figures.
        *finetune_effects_outputs(),
        # The comparison with the papers and one summary page per model (rules/report.smk).
        *report_outputs(),
    ]
