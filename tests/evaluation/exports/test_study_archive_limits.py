"""A study archive's bounds: a small file whose member inflates to 1.6 GB (a zip bomb) is refused
within a second with bounded memory, whether the zip declares the size or hides it; a member, the
whole archive and a row over their limits are refused naming the setting; nothing is imported."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
import zlib
from dataclasses import replace

import pytest

from annotation.models import Study
from evaluation.exports.study_archive import study_archive_import, study_archive_manifest, study_archive_write
from evaluation.exports.study_archive_reader import CHUNK, ArchiveError, ArchiveLimits, BoundedArchive

pytestmark = pytest.mark.django_db
GB16 = 1600 * 1024 * 1024


def _deflated_zeros(total: int) -> bytes:
    """A raw deflate stream of `total` zero bytes, built from one compressed MiB repeated (a fully
    flushed block restarts without history, so every MiB compresses to the same bytes)."""
    mib = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    compressor.compress(mib)
    compressor.flush(zlib.Z_FULL_FLUSH)
    block = compressor.compress(mib) + compressor.flush(zlib.Z_FULL_FLUSH)
    return block * (total >> 20) + compressor.flush()


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip of already deflated members: (name, deflated data, declared size, crc)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, size, crc in members:
        offset = out.tell()
        encoded = name.encode()
        out.write(
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size, len(encoded), 0)
        )
        out.write(encoded + data)
        central.write(
            struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), size,
                        len(encoded), 0, 0, 0, 0, 0, offset) + encoded
        )  # fmt: skip
    start = out.tell()
    out.write(central.getvalue())
    out.write(
        struct.pack(
            "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central.getvalue()), start, 0
        )
    )
    return out.getvalue()


@pytest.fixture(scope="module")
def bomb_data() -> bytes:
    return _deflated_zeros(GB16)


def _manifest() -> tuple[str, bytes, int, int]:
    text = b'{"format": "radlay-study-archive", "version": 2, "study": "bomb", "counts": {}}'
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return ("manifest.json", compressor.compress(text) + compressor.flush(), len(text), zlib.crc32(text))


def _refused_quickly(archive: bytes, match: str, limits: ArchiveLimits | None = None) -> None:
    """Refused with `match` within a second and 32 MB of Python memory, nothing imported."""
    studies = Study.objects.count()
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ArchiveError, match=match):
            study_archive_import(archive_file=io.BytesIO(archive), slug="bomb", limits=limits)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0, f"refused after {elapsed:.2f} s"
    assert peak < 32 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    assert Study.objects.count() == studies


def test_a_bomb_that_declares_its_size_is_refused_before_anything_is_inflated(bomb_data):
    archive = _zip([_manifest(), ("annotation.study.jsonl", bomb_data, GB16, 0)])
    assert len(archive) < 2 * 1024 * 1024
    _refused_quickly(
        archive, r"annotation.study.jsonl inflates to 1,600 MB, more than the 1,024 MB .*archive_member_mb"
    )
    with pytest.raises(ArchiveError, match="inflates to 1,600 MB"):
        study_archive_manifest(archive_file=io.BytesIO(archive))


def test_a_bomb_that_hides_its_size_is_refused_as_it_inflates(bomb_data):
    """The zip declares 100 bytes: the reader stops there, and the row limit ends the row."""
    archive = _zip([_manifest(), ("annotation.study.jsonl", bomb_data, 100, 0)])
    _refused_quickly(archive, r"annotation.study.jsonl (is damaged|, row 1)")


def test_the_inflated_bytes_are_counted_while_streaming_whatever_the_zip_declared():
    """The reader counts what actually comes out of a member, not only what the zip declares: a
    reader whose limit is below a member's declared size stops after a limit's worth of bytes."""
    data = _deflated_zeros(48 << 20)
    archive = _zip([_manifest(), ("annotation.study.jsonl", data, 48 << 20, 0)])
    reader = BoundedArchive(io.BytesIO(archive))
    reader.limits = ArchiveLimits(member_bytes=4 << 20, total_bytes=64 << 20, row_bytes=64 << 20)
    with pytest.raises(ArchiveError, match=r"inflates to more than the 4 MB a member may hold"):
        for _ in reader.chunks("annotation.study.jsonl"):
            pass
    assert reader.inflated <= (4 << 20) + CHUNK
    reader.limits = ArchiveLimits(member_bytes=64 << 20, total_bytes=8 << 20, row_bytes=64 << 20)
    reader.inflated = 0
    with pytest.raises(ArchiveError, match=r"more than the 8 MB an archive may hold"):
        for _ in reader.chunks("annotation.study.jsonl"):
            pass


def test_each_limit_is_refused_by_name(settings):
    study = Study.objects.create(slug="limits", title="L", description="x" * 10_000)
    buffer = io.BytesIO()
    study_archive_write(study=study, out=buffer)
    data = buffer.getvalue()
    settings.RADLAY_FILE_LIMITS = replace(settings.RADLAY_FILE_LIMITS, archive_total_mb=0)
    _refused_quickly(data, "RADLAY_FILE_LIMITS.archive_total_mb")
    settings.RADLAY_FILE_LIMITS = replace(
        settings.RADLAY_FILE_LIMITS, archive_total_mb=4096, archive_member_mb=0
    )
    _refused_quickly(data, "RADLAY_FILE_LIMITS.archive_member_mb")
    settings.RADLAY_FILE_LIMITS = replace(settings.RADLAY_FILE_LIMITS, archive_member_mb=1024)
    limits = ArchiveLimits(member_bytes=1 << 20, total_bytes=1 << 30, row_bytes=8192)
    _refused_quickly(data, r"annotation.study.jsonl, row 1: larger than 8,192 bytes", limits)
    assert not Study.objects.filter(slug="copy").exists()
    assert study_archive_import(archive_file=io.BytesIO(data), slug="copy").slug == "copy"
