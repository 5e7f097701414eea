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


@pytest.fixture
def external_calls_approved(settings, monkeypatch):
    """Studies without a data policy of their own are treated, by the real gate, as if an owner
    had approved the configured OpenAI-compatible server (external-approved with the current
    OPENAI_BASE_URL), so that tests about something else than the data policy reach their
    scripted server. Studies with a policy row keep theirs."""
    from privacy import gate
    from privacy.models import DataPolicy

    stored = gate.data_policy_of

    def policy_of(*, study):
        row = DataPolicy.objects.filter(study=study).first()
        if row is not None:
            return stored(study=study)
        return DataPolicy(
            study=study, policy="external-approved", endpoint=(settings.OPENAI_BASE_URL or "").rstrip("/")
        )

    monkeypatch.setattr(gate, "data_policy_of", policy_of)
