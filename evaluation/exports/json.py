"""JSON export: one array of objects (column → value), streamed element by element."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, BinaryIO

CONTENT_TYPE = "application/json"
EXTENSION = "json"
_BATCH = 500


def json_chunks(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[bytes]:
    """`[`, the objects separated by commas, `]`: valid JSON however many rows there are."""
    yield b"[\n"
    parts: list[str] = []
    first = True
    for row in rows:
        text = json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False, default=str)
        parts.append(text if first else ",\n" + text)
        first = False
        if len(parts) >= _BATCH:
            yield "".join(parts).encode("utf-8")
            parts = []
    if parts:
        yield "".join(parts).encode("utf-8")
    yield b"\n]\n"


def write(rows: Iterable[Sequence[Any]], columns: Sequence[str], out: BinaryIO) -> None:
    for chunk in json_chunks(rows, columns):
        out.write(chunk)


def stream(rows: Iterable[Sequence[Any]], columns: Sequence[str]) -> Iterator[bytes]:
    return json_chunks(rows, columns)
