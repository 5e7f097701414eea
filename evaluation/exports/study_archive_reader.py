"""Reading a study archive within bounds: the zip's members are checked against the limits by the
sizes the zip declares before anything is inflated, and every member is read as a stream whose
inflated bytes are counted as they come, so that a small file inflating to gigabytes (a "zip
bomb") is refused after at most a limit's worth of work and memory, never read whole.

Limits (RADLAY_FILE_LIMITS, docs/configuration.md): archive_member_mb (one member, inflated),
archive_total_mb (all members, inflated), archive_row_mb (one row of a table). A member holds
one JSON row a line (version 2) or one JSON array (version 1, read row by row with the same bounds).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from django.conf import settings

MB = 1024 * 1024
CHUNK = 64 * 1024
_SEPARATORS = re.compile(r"[\s\[\],]*")


class ArchiveError(ValueError):
    """The file is not a radlay study archive this version can read; the message says what."""


@dataclass(frozen=True)
class ArchiveLimits:
    member_bytes: int
    total_bytes: int
    row_bytes: int

    @classmethod
    def from_settings(cls) -> ArchiveLimits:
        return cls(
            member_bytes=settings.RADLAY_FILE_LIMITS.archive_member_mb * MB,
            total_bytes=settings.RADLAY_FILE_LIMITS.archive_total_mb * MB,
            row_bytes=settings.RADLAY_FILE_LIMITS.archive_row_mb * MB,
        )


def _mb(n: int) -> str:
    return f"{n / MB:,.0f} MB" if n >= MB else f"{n:,} bytes"


class BoundedArchive:
    """An open zip file whose members are read as bounded streams of rows."""

    def __init__(self, archive_file: IO[bytes], limits: ArchiveLimits | None = None):
        self.limits = limits or ArchiveLimits.from_settings()
        try:
            self.zip = zipfile.ZipFile(archive_file)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
            raise ArchiveError("not a radlay study archive: the file is not a zip file") from None
        self.inflated = 0
        declared = 0
        for info in self.zip.infolist():
            if info.file_size > self.limits.member_bytes:
                raise ArchiveError(
                    f"{info.filename} inflates to {_mb(info.file_size)}, more than the "
                    f"{_mb(self.limits.member_bytes)} a member may hold "
                    "(RADLAY_FILE_LIMITS.archive_member_mb)"
                )
            declared += info.file_size
        if declared > self.limits.total_bytes:
            raise ArchiveError(
                f"the archive inflates to {_mb(declared)}, more than the {_mb(self.limits.total_bytes)} "
                "an archive may hold (RADLAY_FILE_LIMITS.archive_total_mb)"
            )

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> BoundedArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def has(self, name: str) -> bool:
        try:
            self.zip.getinfo(name)
        except KeyError:
            return False
        return True

    def chunks(self, name: str) -> Iterator[bytes]:
        """The member's inflated bytes in chunks, counted against the member and total limits as
        they are inflated (whatever the zip declared)."""
        try:
            member = self.zip.open(name)
        except KeyError:
            raise ArchiveError(f"the archive has no {name}") from None
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:
            raise ArchiveError(f"{name} cannot be read: {exc}") from None
        read = 0
        with member:
            while True:
                try:
                    chunk = member.read(CHUNK)
                except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                    raise ArchiveError(f"{name} is damaged: {exc}") from None
                if not chunk:
                    return
                read += len(chunk)
                self.inflated += len(chunk)
                if read > self.limits.member_bytes:
                    raise ArchiveError(
                        f"{name} inflates to more than the {_mb(self.limits.member_bytes)} a member "
                        "may hold (RADLAY_FILE_LIMITS.archive_member_mb)"
                    )
                if self.inflated > self.limits.total_bytes:
                    raise ArchiveError(
                        f"the archive inflates to more than the {_mb(self.limits.total_bytes)} an "
                        "archive may hold (RADLAY_FILE_LIMITS.archive_total_mb)"
                    )
                yield chunk

    def json_document(self, name: str) -> Any:
        """A small member (the manifest) read as one JSON document, within the row limit."""
        data = bytearray()
        for chunk in self.chunks(name):
            data += chunk
            if len(data) > self.limits.row_bytes:
                raise ArchiveError(f"{name} is larger than {_mb(self.limits.row_bytes)}")
        try:
            return json.loads(bytes(data))
        except ValueError as exc:
            raise ArchiveError(f"{name} is not JSON: {exc}") from None

    def rows(self, name: str) -> Iterator[dict[str, Any]]:
        """The member's rows, one dict at a time: JSON Lines, or one JSON array of objects."""
        decoder = json.JSONDecoder()
        text = io.TextIOWrapper(
            io.BufferedReader(_ChunkStream(self.chunks(name))), encoding="utf-8", newline=""
        )
        buffer, pos, number, at_end = "", 0, 0, False
        try:
            while True:
                # Skip separators: whitespace, an array's brackets and commas.
                pos = _separators_end(buffer, pos)
                if pos < len(buffer):
                    try:
                        row, end = decoder.raw_decode(buffer, pos)
                    except json.JSONDecodeError as exc:
                        if at_end:
                            raise ArchiveError(f"{name}, row {number + 1}: not JSON ({exc.msg})") from None
                        if len(buffer) - pos > self.limits.row_bytes:
                            raise self._row_too_large(name, number + 1) from None
                    else:
                        number += 1
                        if end - pos > self.limits.row_bytes:
                            raise self._row_too_large(name, number)
                        if not isinstance(row, dict):
                            raise ArchiveError(f"{name}, row {number}: not a JSON object")
                        pos = end
                        yield row
                        continue
                elif at_end:
                    return
                more = text.read(CHUNK)
                at_end = not more
                buffer, pos = buffer[pos:] + more, 0
        except UnicodeDecodeError:
            raise ArchiveError(f"{name}: not UTF-8 text") from None

    def _row_too_large(self, name: str, number: int) -> ArchiveError:
        return ArchiveError(
            f"{name}, row {number}: larger than {_mb(self.limits.row_bytes)} "
            "(RADLAY_FILE_LIMITS.archive_row_mb)"
        )


def _separators_end(buffer: str, pos: int) -> int:
    """Where the separators (whitespace, an array's brackets and commas) at `pos` end."""
    found = _SEPARATORS.match(buffer, pos)
    return found.end() if found else pos


class _ChunkStream(io.RawIOBase):
    """A readable binary stream over an iterator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]):
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:  # type: ignore[no-untyped-def]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(target), len(self._pending))
        target[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n
