"""attention-atlas: the science behind the Snakemake workflow, as plain functions.

Nothing in this package imports Snakemake; rules reach it through
``workflow_scripts.entrypoints``.
"""

__version__ = "0.1.0"
