# attention-atlas: what do an encoder's attention heads do? One DAG from data to report.
#   snakemake --cores all                                           (default study, from the hub)
#   snakemake --profile profiles/offline --config mirror=PATH --cores all   (offline study)
import os

from snakemake.utils import min_version

min_version("9.0")


# The default study; --configfile/--config/profiles override it key by key.
configfile: os.path.join(workflow.basedir, "config.yaml")


# The report's landing page: what the study is, with which models, data, annotators and protocols.
report: "report/report_workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/finetune.smk"
include: "rules/attention.smk"
include: "rules/surface.smk"
include: "rules/syntax.smk"
include: "rules/finetune_effects.smk"
include: "rules/ablation.smk"
include: "rules/report.smk"
include: "rules/explorer.smk"


# One run at a time per results folder, from whichever clone or working directory
# (workflow_scripts/results_lock.py). onstart runs only in the main process of a real run,
# after the DAG is built and before any job: not in dry runs, --unlock or job processes.
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from workflow_scripts.core import results_lock
from workflow_scripts.core.errors import AtlasError


onstart:
    try:
        results_lock.on_start(workflow, STUDY.results, warn=logger.warning)
    except AtlasError as error:
        raise WorkflowError(str(error)) from None


onsuccess:
    results_lock.release(STUDY.results)


onerror:
    results_lock.release(STUDY.results)


rule all:
    default_target: True
    input:
        STUDY.outputs(),
