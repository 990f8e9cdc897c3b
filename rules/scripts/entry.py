# The one script every rule runs: it makes the workflow's package importable (also
# inside a per-rule conda env) and hands the job to workflow_scripts.entrypoints, in a
# copy of the run's warm server where there is one (workflow_scripts/runtime/warm_start.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1]))  # noqa: F821

from workflow_scripts.runtime.process_title import job_title, set_title  # noqa: E402 - setproctitle only
from workflow_scripts.runtime.warm_start import run_warm  # noqa: E402 - the standard library only

# Named after its job in ps and top, warm or cold (workflow_scripts/runtime/process_title.py).
TITLE = job_title(snakemake.rule, dict(snakemake.wildcards.items()))  # noqa: F821
set_title(TITLE)
run_warm(sys.argv[0], TITLE)  # Snakemake's copy of this script, its preamble first; returns where the job runs here

from workflow_scripts.entrypoints import run  # noqa: E402

run(snakemake)  # noqa: F821
