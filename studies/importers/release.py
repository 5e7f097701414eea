"""The authors' release of seed 003's human evaluation (Yang, Cherian & Vucetic, ACL Findings 2024;
github.com/Ziyu-Yang/Human-Evaluation), read from its directory. Its README describes the files;
the quirks handled here:

- every file is UTF-8 with CRLF and quoted multi-line cells; some cells start with a newline
  (stripped); the simplifications file starts with a BOM;
- the radiologist file repeats the header `Comments` four times (read by position);
- `Plain_Rating` is the Plain_SC rating; ratings are "a;b;c;d;e" = correctness; completeness;
  no-harm (the paper's hallucination); structure; simplicity;
- severities are numbers 1 = Critical … 5 = Healthy;
- the lay files name Plain as "Dummy"; `CoT_BS;CoT_SC` is a text the two CoT systems share;
- the lay files' copy of a simplification sometimes has a final period the simplifications file
  lacks: the text is matched to its Version ignoring whitespace and final punctuation, and the
  simplifications file's text is the one stored;
- the release does not record the order in which panel 3 listed the texts (stored in system order).

Nothing is invented: an empty cell stays a missing answer.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from annotation import scales
from studies.importers.errors import ImportFormatError
from studies.importers.records import (
    ExpertJudgementRecord,
    ExpertRatingRecord,
    LayItemRecord,
    ParticipantRecord,
    ReleaseRecords,
    SimplificationRecord,
    SourceRecord,
    StudyRecords,
)

SIMPLIFICATIONS_FILE = "Original_setences_with_generated_simplifications.csv"
RADIOLOGIST_FILE = "Radiologist_human_evaluation_results.csv"
SEVERITY_FILE = "Severity_ratings_by_radiologist.csv"
LAY_FILE = "proc_laypeople{n}.csv"
LAY_PARTICIPANTS = 8

# Release column → radlay system key (the paper's names, lower-cased).
SYSTEMS = {"Plain_BS": "plain_bs", "Plain_SC": "plain_sc", "CoT_BS": "cot_bs", "CoT_SC": "cot_sc"}
SYSTEM_LABELS = {"plain_bs": "Plain_BS", "plain_sc": "Plain_SC", "cot_bs": "CoT_BS", "cot_sc": "CoT_SC"}
# Labels used by the lay files ("Dummy" = Plain).
VERSION_LABELS = {"Dummy_BS": "plain_bs", "Dummy_SC": "plain_sc", "CoT_BS": "cot_bs", "CoT_SC": "cot_sc"}
# Radiologist file: (text column, rating column, comment column) by position, per system.
RADIOLOGIST_COLUMNS = {
    "plain_bs": (1, 2, 3),
    "plain_sc": (4, 5, 6),
    "cot_bs": (7, 8, 9),
    "cot_sc": (10, 11, 12),
}
RADIOLOGIST_HEADER = [
    "Original Sentence",
    "Plain_BS",
    "Plain_BS_Rating",
    "Comments",
    "Plain_SC",
    "Plain_Rating",
    "Comments",
    "CoT_BS",
    "CoT_BS_Rating",
    "Comments",
    "CoT_SC",
    "CoT_SC_Rating",
    "Comments",
    "Own Simplification",
]
LAY_HEADER = [
    "Radiology Sentence",
    "Simplification in Stage2",
    "Version",
    "Stage1: You understand the meaning of the sentence.",
    "Stage1: Can you guess the level of severity of the medical condition described in the sentence?",
    "Stage1: Can you guess the medical urgency of the condition described in the sentence?",
    "Stage1: Make your best guess about the severity of the described medical condition.",
    "Stage2: You understand the meaning of the sentence.",
    "Stage2: Can you guess the level of severity of the medical condition described in the sentence?",
    "Stage2: Can you guess the medical urgency of the condition described in the sentence?",
    "Stage2: Has the simplified sentence improved your understanding of the original sentence?",
    "Stage2: Make your best guess about the severity of the described medical condition.",
    "Stage3: Which simplifications do you like the most?",
    "Stage3: Please provide your justification.",
    "Stage3: Which simplifications do you like the least?",
    "Stage3: Please provide your justification.",
]
# Lay column index → (phase, question)
LAY_QUESTIONS = {
    3: ("original", "understanding"),
    4: ("original", "confidence"),
    5: ("original", "urgency_confidence"),
    6: ("original", "severity_guess"),
    7: ("assisted", "understanding"),
    8: ("assisted", "confidence"),
    9: ("assisted", "urgency_confidence"),
    10: ("assisted", "helpfulness"),
    11: ("assisted", "severity_guess"),
}


def _clean(cell: str) -> str:
    return cell.strip()


def _loose(text: str) -> str:
    return " ".join(text.split()).rstrip(" .").lower()


def _read_rows(directory: Path, name: str, expected_header: list[str]) -> list[tuple[int, list[str]]]:
    path = directory / name
    if not path.is_file():
        raise ImportFormatError("file not found in the release directory.", file=name)
    text = path.read_bytes().decode("utf-8-sig")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise ImportFormatError(f"{exc}.", file=name, row=reader.line_num) from None
    if not rows:
        raise ImportFormatError("the file is empty.", file=name)
    header = [h.strip() for h in rows[0]]
    for index, expected in enumerate(expected_header):
        if index >= len(header):
            raise ImportFormatError(f"missing column {expected!r}.", file=name, row=1, column=expected)
        if header[index] != expected:
            raise ImportFormatError(
                f"expected column {expected!r} here, found {header[index]!r}.",
                file=name,
                row=1,
                column=expected,
            )
    numbered = []
    for number, cells in enumerate(rows[1:], start=2):
        if len(cells) != len(expected_header):
            raise ImportFormatError(
                f"{len(cells)} cells, expected {len(expected_header)}.", file=name, row=number
            )
        for index, cell in enumerate(cells):
            if "\x00" in cell:
                raise ImportFormatError(
                    "contains a NUL byte.", file=name, row=number, column=expected_header[index]
                )
        numbered.append((number, cells))
    return numbered


def read_release(directory: Path) -> ReleaseRecords:
    directory = Path(directory)
    if not directory.is_dir():
        raise ImportFormatError("not a directory.", file=str(directory))
    study = StudyRecords(systems=list(SYSTEMS.values()), system_labels=dict(SYSTEM_LABELS))
    texts = _sources_read(directory, study)
    radiologist = ParticipantRecord(role="radiologist", pseudonym="R001")
    _severity_read(directory, study, radiologist)
    _ratings_read(directory, study, radiologist, texts)
    lay_participants = [_lay_read(directory, study, texts, n) for n in range(1, LAY_PARTICIPANTS + 1)]
    return ReleaseRecords(study=study, participants=[radiologist, *lay_participants])


def _sources_read(directory: Path, study: StudyRecords) -> list[dict[str, str]]:
    """The sources and simplifications into `study`; each source's texts by system."""
    simp_rows = _read_rows(directory, SIMPLIFICATIONS_FILE, ["Original Sentence", *SYSTEMS])
    texts: list[dict[str, str]] = []
    for index, (number, cells) in enumerate(simp_rows):
        sentence = _clean(cells[0])
        if not sentence:
            raise ImportFormatError(
                "empty sentence.", file=SIMPLIFICATIONS_FILE, row=number, column="Original Sentence"
            )
        key = f"s{index + 1:02d}"
        study.sources.append(SourceRecord(key=key, text=sentence, metadata={"release_row": index}))
        row_texts = {}
        for column, (release_name, system) in enumerate(SYSTEMS.items(), start=1):
            text = _clean(cells[column])
            if not text:
                raise ImportFormatError(
                    "empty simplification.", file=SIMPLIFICATIONS_FILE, row=number, column=release_name
                )
            row_texts[system] = text
            study.simplifications.append(SimplificationRecord(key, system, text))
        texts.append(row_texts)
    return texts


def _severity_read(directory: Path, study: StudyRecords, radiologist: ParticipantRecord) -> None:
    """The reference severity of each source (also the radiologist's source judgement)."""
    keys = [s.key for s in study.sources]
    n_sources = len(keys)
    severity_rows = _read_rows(directory, SEVERITY_FILE, ["Original Sentence", "Severity Level"])
    _check_row_count(severity_rows, n_sources, SEVERITY_FILE)
    for index, (number, cells) in enumerate(severity_rows):
        _check_sentence(cells[0], study.sources[index].text, SEVERITY_FILE, number, "Original Sentence")
        raw = _clean(cells[1])
        level = None
        if raw:
            if raw not in {"1", "2", "3", "4", "5"}:
                raise ImportFormatError(
                    f"severity {raw!r} is not 1-5 (1 = Critical … 5 = Healthy).",
                    file=SEVERITY_FILE,
                    row=number,
                    column="Severity Level",
                )
            level = scales.SEVERITY.levels[int(raw) - 1].name
        study.sources[index].reference_severity = level
        radiologist.expert_judgements.append(ExpertJudgementRecord(keys[index], severity=level))


def _ratings_read(
    directory: Path, study: StudyRecords, radiologist: ParticipantRecord, texts: list[dict[str, str]]
) -> None:
    """The radiologist's ratings of each simplification, and their own simplification of a source."""
    keys = [s.key for s in study.sources]
    n_sources = len(keys)
    rating_rows = _read_rows(directory, RADIOLOGIST_FILE, RADIOLOGIST_HEADER)
    _check_row_count(rating_rows, n_sources, RADIOLOGIST_FILE)
    for index, (number, cells) in enumerate(rating_rows):
        _check_sentence(cells[0], study.sources[index].text, RADIOLOGIST_FILE, number, "Original Sentence")
        for system, (text_col, rating_col, comment_col) in RADIOLOGIST_COLUMNS.items():
            column_name = RADIOLOGIST_HEADER[rating_col]
            if _loose(cells[text_col]) != _loose(texts[index][system]):
                raise ImportFormatError(
                    f"the {RADIOLOGIST_HEADER[text_col]} text differs from the simplifications file.",
                    file=RADIOLOGIST_FILE,
                    row=number,
                    column=RADIOLOGIST_HEADER[text_col],
                )
            raw = _clean(cells[rating_col])
            if not raw:
                continue  # not rated: stays missing
            parts = [p.strip() for p in raw.split(";")]
            if len(parts) != 5 or any(p not in {"1", "2", "3", "4", "5"} for p in parts):
                raise ImportFormatError(
                    f"rating {raw!r} is not five scores 1-5 joined by ';' "
                    "(correctness;completeness;no-harm;structure;simplicity).",
                    file=RADIOLOGIST_FILE,
                    row=number,
                    column=column_name,
                )
            scores = dict(zip(scales.EXPERT_ASPECTS, (int(p) for p in parts), strict=True))
            radiologist.expert_ratings.append(
                ExpertRatingRecord(keys[index], system, scores, comment=_clean(cells[comment_col]))
            )
        own = _clean(cells[13])
        if own:
            study.sources[index].metadata["radiologist_own_simplification"] = own


def _lay_read(directory: Path, study: StudyRecords, texts: list[dict[str, str]], n: int) -> ParticipantRecord:
    """Layperson `n`'s answers, one file."""
    keys = [s.key for s in study.sources]
    n_sources = len(keys)
    name = LAY_FILE.format(n=n)
    rows = _read_rows(directory, name, LAY_HEADER)
    _check_row_count(rows, n_sources, name)
    person = ParticipantRecord(role="layperson", pseudonym=f"L{n:03d}")
    for index, (number, cells) in enumerate(rows):
        _check_sentence(cells[0], study.sources[index].text, name, number, "Radiology Sentence")
        systems = _versions(cells[2], name, number, "Version", allow_empty=False)
        shown = _clean(cells[1])
        if any(_loose(shown) != _loose(texts[index][s]) for s in systems):
            raise ImportFormatError(
                f"the simplification shown is not the text of Version {cells[2].strip()!r}.",
                file=name,
                row=number,
                column="Simplification in Stage2",
            )
        answers: dict[str, dict[str, str | None]] = {"original": {}, "assisted": {}}
        for column, (phase, question) in LAY_QUESTIONS.items():
            value = _clean(cells[column])
            if value and value not in scales.LAY_SCALES[question].names:
                raise ImportFormatError(
                    f"{value!r} is not an answer to this question "
                    f"({', '.join(scales.LAY_SCALES[question].names)}).",
                    file=name,
                    row=number,
                    column=LAY_HEADER[column],
                )
            answers[phase][question] = value or None
        most = _versions(cells[12], name, number, LAY_HEADER[12], allow_empty=True)
        least = _versions(cells[14], name, number, LAY_HEADER[14], allow_empty=True)
        person.lay_items.append(
            LayItemRecord(
                source_key=keys[index],
                position=index,
                systems=systems,
                original=answers["original"],
                assisted=answers["assisted"],
                most=most or None,
                least=least or None,
                most_justification=_clean(cells[13]),
                least_justification=_clean(cells[15]),
            )
        )
    return person


def _versions(cell: str, file: str, row: int, column: str, *, allow_empty: bool) -> list[str]:
    labels = [p.strip() for p in cell.split(";") if p.strip()]
    if not labels and not allow_empty:
        raise ImportFormatError("empty Version.", file=file, row=row, column=column)
    systems = []
    for label in labels:
        if label not in VERSION_LABELS:
            raise ImportFormatError(
                f"unknown version {label!r} (one of {', '.join(VERSION_LABELS)}).",
                file=file,
                row=row,
                column=column,
            )
        if VERSION_LABELS[label] not in systems:
            systems.append(VERSION_LABELS[label])
    return systems


def _check_row_count(rows: list, expected: int, file: str) -> None:
    if len(rows) != expected:
        raise ImportFormatError(f"{len(rows)} rows, but the simplifications file has {expected}.", file=file)


def _check_sentence(cell: str, expected: str, file: str, row: int, column: str) -> None:
    if _loose(cell) != _loose(expected):
        raise ImportFormatError(
            "this row's sentence is not the same as in the simplifications file "
            "(rows must be in the same order in every file).",
            file=file,
            row=row,
            column=column,
        )
