"""Keeping survey tokens and recruiter IDs out of the logs. A participant's token is their login:
Django logs the path of every 4xx/5xx response ("Not Found: /l/<token>/…"), and an access log
records every URL, which would put live tokens into log files and log collectors. The recruiter's
PROLIFIC_PID, STUDY_ID and SESSION_ID in the recruitment link's query identify a person on
Prolific (and a PID with its SESSION_ID resumes them): they are redacted too.

`redact` is the one rule, used by the Django log filter below and by gunicorn's access log
(config/gunicorn_logging.py)."""

from __future__ import annotations

import logging
import re

# The survey URLs: /s/<token>/ (entry), /l/<token>/ (lay), /r/<token>/ (radiologist).
TOKEN_IN_PATH = re.compile(r"/(s|l|r)/[A-Za-z0-9_-]{16,}")
REDACTED = r"/\1/[token]"


# The recruitment link's parameters (surveys.lay.entry.RECRUITMENT_PARAMS), raw or URL-encoded
# after ? or &, up to the next parameter, space or quote.
RECRUITER_ID_IN_QUERY = re.compile(
    r"((?:^|[?&]|%26|%3F)(?:PROLIFIC_PID|STUDY_ID|SESSION_ID)(?:=|%3D))[^&\s\"']*", re.I
)


def redact(text: str) -> str:
    return RECRUITER_ID_IN_QUERY.sub(r"\1[redacted]", TOKEN_IN_PATH.sub(REDACTED, text))


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
