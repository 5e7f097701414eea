"""What a study offers a layperson, read from the database: the Latin square (sources × systems
with a simplification), the panels of an item, the expert safety gate, and which participants
hold a live Latin-square row.

- Systems and sources without a simplification take no part in the square.
- Safety gate (`Study.safety_gate_enabled`): a text any radiologist rated at or below
  `Study.safety_gate_threshold` on Hallucination or Correctness is withheld (surveys/lay/
  assignment.py applies it when items are made and again before a panel first shows a text).
- Live rows: a participant's row counts for the handout while they are completed or active. A
  participant is *abandoned* when not completed and either returned (`returned_at`), screened out
  by failed attention checks (`screened_out_at`: their answers are not analysed) or idle for
  `Study.abandon_after_minutes`; their row is then free for the next newcomer.
- Panel 3 needs at least two distinct texts; an item with fewer ends after panel 2.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from annotation import selectors
from annotation.answer_selectors import expert_ratings, low_rated_texts
from annotation.models import LayItem, Participant, Simplification, SimplificationText, Study
from measures import latin_square
from surveys.lay.errors import StudyNotReady

ORIGINAL = LayItem.Stage.ORIGINAL.value
ASSISTED = LayItem.Stage.ASSISTED.value
PREFERENCE = LayItem.Stage.PREFERENCE.value
DONE = LayItem.Stage.DONE.value
PANELS = (ORIGINAL, ASSISTED, PREFERENCE)
SAFETY_ASPECTS = ("hallucination", "correctness")


def panel_number(panel: str) -> int:
    return PANELS.index(panel) + 1


def lay_item_panels(*, item: LayItem) -> tuple[str, ...]:
    """The panels of this item: panel 3 only when there are at least two texts to compare."""
    return PANELS if len(item.preference_order) >= 2 else PANELS[:2]


# --- Background questions ----------------------------------------------------------------------


@dataclass(frozen=True)
class BackgroundQuestion:
    key: str
    question: str
    options: tuple[str, ...]


def lay_background_questions(*, study: Study) -> list[BackgroundQuestion]:
    """Study.background_questions as questions; malformed entries (no key or question) are skipped
    rather than breaking the survey."""
    questions = []
    for entry in study.background_questions or []:
        if not isinstance(entry, Mapping):
            continue
        key, question = str(entry.get("key", "")).strip(), str(entry.get("question", "")).strip()
        if not key or not question:
            continue
        options = entry.get("options") or []
        questions.append(BackgroundQuestion(key, question, tuple(str(o) for o in options)))
    return questions


def lay_background_pending(*, participant: Participant) -> bool:
    questions = lay_background_questions(study=participant.study)
    return any(q.key not in participant.background for q in questions)


# --- The Latin square -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayDesign:
    square: latin_square.LatinSquare
    source_ids: tuple[int, ...]  # by source index i
    system_ids: tuple[int, ...]  # by system index j
    text_of: Mapping[tuple[int, int], int]  # (i, j) -> SimplificationText id
    texts_of_source: Mapping[int, tuple[int, ...]]  # source id -> its distinct text ids

    def unavailable(self, withheld: Collection[int]) -> set[tuple[int, int]]:
        """Pairs the square must skip: no simplification, or a withheld text."""
        return {
            (i, j)
            for i in range(len(self.source_ids))
            for j in range(len(self.system_ids))
            if self.text_of.get((i, j)) is None or self.text_of[(i, j)] in withheld
        }

    def source_index(self, source_id: int) -> int:
        return self.source_ids.index(source_id)


def lay_design(*, study: Study) -> LayDesign:
    """The study's Latin square: sources with at least one simplification (index = rank of
    Source.position) × systems with at least one simplification (rank of System.position)."""
    rows = list(
        Simplification.objects.filter(source__study=study)
        .order_by("source__position", "system__position", "system__key")
        .values_list(
            "source_id", "source__position", "system_id", "system__position", "system__key", "shown_text_id"
        )
    )
    if not rows:
        raise StudyNotReady(_("This study has no sentences with simplifications yet."))
    source_ids = tuple(dict.fromkeys(r[0] for r in sorted(rows, key=lambda r: r[1])))
    system_ids = tuple(dict.fromkeys(r[2] for r in sorted(rows, key=lambda r: (r[3], r[4]))))
    source_index = {sid: i for i, sid in enumerate(source_ids)}
    system_index = {sid: j for j, sid in enumerate(system_ids)}
    text_of = {(source_index[r[0]], system_index[r[2]]): r[5] for r in rows}
    texts: dict[int, list[int]] = defaultdict(list)
    for r in rows:
        if r[5] not in texts[r[0]]:
            texts[r[0]].append(r[5])
    square = latin_square.LatinSquare(
        n_sources=len(source_ids),
        n_systems=len(system_ids),
        per_participant=study.lay_sources_per_participant,
    )
    return LayDesign(
        square=square,
        source_ids=source_ids,
        system_ids=system_ids,
        text_of=text_of,
        texts_of_source={sid: tuple(sorted(ids)) for sid, ids in texts.items()},
    )


# --- Safety gate -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SafetyFlag:
    text_id: int
    source_key: str
    text: str
    systems: tuple[str, ...]
    rater: str
    aspect: str
    score: int
    comment: str


def _radiologists() -> Q:
    return selectors.counted_participants(path="participant__") & Q(
        participant__role=Participant.Role.RADIOLOGIST
    )


def lay_safety_flags(*, study: Study) -> list[SafetyFlag]:
    """Every radiologist rating at or below the study's threshold on Hallucination or Correctness,
    one flag per (rating, aspect), whether or not the gate is enabled."""
    threshold = study.safety_gate_threshold
    ratings = [
        r
        for r in expert_ratings(study=study, where=_radiologists())
        if any(getattr(r, a) is not None and getattr(r, a) <= threshold for a in SAFETY_ASPECTS)
    ]
    texts = SimplificationText.objects.select_related("source").in_bulk({r.shown_text_id for r in ratings})
    pseudonyms = dict(Participant.objects.filter(study=study).values_list("pk", "pseudonym"))
    ratings.sort(key=lambda r: (texts[r.shown_text_id].source.position, r.shown_text_id, r.participant_id))
    systems = selectors.systems_by_text(study=study)
    flags = []
    for rating in ratings:
        shown = texts[rating.shown_text_id]
        for aspect in SAFETY_ASPECTS:
            score = getattr(rating, aspect)
            if score is not None and score <= threshold:
                flags.append(
                    SafetyFlag(
                        text_id=rating.shown_text_id,
                        source_key=shown.source.key,
                        text=shown.text,
                        systems=tuple(systems.get(rating.shown_text_id, ())),
                        rater=pseudonyms.get(rating.participant_id) or f"#{rating.participant_id}",
                        aspect=aspect,
                        score=score,
                        comment=rating.comment,
                    )
                )
    return flags


def lay_withheld_text_ids(*, study: Study, among: Collection[int] | None = None) -> set[int]:
    """The texts the gate withholds (none while it is off); `among` narrows the question to a few
    texts, so that opening one panel costs one small query whatever the study's size."""
    if not study.safety_gate_enabled:
        return set()
    return low_rated_texts(
        study=study,
        aspects=SAFETY_ASPECTS,
        threshold=study.safety_gate_threshold,
        where=_radiologists(),
        among=among,
    )


# --- Live rows -----------------------------------------------------------------------------------------


def _idle_cutoff(study: Study, now: datetime | None) -> datetime:
    return (now or timezone.now()) - timedelta(minutes=study.abandon_after_minutes)


def participant_is_abandoned(*, participant: Participant, now: datetime | None = None) -> bool:
    """Not completed, and returned, screened out or idle for `Study.abandon_after_minutes`."""
    if participant.completed_at is not None:
        return False
    if participant.returned_at is not None or participant.screened_out_at is not None:
        return True
    last = participant.last_activity_at or participant.started_at or participant.created_at
    return last is not None and last < _idle_cutoff(participant.study, now)


def lay_live_rows(*, study: Study, now: datetime | None = None) -> list[int]:
    """Latin-square rows of the live lay participants (completed, or active and neither returned
    nor screened out)."""
    live = Q(completed_at__isnull=False) | (
        Q(returned_at__isnull=True)
        & Q(screened_out_at__isnull=True)
        & Q(last_seen__gte=_idle_cutoff(study, now))
    )
    rows = (
        Participant.objects.filter(
            selectors.counted_participants(),
            study=study,
            role=Participant.Role.LAYPERSON,
            latin_square_row__isnull=False,
        )
        .annotate(last_seen=Coalesce("last_activity_at", "started_at", "created_at"))
        .filter(live)
        .values_list("latin_square_row", flat=True)
    )
    return [row for row in rows if row is not None]  # none is (the filter), but the column is nullable
