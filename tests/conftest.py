import os
from pathlib import Path

import pytest
from django.conf import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def release_dir() -> Path:
    """The authors' 2024 release, read in place from ../shared (never copied into the repo).
    Tests that need it skip cleanly when it is absent (RADLAY_RELEASE_DIR to point elsewhere)."""
    path = Path(settings.RADLAY_RELEASE_DIR)
    if not (path / "Original_setences_with_generated_simplifications.csv").is_file():
        pytest.skip(f"the 2024 release is not available at {path} (set RADLAY_RELEASE_DIR)")
    return path
