"""gunicorn's logger with the access log redacted: survey tokens in paths (/s/, /l/, /r/<token>/),
in redirects' Location and in the Referer, and the recruiter's PROLIFIC_PID, STUDY_ID and
SESSION_ID in query strings never reach the log (config.log_filters.redact).

gunicorn writes no access log unless asked (--access-logfile); the compose file runs gunicorn
with `--logger-class config.gunicorn_logging.RedactingLogger`, so an access log switched on later
is redacted whatever its format (every atom is redacted, headers included)."""

from __future__ import annotations

from gunicorn.glogging import Logger  # type: ignore[import-untyped]

from config.log_filters import redact


class RedactingLogger(Logger):
    def atoms(self, resp, req, environ, request_time) -> dict:
        atoms = super().atoms(resp, req, environ, request_time)
        return {name: redact(value) if isinstance(value, str) else value for name, value in atoms.items()}
