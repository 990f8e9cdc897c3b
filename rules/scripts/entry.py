# The one script every rule runs: it makes the workflow's package importable (also
# inside a per-rule conda env) and hands the job to workflow_scripts.entrypoints.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1]))  # noqa: F821

from workflow_scripts.entrypoints import run  # noqa: E402

run(snakemake)  # noqa: F821
