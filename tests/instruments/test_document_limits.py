"""An instrument document's size and nesting are bounded before it is parsed
(instruments/document_limits.py): each refusal within a second and in bounded memory, however the
document nests; every shipped preset stays within the bounds."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from instruments.document_limits import MAX_NESTING, DocumentRefused, document_load
from instruments.presets import preset_names, preset_path
from instruments.validation import InstrumentError, instrument_from_json, instrument_from_yaml

DEPTH = 100_000
DEEP_YAML = {
    "flow lists": "[" * DEPTH + "]" * DEPTH,
    "flow mappings": "{a: " * DEPTH + "1" + "}" * DEPTH,
    "block lists": "- " * DEPTH + "x\n",
    "block mappings": "".join(" " * i + f"k{i}:\n" for i in range(1500)) + " " * 1500 + "x\n",
    "deep after a long flat list": "items: [" + "a, " * 50_000 + "]\nz: " + "[" * DEPTH + "]" * DEPTH,
}


def _refused_cheaply(run) -> Exception:
    # The CPU this process spent (not the wall clock, which other jobs on a busy machine stretch).
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises((DocumentRefused, InstrumentError)) as caught:
            run()
        elapsed = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 1.0, f"refused after {elapsed:.2f} s of CPU"
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
    return caught.value


@pytest.mark.parametrize("shape", list(DEEP_YAML))
def test_a_deeply_nested_yaml_is_refused_within_a_second(shape):
    error = _refused_cheaply(lambda: instrument_from_yaml(DEEP_YAML[shape], max_bytes=5_000_000))
    assert f"nests more than {MAX_NESTING} levels" in str(error)


def test_a_deeply_nested_json_is_refused_within_a_second():
    for text in ("[" * DEPTH + "]" * DEPTH, '{"a": ' * 900 + "1" + "}" * 900):
        error = _refused_cheaply(lambda text=text: instrument_from_json(text, max_bytes=5_000_000))
        assert f"nests more than {MAX_NESTING} levels" in str(error)


@pytest.mark.parametrize("file_format", ["yaml", "json"])
def test_a_document_past_its_size_is_refused_before_it_is_read(file_format):
    text = "x" * 2_000_001
    error = _refused_cheaply(lambda: document_load(text, file_format=file_format, max_bytes=1_000_000))
    assert "2,000,001 bytes; at most 1,000,000" in str(error)
    # Bytes, not characters: 400,000 two-byte characters are 800,000 bytes.
    with pytest.raises(DocumentRefused, match="800,002 bytes"):
        document_load('"' + "é" * 400_000 + '"', file_format=file_format, max_bytes=500_000)


def test_documents_within_the_bounds_read_as_before():
    text = "a:\n  b: [1, {c: d}]\n"
    assert document_load(text, file_format="yaml", max_bytes=100) == {"a": {"b": [1, {"c": "d"}]}}
    assert document_load(json.dumps({"a": [[1]]}), file_format="json", max_bytes=None) == {"a": [[1]]}
    nested = "[" * MAX_NESTING + "]" * MAX_NESTING
    assert document_load(nested, file_format="yaml", max_bytes=None) is not None
    with pytest.raises(DocumentRefused, match="not valid YAML"):
        document_load("key: [unclosed", file_format="yaml", max_bytes=None)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_is_within_the_bounds(name):
    path = preset_path(name)
    document_load(path.read_text(encoding="utf-8"), file_format="yaml", max_bytes=1_000_000)
