"""Builders shared by the tests of several folders: tiny models, hand-built attention dumps and maps,
the tiny offline mirror, and where the repository and the optional real assets are.

pytest puts ``tests/`` on ``sys.path`` (``pythonpath`` in pyproject.toml), so a test imports these as
``from support.dumps import ...`` from any folder. Fixtures stay in conftest.py; everything else a
test shares lives here, never in another test file.
"""
