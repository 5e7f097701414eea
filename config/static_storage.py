"""Production's static files storage (WhiteNoise's compressed manifest storage) with each file's
URL worked out once per process. The manifest is read when the process starts and does not change
while it runs, but `{% static %}` looked the name up in it again on every use (the name cleaned,
split, hashed and joined to STATIC_URL): a survey page uses it a dozen to twenty times."""

from __future__ import annotations

from django.conf import settings
from whitenoise.storage import CompressedManifestStaticFilesStorage  # type: ignore[import-untyped]


class KeptURLsStaticFilesStorage(CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._urls: dict[str, str] = {}

    def url(self, name: str | None, force: bool = False) -> str:
        if force or settings.DEBUG or name is None:
            return super().url(name, force)
        url = self._urls.get(name)
        if url is None:
            url = self._urls[name] = super().url(name)  # a name not in the manifest raises, kept nowhere
        return url
