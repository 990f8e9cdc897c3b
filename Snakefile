# attention-atlas: what do an encoder's attention heads do? One DAG from data to report.
#   snakemake --cores all                                           (default study, from the hub)
#   snakemake --profile profiles/offline --config mirror=PATH --cores all   (offline study)
import os

from snakemake.utils import min_version

min_version("9.0")


# The default study; --configfile/--config/profiles override it key by key.
configfile: os.path.join(workflow.basedir, "config.yaml")


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/checkpoints.smk"
include: "rules/finetune.smk"
include: "rules/attention.smk"
include: "rules/surface.smk"
include: "rules/syntax.smk"
include: "rules/finetune_effects.smk"
include: "rules/report.smk"


rule all:
    input:
        study_outputs(),
    default_target: True
