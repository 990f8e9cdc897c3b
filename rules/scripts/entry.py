# The one script every rule runs: it makes the workflow's package importable (also
# inside a per-rule conda env) and hands the job to workflow_scripts.entrypoints, in a
# copy of the run's warm server where there is one (workflow_scripts/core/warm_start.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1]))  # noqa: F821

from workflow_scripts.core.warm_start import run_warm  # noqa: E402 - the standard library only

run_warm(sys.argv[0])  # Snakemake's copy of this script, its preamble first; returns where the job runs here

from workflow_scripts.entrypoints import run  # noqa: E402

run(snakemake)  # noqa: F821
