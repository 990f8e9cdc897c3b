# attention-atlas: what do an encoder's attention heads do? One DAG from data to report.
#   snakemake --cores all                                           (default study, from the hub)
#   snakemake --profile profiles/offline --config mirror=PATH --cores all   (offline study)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/checkpoints.smk"


rule all:
    input:
        study_outputs(),
    default_target: True
