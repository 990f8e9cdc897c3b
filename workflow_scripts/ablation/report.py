"""The ablation stage's share of the report: ``head_disabling.csv`` and ``found_heads.csv`` (docs/ablation.md).

The stage answers no published number of the report's paper comparison and draws no summary panel: the
papers it follows (Michel et al. 2019, Kovaleva et al. 2019) are not among the report's published values.
"""

from __future__ import annotations

from ..report.items import StageReport

REPORT = StageReport(tables=("head_disabling", "found_heads"))
