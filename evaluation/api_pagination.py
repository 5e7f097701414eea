"""Limit/offset paging of the research API with bounds: a limit or offset that is not an integer in
its range is a 400 naming the parameter, never a database error (PostgreSQL's LIMIT/OFFSET are
64-bit, and a huge page would be read whole)."""

from __future__ import annotations

from typing import Any

from django.core import signing
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 2**31 - 1
_CURSOR_SALT = "radlay.pagination.cursor"


def bounded_int(raw: str | None, *, name: str, default: int, minimum: int, maximum: int) -> int:
    """The query parameter `name` as an integer in [minimum, maximum]; absent → `default`."""
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ValidationError({name: f"must be an integer from {minimum} to {maximum}."}) from None
    if not minimum <= value <= maximum:
        raise ValidationError({name: f"must be an integer from {minimum} to {maximum}."})
    return value


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 100
    max_limit = 1000

    def get_limit(self, request) -> int:
        return bounded_int(
            request.query_params.get(self.limit_query_param),
            name=self.limit_query_param,
            default=self.default_limit,
            minimum=1,
            maximum=self.max_limit,
        )

    def get_offset(self, request) -> int:
        return bounded_int(
            request.query_params.get(self.offset_query_param),
            name=self.offset_query_param,
            default=0,
            minimum=0,
            maximum=MAX_OFFSET,
        )

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {
            self.limit_query_param: {"minimum": 1, "maximum": self.max_limit, "default": self.default_limit},
            self.offset_query_param: {"minimum": 0, "maximum": MAX_OFFSET, "default": 0},
        }
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters


def cursor_text(payload: Any) -> str:
    """An opaque, signed `cursor` parameter holding `payload` (JSON): a client can only send back
    what the API gave it."""
    return signing.dumps(payload, salt=_CURSOR_SALT, compress=True)


def cursor_payload(raw: str, *, name: str = "cursor") -> Any:
    """What `cursor_text` put in the parameter `name`; a 400 naming it for anything else."""
    try:
        return signing.loads(raw, salt=_CURSOR_SALT)
    except signing.BadSignature:
        raise ValidationError(
            {name: "is not a cursor this API gave (follow `next` or `previous`)."}
        ) from None
