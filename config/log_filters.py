"""Logging filter that keeps survey tokens out of the logs. A participant's token is their login:
Django logs the path of every 4xx/5xx response ("Not Found: /l/<token>/…"), which would put live
tokens into log files and log collectors."""

from __future__ import annotations

import logging
import re

# The survey URLs: /s/<token>/ (entry), /l/<token>/ (lay), /r/<token>/ (radiologist).
TOKEN_IN_PATH = re.compile(r"/(s|l|r)/[A-Za-z0-9_-]{16,}")
REDACTED = r"/\1/[token]"


def redact(text: str) -> str:
    return TOKEN_IN_PATH.sub(REDACTED, text)


class RedactSurveyTokens(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, ()
        request = getattr(record, "request", None)
        if request is not None and TOKEN_IN_PATH.search(getattr(request, "path", "")):
            # Handlers that format the request (e.g. AdminEmailHandler) must not see it either.
            record.request = None
        return True
