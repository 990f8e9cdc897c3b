"""``python -m workflow_scripts.study.forecast``: the plan of a study before it runs (plan.py is the command line)."""

import sys

from .plan import main

sys.exit(main())
