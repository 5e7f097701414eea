"""Readers for parallel simplification corpora: (source, simplification) pairs to fine-tune on.

Two formats are read; every error names the file and the 1-based line number.

**JSONL** (`.jsonl`, `.json` with one object per line): one object per line,
``{"source": "...", "target": "..."}``; ``target`` may also be a non-empty list of strings (several
reference simplifications of the same source). Blank lines are skipped; other keys are ignored.

**MedLane text** (`.txt`; Luo et al., COLING 2022, github.com/machinelearning4health/MedLane): blocks
separated by one or more blank lines. In each block the first line is the source (a sentence from a
MIMIC-III discharge summary, lower-cased and tokenised with spaces) and every following line is one
simplification of it::

    pt was restarted on diuresis to help mobilize fluid .
    patient was restarted on medicine that makes body produce more pee to help mobilize fluid .
    you were restarted on medicine that makes body produce more pee to help mobilize fluid .

The test split's target lines carry an annotation-variant number and a space in front
(``1 ``…``4 ``: 1/2 third-person with abbreviations glossed or replaced, 3/4 the same addressed to
the patient); when every target line of the file starts that way (or ``numbered_targets=True``)
the number is stripped. Target lines may keep an abbreviation with its expansion in square
brackets, ``pt[patient]``; by default (``glosses="expand"``) the pair is replaced by the expansion,
which is what MedLane's own evaluation compares against; ``glosses="keep"`` leaves the text as is.
Identical target lines within a block (the test split repeats a variant when there is only one)
are kept once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class SimplificationPair:
    """One training example: a source text and one simplification of it."""

    source: str
    target: str


@dataclass(frozen=True)
class CorpusRecord:
    """A source with all its reference simplifications, and where it was read from."""

    source: str
    targets: tuple[str, ...]
    line: int = 0  # 1-based line of the source in its file; 0 when not read from a file
    metadata: dict = field(default_factory=dict, compare=False, hash=False)


class CorpusFormatError(ValueError):
    """A corpus file is malformed. `path` and `line` (1-based) say where."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None):
        self.path = str(path) if path is not None else None
        self.line = line
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(f"{where}{message}")


_VARIANT_PREFIX = re.compile(r"^[1-9] (?=\S)")
# "abbr[expansion]": a token directly followed by a bracketed gloss.
_GLOSS = re.compile(r"(\S+?)\[([^\[\]]+)\]")


def _read_lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CorpusFormatError("file not found", path=path) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusFormatError(f"not valid UTF-8 ({exc.reason})", path=path, line=line) from None
    return text.splitlines()


def _expand_glosses(text: str, *, path: Path, line: int) -> str:
    if text.count("[") != text.count("]"):
        raise CorpusFormatError("unbalanced square brackets in a glossed abbreviation", path=path, line=line)
    return _GLOSS.sub(lambda m: m.group(2).strip(), text)


def _medlane_blocks(path: Path) -> list[list[tuple[int, str]]]:
    """The file's blocks of non-blank (line number, text) lines, a source and its simplifications
    each; refused when there is none or when a source has no simplification after it."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for number, raw in enumerate(_read_lines(path), start=1):
        text = raw.strip()
        if not text:
            if current:
                blocks.append(current)
                current = []
            continue
        current.append((number, text))
    if current:
        blocks.append(current)
    if not blocks:
        raise CorpusFormatError("no source/simplification blocks found (empty file)", path=path)

    for block in blocks:
        if len(block) < 2:
            number, text = block[0]
            raise CorpusFormatError(
                f"source line has no simplification lines after it (blocks are separated by a blank line): "
                f"{text[:60]!r}",
                path=path,
                line=number,
            )
    return blocks


def read_medlane(
    path: str | Path,
    *,
    numbered_targets: bool | None = None,
    glosses: Literal["expand", "keep"] = "expand",
) -> list[CorpusRecord]:
    """Read a MedLane-format text file (see the module docstring) into records.

    `numbered_targets=None` detects the test split's ``1 ``…``4 `` prefixes: they are stripped only
    when every target line in the file carries one, so a training file whose simplification happens
    to start with a digit is read unchanged.
    """
    path = Path(path)
    blocks = _medlane_blocks(path)
    target_lines = [(n, t) for block in blocks for n, t in block[1:]]
    if numbered_targets is None:
        numbered_targets = all(_VARIANT_PREFIX.match(t) for _, t in target_lines)
    elif numbered_targets:
        for number, text in target_lines:
            if not _VARIANT_PREFIX.match(text):
                raise CorpusFormatError(
                    "expected a numbered target line ('1 ', '2 ', … then the text)", path=path, line=number
                )

    records: list[CorpusRecord] = []
    for block in blocks:
        source_line, source = block[0]
        targets: list[str] = []
        for number, text in block[1:]:
            if numbered_targets:
                text = text[2:].strip()
            if glosses == "expand":
                text = _expand_glosses(text, path=path, line=number)
            if text and text not in targets:
                targets.append(text)
        records.append(CorpusRecord(source=source, targets=tuple(targets), line=source_line))
    return records


def read_jsonl(path: str | Path) -> list[CorpusRecord]:
    """Read JSONL objects ``{"source": str, "target": str | [str, ...]}`` into records."""
    path = Path(path)
    records: list[CorpusRecord] = []
    for number, raw in enumerate(_read_lines(path), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise CorpusFormatError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number
            ) from None
        if not isinstance(obj, dict):
            raise CorpusFormatError(
                f"expected a JSON object, got {type(obj).__name__}", path=path, line=number
            )
        missing = [key for key in ("source", "target") if key not in obj]
        if missing:
            raise CorpusFormatError(f"missing key(s) {', '.join(missing)}", path=path, line=number)
        source, target = obj["source"], obj["target"]
        if not isinstance(source, str) or not source.strip():
            raise CorpusFormatError("'source' must be a non-empty string", path=path, line=number)
        targets = [target] if isinstance(target, str) else target
        if (
            not isinstance(targets, list)
            or not targets
            or not all(isinstance(t, str) and t.strip() for t in targets)
        ):
            raise CorpusFormatError(
                "'target' must be a non-empty string or a non-empty list of non-empty strings",
                path=path,
                line=number,
            )
        extra = {k: v for k, v in obj.items() if k not in ("source", "target")}
        records.append(
            CorpusRecord(
                source=source.strip(),
                targets=tuple(dict.fromkeys(t.strip() for t in targets)),
                line=number,
                metadata=extra,
            )
        )
    if not records:
        raise CorpusFormatError("no records found (empty file)", path=path)
    return records


def read_corpus(path: str | Path) -> list[CorpusRecord]:
    """Read a corpus file, choosing the reader by extension: .jsonl/.json → JSONL, .txt → MedLane."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return read_jsonl(path)
    if suffix == ".txt":
        return read_medlane(path)
    raise CorpusFormatError(
        "unknown corpus format: use .jsonl ({source, target} per line) or MedLane .txt", path=path
    )


def records_to_pairs(
    records: Iterable[CorpusRecord], *, targets: Literal["all", "first"] = "all"
) -> list[SimplificationPair]:
    """Flatten records into training pairs: one per (source, target), or only each first target."""
    pairs: list[SimplificationPair] = []
    for record in records:
        chosen: Sequence[str] = record.targets if targets == "all" else record.targets[:1]
        pairs.extend(SimplificationPair(record.source, t) for t in chosen)
    return pairs


def pairs_to_records(pairs: Iterable[SimplificationPair | tuple[str, str]]) -> list[CorpusRecord]:
    """Group pairs by source (first-seen order) so a source's references stay together."""
    grouped: dict[str, list[str]] = {}
    for pair in pairs:
        source, target = (pair.source, pair.target) if isinstance(pair, SimplificationPair) else pair
        targets = grouped.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return [CorpusRecord(source=s, targets=tuple(t)) for s, t in grouped.items()]


def iter_pairs(path: str | Path, *, targets: Literal["all", "first"] = "all") -> Iterator[SimplificationPair]:
    """Pairs of a corpus file (see `read_corpus`)."""
    yield from records_to_pairs(read_corpus(path), targets=targets)
