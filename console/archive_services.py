"""Importing a study archive from the console: the uploaded zip is kept in a staging folder under
MEDIA_ROOT while its manifest is shown, then imported on confirmation by the same service as
`manage.py import_study_archive` (evaluation.exports.study_archive.study_archive_import), all or nothing.
A staged file is named by a random token the uploader's session holds; it is removed after the
import, after a refusal, and when older than a day."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile

from annotation.models import Study
from evaluation.exports.study_archive import (
    ArchiveDatabaseError,
    ArchiveError,
    ArchiveManifest,
    study_archive_import,
    study_archive_manifest,
)

STAGING = "archive-imports"
STALE_SECONDS = 24 * 60 * 60


def _staging_dir() -> Path:
    folder = Path(settings.MEDIA_ROOT) / STAGING
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def staged_path(token: str) -> Path | None:
    """The staged file of `token`, or None when the token is malformed or its file is gone."""
    if not (isinstance(token, str) and len(token) == 32 and all(c in "0123456789abcdef" for c in token)):
        return None
    path = _staging_dir() / f"{token}.zip"
    return path if path.is_file() else None


def staged_discard(token: str) -> None:
    path = staged_path(token)
    if path is not None:
        path.unlink(missing_ok=True)


def _stale_discard() -> None:
    cutoff = time.time() - STALE_SECONDS
    for path in _staging_dir().glob("*.zip"):
        if path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)


def archive_stage(*, uploaded_file: UploadedFile) -> tuple[str, ArchiveManifest]:
    """Keep the uploaded archive (streamed to disk in chunks) and read its manifest within the
    limits; returns the staging token and the manifest. ValidationError names `file`."""
    name = Path(uploaded_file.name or "").name or "The file"
    if Path(name).suffix.lower() != ".zip":
        raise ValidationError(
            {"file": f"{name}: a study archive is a .zip file (the dashboard's “Study archive”)."}
        )
    limit = settings.RADLAY_FILE_LIMITS.upload_mb * 1024 * 1024
    if uploaded_file.size and uploaded_file.size > limit:
        largest = settings.RADLAY_FILE_LIMITS.upload_mb
        raise ValidationError({"file": f"{name} is larger than {largest} MB (RADLAY_FILE_LIMITS.upload_mb)."})
    _stale_discard()
    token = secrets.token_hex(16)
    path = _staging_dir() / f"{token}.zip"
    with path.open("wb") as out:
        for chunk in uploaded_file.chunks():
            out.write(chunk)
    try:
        with path.open("rb") as handle:
            manifest = study_archive_manifest(archive_file=handle)
    except ArchiveError as exc:
        path.unlink(missing_ok=True)
        raise ValidationError({"file": f"{name}: {exc}."}) from None
    return token, manifest


def staged_manifest(*, token: str) -> ArchiveManifest:
    path = staged_path(token)
    if path is None:
        raise ValidationError({"file": "The uploaded archive is no longer here: upload it again."})
    with path.open("rb") as handle:
        try:
            return study_archive_manifest(archive_file=handle)
        except ArchiveError as exc:
            raise ValidationError({"file": f"{exc}."}) from None


def free_slug(slug: str) -> str:
    """`slug`, or the first of slug-copy, slug-copy-2, … not taken here."""
    candidate, n = slug, 1
    while Study.objects.filter(slug=candidate).exists():
        candidate = f"{slug}-copy" if n == 1 else f"{slug}-copy-{n}"
        n += 1
    return candidate


def staged_import(*, token: str, slug: str, user: Any) -> Study:
    """Import the staged archive under `slug` with `user` as its owner, all or nothing, and remove
    the staged file. ValidationError names `slug` (taken), `file` (the archive's fault) or none
    (the database refused)."""
    path = staged_path(token)
    if path is None:
        raise ValidationError({"file": "The uploaded archive is no longer here: upload it again."})
    if Study.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": f"A study with slug {slug!r} exists here: choose another."})
    try:
        with path.open("rb") as handle:
            study = study_archive_import(archive_file=handle, slug=slug, researcher=user, actor=user)
    except ArchiveError as exc:
        raise ValidationError({"file": f"{exc}; nothing was imported."}) from None
    except ArchiveDatabaseError as exc:
        raise ValidationError(f"Database error: {exc}; nothing was imported.") from None
    path.unlink(missing_ok=True)
    return study
