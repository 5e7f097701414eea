"""Production's static storage (config/static_storage.py) gives the URLs WhiteNoise's manifest storage
gives, worked out once: the hashed name from the manifest, the plain name under DEBUG, and a name
the manifest lacks refused every time."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from whitenoise.storage import CompressedManifestStaticFilesStorage

from config.static_storage import KeptURLsStaticFilesStorage


@pytest.fixture
def collected(tmp_path):
    manifest = {"paths": {"radlay/survey.css": "radlay/survey.0123abcd.css"}, "version": "1.1", "hash": "x"}
    (tmp_path / "staticfiles.json").write_text(json.dumps(manifest))
    return tmp_path


@pytest.mark.parametrize("debug", [False, True])
def test_the_same_urls_as_whitenoises_storage(collected, debug):
    with override_settings(DEBUG=debug, STATIC_URL="/static/"):
        kept = KeptURLsStaticFilesStorage(location=collected, base_url="/static/")
        theirs = CompressedManifestStaticFilesStorage(location=collected, base_url="/static/")
        expected = "/static/radlay/survey.css" if debug else "/static/radlay/survey.0123abcd.css"
        for _ in range(2):  # the second time from what was kept
            assert kept.url("radlay/survey.css") == theirs.url("radlay/survey.css") == expected


def test_a_name_not_in_the_manifest_is_refused_every_time(collected):
    with override_settings(DEBUG=False, STATIC_URL="/static/"):
        kept = KeptURLsStaticFilesStorage(location=collected, base_url="/static/")
        for _ in range(2):
            with pytest.raises(ValueError, match="Missing staticfiles manifest entry"):
                kept.url("radlay/missing.css")
