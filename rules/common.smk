# Validate the config, then build the study model (workflow_scripts/study/model.py) once: every rule
# file reads STUDY (and the helpers of its own file), TABLE (the tables' names, each written once:
# workflow_scripts/core/table_names.py) and the constants of its own stage's plan (its figures' names, its
# ANALYSES), never another rule file's names; rule all's inputs come from STUDY.
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake.logging import logger

sys.path.insert(0, workflow.basedir)

# Every relative path of the config (results, downloads, stanza_dir) and Snakemake's own .snakemake/ is
# made in the working directory. A run started in a folder inside the repository (cd docs; snakemake -s
# ../Snakefile) would put a second results/ there unnoticed, so the main process stops; a working directory
# outside the repository, or one named with --directory, is a deliberate choice and is kept. Job processes
# run wherever the main process put them (a cluster job is started in its directory, without --directory).
_cwd, _repo = Path.cwd().resolve(), Path(workflow.basedir).resolve()
if workflow.exec_mode == ExecMode.DEFAULT and workflow.overwrite_workdir is None and _repo in _cwd.parents:
    raise WorkflowError(
        f"snakemake runs in {_cwd}, a folder inside the repository: the study's results/ and .snakemake/ "
        f"would be made there; run it from the repository root (cd {_repo}), or name the working "
        "directory with --directory DIR"
    )

from workflow_scripts.runtime import console
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.core import table_names as TABLE
from workflow_scripts.study.checks import check_config
from workflow_scripts.study.build import build_study
from workflow_scripts.runtime.config_sources import check_profile_configfiles, files_read, sources_line

# The console of a run in one screen (workflow_scripts/runtime/console.py): a long job table as jobs per stage,
# and no CalledProcessError for a failed job of the project's script (onerror's block tells its failure).
# Main process only: a cluster job's own Snakemake keeps its output whole in the job's log.
if workflow.exec_mode == ExecMode.DEFAULT:
    console.install(logger, workflow, warn=logger.warning)

# Which config files this run reads, in order, on its first line (and in the report); a --configfile that would
# silently replace a profile's study config is refused (workflow_scripts/runtime/config_sources.py).
CONFIG_FILES = files_read(Path(workflow.basedir) / "config.yaml", workflow.overwrite_configfiles)
if workflow.exec_mode == ExecMode.DEFAULT:
    try:
        check_profile_configfiles(sys.argv[1:], workflow.overwrite_configfiles)
    except ConfigError as error:
        raise WorkflowError(str(error)) from None
    logger.info(sources_line(CONFIG_FILES, workflow.config_settings.config))

# The config check (workflow_scripts/study/checks/): --config text read as the schema's types, readable errors
# (key, problem, fix), the defaults filled in by Snakemake's own validate(), then what the schema cannot express.
try:
    check_config(config, gpu_memory=workflow.exec_mode == ExecMode.DEFAULT)
    STUDY = build_study(config)
except ConfigError as error:
    raise WorkflowError(str(error)) from None
config["_files_read"] = CONFIG_FILES  # for the report's first page (report/report_workflow.rst); not a setting

for _note in STUDY.notes:
    logger.warning(_note)


# A model name is one plain folder name (workflow_scripts/study/checks/path_names.py checks the config's before this);
# the analyses' {model} is a subject: the model, or MODEL@SIGNAL (workflow_scripts/core/subjects.py).
wildcard_constraints:
    split="[a-z_]+",
    task="[a-z][a-z0-9]*",
    treebank="[a-z][a-z0-9]*",
    model="[A-Za-z0-9][A-Za-z0-9._+-]*(@(norm|rollout))?",
    series="[A-Za-z0-9][A-Za-z0-9._+-]*",
    corpus="[a-z0-9]+",
    checkpoint="[^/]+",
    shard="shard-[0-9]{4}-of-[0-9]{4}",
    shard_group="shards?-[0-9]{4}(-[0-9]{4})?-of-[0-9]{4}",
