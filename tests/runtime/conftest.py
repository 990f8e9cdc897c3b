"""What the runtime's tests share."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture
def job_logging():
    """The entry points' log handlers (a job's log file) removed after the test, and logging's raising restored."""
    yield
    logging.raiseExceptions = True
    logger = logging.getLogger("workflow_scripts")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
