"""The console's instrument editor refuses a document past its size or nesting before parsing it
(instruments/document_limits.py), by name, never a 500, and saves nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.instrument_services import instrument_revision
from tests.console.test_instrument_editor import URL, _row, editing  # noqa: F401 - fixture

DEPTH = 100_000


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        ("deep.yaml", b"[" * DEPTH + b"]" * DEPTH, "nests more than 16 levels"),
        ("deep.yaml", b"- " * DEPTH + b"x\n", "nests more than 16 levels"),
        ("deep.json", b"[" * DEPTH + b"]" * DEPTH, "nests more than 16 levels"),
    ],
)
def test_a_deep_document_is_refused_by_name_and_nothing_saved(client, editing, name, body, expected):  # noqa: F811
    row = _row(editing)
    upload = SimpleUploadedFile(name, body)
    response = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "file": upload})
    assert response.status_code == 400
    assert expected in response.content.decode()
    assert _row(editing).fingerprint == row.fingerprint


def test_the_size_limit_is_the_setting(client, editing, settings):  # noqa: F811
    settings.RADLAY_FILE_LIMITS = replace(settings.RADLAY_FILE_LIMITS, instrument_bytes=1000)
    row = _row(editing)
    text = "key: x\n" + "# padding\n" * 200
    response = client.post(URL, {"op": "definition", "based_on": instrument_revision(row), "document": text})
    assert response.status_code == 400
    assert "at most 1,000 are accepted" in response.content.decode()
