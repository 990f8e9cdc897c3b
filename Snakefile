# attention-atlas: what do an encoder's attention heads do? One DAG from data to report.
#   snakemake --profile profiles/quickstart --cores all             (a small complete study in minutes)
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


# One rule file per stage, in the order of STAGES (workflow_scripts/core/stages.py): the stage list is spelled there
# only, and a new stage's rules/<stage>.smk is included with no line here.
from workflow_scripts.core.stages import STAGES

for _stage in STAGES:

    include: f"rules/{_stage}.smk"


# Each rule's job depends on the code it runs: a digest of its entry point and of the modules that reaches, comments
# and docstrings left out, as one more param (workflow_scripts/runtime/code_digest.py; docs/contributing.md). Every
# rule runs the same script, so Snakemake's own code trigger never sees a stage's code.
from workflow_scripts.runtime.code_digest import rule_digests

for _name, _digest in rule_digests([r.name for r in workflow.rules]).items():
    workflow.get_rule(_name).set_params(code_digest=_digest)


# The long pole first: every job's priority is that of the fine-tuning run it waits for or leads to, the costliest
# run (examples x epochs x tokens, known before any job runs) the highest (workflow_scripts/study/priorities.py).
# Priorities order jobs only; no result depends on them.
from workflow_scripts.study.priorities import JobPriorities

_priorities = JobPriorities(STUDY)
for _rule in workflow.rules:
    _rule.priority = _priorities.for_rule(_rule.name)


# One run at a time per results folder, from whichever clone or working directory
# (workflow_scripts/runtime/results_lock.py; it stands in for Snakemake's own lock, which the profiles
# turn off so that a killed run needs no --unlock). onstart runs only in the main process of a real
# run, after the DAG is built and before any job: not in dry runs, --unlock or job processes. It
# also removes what killed jobs of earlier runs left in the results folder.
import sys

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from snakemake.settings.types import DeploymentMethod

from workflow_scripts.runtime import failures, results_lock, scheduler_passes, warm_start
from workflow_scripts.runtime.closing_message import on_success
from workflow_scripts.finetune.tables import at_chance_warnings
from workflow_scripts.core.errors import AtlasError

# The jobs of a local run start warm: forked from a process that has imported torch, transformers and the workflow
# once (workflow_scripts/runtime/warm_start.py); a cluster's jobs run on other nodes, a conda env's in its own Python.
WARM_SERVER = []


onstart:
    try:
        results_lock.on_start(workflow, STUDY.results, warn=logger.warning, note=logger.info)
    except AtlasError as error:
        raise WorkflowError(str(error)) from None
    # Snakemake's scheduler passes over the ready jobs once a second per finished job while jobs wait; one pass at a
    # time where the job rate limit holds a job back (workflow_scripts/runtime/scheduler_passes.py).
    scheduler_passes.one_pending_pass(workflow.scheduler)
    if workflow.local_exec and DeploymentMethod.CONDA not in workflow.deployment_settings.deployment_method:
        WARM_SERVER.append(warm_start.start(workflow.basedir, STUDY.offline, warm_start.server_pays(workflow)))


# A successful run of the whole study ends with where its explorer pages are and the command that
# builds the report (workflow_scripts/runtime/closing_message.py).
onsuccess:
    warm_start.stop(*WARM_SERVER)
    results_lock.release(STUDY.results)
    # Fine-tuning runs at chance are said first: the effects measured on them are noise (finetune/tables.py).
    warnings = at_chance_warnings(STUDY.paths.table(TABLE.FINETUNE_METRICS))
    if message := on_success(workflow, STUDY.results, sys.argv, warnings):
        logger.info(message)


# A failed run ends with one block per failed job: its message and fix as the job recorded them,
# and its log (workflow_scripts/runtime/failures.py); tracebacks stay in the logs.
onerror:
    warm_start.stop(*WARM_SERVER)
    results_lock.release(STUDY.results)
    if message := failures.report(workflow):
        logger.error(message)


# Damage that earlier runs left or jobs refused (a truncated, swapped or deleted shard, an edited manifest
# or checkpoint record, replaced weights) is withdrawn and rebuilt by this run, with what depends on it: what
# rebuilds it is an input of rule all (workflow_scripts/runtime/integrity.py). Main process only, dry runs too;
# only what a rule of this study makes.
from workflow_scripts.runtime.integrity import damage_lines, find_damage, withdraw

REPAIRS = []
if workflow.exec_mode == ExecMode.DEFAULT:
    _damaged = [d for d in find_damage(STUDY) if any(rule.is_producer(d.target) for rule in workflow.rules)]
    if _damaged:
        withdraw(_damaged)
        for _line in damage_lines(_damaged, STUDY.results):
            logger.warning(_line)
    REPAIRS = sorted({d.target for d in _damaged})


rule all:
    default_target: True
    input:
        STUDY.outputs(),
        REPAIRS,
