"""What importers produce: plain records, written to the database by studies/importers/write.py
in one transaction. Readers never touch the database, so a malformed file fails before anything
is written."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SourceRecord:
    key: str
    text: str
    reference_severity: str | None = None
    metadata: dict = field(default_factory=dict)
    # The report the text came from (studies/importers/report_file.py); empty otherwise.
    report_key: str = ""


@dataclass
class SimplificationRecord:
    source_key: str
    system: str
    text: str


@dataclass
class StudyRecords:
    sources: list[SourceRecord] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    simplifications: list[SimplificationRecord] = field(default_factory=list)
    system_labels: dict[str, str] = field(default_factory=dict)


@dataclass
class ExpertRatingRecord:
    source_key: str
    system: str
    scores: dict[str, int]
    comment: str = ""


@dataclass
class ExpertJudgementRecord:
    source_key: str
    severity: str | None
    simplicity: int | None = None
    comment: str = ""


@dataclass
class LayItemRecord:
    source_key: str
    position: int
    systems: list[str]  # the system(s) whose (shared) text was shown in panel 2
    original: dict[str, str | None]  # panel-1 answers by question
    assisted: dict[str, str | None]  # panel-2 answers by question
    most: list[str] | None  # system keys; None = not answered
    least: list[str] | None
    most_justification: str = ""
    least_justification: str = ""


@dataclass
class ParticipantRecord:
    role: str
    pseudonym: str
    expert_ratings: list[ExpertRatingRecord] = field(default_factory=list)
    expert_judgements: list[ExpertJudgementRecord] = field(default_factory=list)
    lay_items: list[LayItemRecord] = field(default_factory=list)


@dataclass
class ReleaseRecords:
    study: StudyRecords
    participants: list[ParticipantRecord] = field(default_factory=list)
