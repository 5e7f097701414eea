"""Paths typed into the admin (model directories, corpora, output directories) must lie inside
RADLAY_MODEL_DIR: a staff user must not be able to make the server read or write anywhere else
(e.g. register /etc as a "model" or write checkpoints over the application). The command line is
not confined: whoever runs it already has the machine."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError


def model_dir_path(value: str) -> str:
    """`value` (absolute, or relative to RADLAY_MODEL_DIR) resolved, with symbolic links followed;
    ValidationError when it leaves RADLAY_MODEL_DIR."""
    root = Path(settings.RADLAY_MODEL_DIR).expanduser().resolve()
    path = Path(value).expanduser()
    resolved = (path if path.is_absolute() else root / path).resolve()
    if resolved != root and root not in resolved.parents:
        raise ValidationError(f"{value} is outside the model directory {root} (RADLAY_MODEL_DIR).")
    return str(resolved)
