"""One place that decides what a survey token may reach (Zulip's access_* pattern). Views call
these instead of re-writing permission checks."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import Http404
from django.utils.translation import gettext, gettext_lazy

from annotation.models import (
    NEEDS,
    AttentionCheck,
    ExpertItem,
    LayItem,
    Participant,
    Source,
    Study,
    StudyMembership,
)
from annotation.prepared_queries import Joined, PreparedQuery

# Every researcher page (dashboard, generation batches, judge runs, plans): an anonymous visitor is
# sent to the dashboard's login. A URL name, not an import, so this layer imports no page app.
researcher_login_required = login_required(login_url="evaluation:login")


def access_study(*, user, slug: str, need: str = "view") -> Study:
    """The study `slug` if `user` is in its team with a role that allows `need` ("view": the
    dashboard, report and exports without identifying fields; "edit": set-up, participants,
    launches; "own": the team and deletion), or a superuser. A study the user is not in is not
    found (404), so that its existence is not disclosed; a member whose role falls short is
    refused (403). Every researcher-facing page, export and API goes through here; researchers
    need not be staff. The user's role is left on the study as `study.member_role`."""
    if need not in NEEDS:
        raise ValueError(f"Unknown capability {need!r}; one of {', '.join(NEEDS)}.")
    found = _study_with_role(user=user, slug=slug)
    if found is None:
        raise Http404("No such study among yours.")
    study, role = found
    if not StudyMembership.Role(role).allows(need):
        raise PermissionDenied(f"Your role in this study ({role}) does not allow this.")
    study.member_role = role
    return study


def _study_with_role(*, user, slug: str) -> tuple[Study, str] | None:
    # One query, as before roles: the membership row brings its study.
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        study = Study.objects.filter(slug=slug).first()
        return (study, StudyMembership.Role.OWNER) if study else None
    membership = StudyMembership.objects.select_related("study").filter(study__slug=slug, user=user).first()
    return (membership.study, membership.role) if membership else None


def may_create_study(*, user) -> bool:
    """Whether `user` may create studies (the console's "New study"): staff, or a member who owns
    or edits some study already (a researcher, not a radiologist's survey account)."""
    if not user.is_authenticated:
        return False
    if user.is_staff or user.is_superuser:
        return True
    editing = [role for role in StudyMembership.Role if role.allows("edit")]
    return StudyMembership.objects.filter(user=user, role__in=editing).exists()


def access_study_create(*, user) -> None:
    """Refuse (403) a user who may not create studies; the creator becomes the study's owner."""
    if not may_create_study(user=user):
        raise PermissionDenied(
            "Only the research team creates studies: ask an administrator to make your account staff "
            "or to add you to a study as owner or editor."
        )


def may_see_identifying(*, study: Study) -> bool:
    """Whether identifying fields (recruiters' ids, participants' names and e-mails) may reach
    the user `access_study` admitted to `study`: owners and editors, never viewers. The one rule
    every export and API answer applies."""
    return StudyMembership.Role(study.member_role).allows("edit")


class SurveyClosed(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The participant's study is not open (draft or closed)."""

    def __init__(self, study: Study, participant: Participant | None = None):
        super().__init__(study.status)
        self.study = study
        self.participant = participant  # who asked, where known (the paused page words it for them)


class WrongFlow(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """A token of one role asked for the other role's pages (`role`: the role the pages are for,
    or PAIRS_FLOW for the rate-each-pair flow's)."""

    PAIRS_FLOW = "pairs"

    def __init__(self, participant: Participant, role: str):
        self.participant = participant
        self.role = role
        super().__init__(self.message())

    def message(self) -> str:
        """The refusal in the active language (the survey views switch to the study's first)."""
        if self.role == self.PAIRS_FLOW:
            return gettext("This link is not for the pair ratings.")
        if self.participant.role == Participant.Role.LAYPERSON:
            return gettext("This link is for a layperson, not a radiologist.")
        return gettext("This link is for a radiologist, not a layperson.")


_PARTICIPANT = Joined(Participant, "study")
# Every survey request resolves its token here: SQL compiled once (prepared_queries.py).
_participant_rows = PreparedQuery(
    lambda token: Participant.objects.filter(token=token).values_list(*_PARTICIPANT.columns())
)


def token_possible(token: str) -> bool:
    """Whether `token` could be a stored token at all (nothing is asked for one that cannot)."""
    return _token_possible(token)


def participant_admit(
    participant: Participant, *, role: str | None, require_open: bool = True
) -> Participant:
    """access_participant's checks of a participant its caller read with the token itself (a save
    that resolves the token in its locking statement): the role, and an open study."""
    return _admit(participant, role=role, require_open=require_open)


def _token_possible(token: str) -> bool:
    # What no stored token can be is not asked for (PostgreSQL refuses a NUL in any string).
    longest = Participant._meta.get_field("token").max_length
    return (longest is None or len(token) <= longest) and "\x00" not in token


def access_participant(*, token: str, role: str | None = None, require_open: bool = True) -> Participant:
    token = str(token)
    rows = _participant_rows.rows(token=token) if _token_possible(token) else []  # unique: one row or none
    if not rows:
        raise Http404(gettext_lazy("This survey link is not valid."))
    return _admit(_PARTICIPANT.instances(rows[0]), role=role, require_open=require_open)


def _admit(participant: Participant, *, role: str | None, require_open: bool) -> Participant:
    if role is not None and participant.role != role:
        raise WrongFlow(participant, role)
    if require_open and not participant.may_answer:
        raise SurveyClosed(participant.study, participant)
    return participant


_EXPERT_PAGE = Joined(ExpertItem, "participant", "participant__study", "source")
# Read with the page, so that the text a radiologist may see costs no query of its own: the
# source's de-identified text and whether the study shows radiologists the originals (the rule that
# chooses between them is privacy.selectors.source_text's, which reads these two attributes).
_EXPERT_SHOWN = (
    "source__deidentification__text",
    "participant__study__data_policy__originals_for_radiologists",
)


def _expert_page_rows_of(item_id, token):
    # A primary-key lookup: no ORDER BY (PreparedQuery leaves the default ordering out).
    return ExpertItem.objects.filter(pk=item_id, participant__token=token).values_list(
        *_EXPERT_PAGE.columns(), *_EXPERT_SHOWN
    )


_expert_page_rows = PreparedQuery(_expert_page_rows_of)


def _expert_page_locking(item_id, token, added_ms):
    return (
        ExpertItem.objects.filter(pk=item_id, participant__token=token),
        {"time_spent_ms": F("time_spent_ms") + added_ms},
    )


# The same read for a save: the page's row locked by the UPDATE that adds the save's time, in the
# same statement (PreparedQuery's `locking`), and read as the last holder of its lock left it.
_expert_page_locked_rows = PreparedQuery(
    lambda item_id, token, added_ms: _expert_page_rows_of(item_id, token), locking=_expert_page_locking
)


def access_expert_page(*, token: str, item_id: int, require_open: bool = True) -> ExpertItem:
    """A radiologist's own page with its participant (and study) and source, in one query: the
    survey's busiest request (every autosave) resolves its token and its page together. A page of
    somebody else's is a 404 once the token itself passed access_participant's checks."""
    token = str(token)
    rows = _expert_page_rows.rows(item_id=int(item_id), token=token) if _token_possible(token) else []
    return _expert_page_found(rows, token=token, require_open=require_open)


def access_expert_page_locked(
    *, token: str, item_id: int, added_ms: int, require_open: bool = True
) -> ExpertItem:
    """access_expert_page for a save of the page, inside the save's transaction (PostgreSQL): the
    same look-up locks the page's row, which every writer of its answers takes first, and adds the
    save's time to it, in one statement (surveys/radiologist/pages.py reads the page's answers after
    it). The page returned is its row as the lock found it (its completion current); a refusal
    raised here leaves the time to the transaction's rollback."""
    token = str(token)
    rows = (
        _expert_page_locked_rows.rows(item_id=int(item_id), token=token, added_ms=max(0, int(added_ms)))
        if _token_possible(token)
        else []
    )
    return _expert_page_found(rows, token=token, require_open=require_open)


def _expert_page_found(rows: list[tuple], *, token: str, require_open: bool) -> ExpertItem:
    if not rows:
        # The token's own refusal (invalid link, other role, closed study) comes first.
        access_participant(token=token, role=Participant.Role.RADIOLOGIST, require_open=require_open)
        raise Http404(gettext_lazy("This page is not part of your survey."))
    item = _EXPERT_PAGE.instances(rows[0])
    shown_text_attach(item.source, *rows[0][-2:])
    _admit(item.participant, role=Participant.Role.RADIOLOGIST, require_open=require_open)
    return item


def shown_text_attach(source: Source, deidentified: str | None, originals: bool | None = None) -> None:
    """What a survey page's own query read for privacy.selectors.source_text (no query of its own)."""
    source.deidentified_text = deidentified
    source.originals_for_radiologists = originals


_LAY_ITEM = Joined(LayItem, "source", "shown_text")
# By key alone, and whose it is checked after: with both in the WHERE clause the planner may pick
# the participant's index and filter all their items for the key (it did, for a newcomer). With the
# source's de-identified text, what laypeople are shown (privacy.selectors.source_text).
_lay_item_rows = PreparedQuery(
    lambda item_id: LayItem.objects.filter(pk=item_id).values_list(
        *_LAY_ITEM.columns(), "source__deidentification__text"
    )
)


def access_lay_item(*, participant: Participant, item_id: int) -> LayItem:
    """One of the participant's own lay items, with what its panels show. (A save reads its item
    under the row lock with where the participant is: surveys/lay/steps.py.)"""
    rows = _lay_item_rows.rows(item_id=int(item_id))
    item = _LAY_ITEM.instances(rows[0]) if rows else None
    if item is not None:
        shown_text_attach(item.source, rows[0][-1])
    if item is None or item.participant_id != participant.pk:
        raise Http404(gettext_lazy("This sentence is not part of your survey."))
    item.participant = participant  # already loaded (with its study, by the survey views)
    return item


def access_attention_check(*, participant: Participant, check_id: int) -> AttentionCheck:
    check = AttentionCheck.objects.filter(pk=check_id, study_id=participant.study_id).first()
    if check is None:
        raise Http404(gettext_lazy("This question is not part of your survey."))
    return check


def access_study_for_join(*, slug: str) -> Study:
    """The study behind an open recruitment link (`/join/<slug>/`), open or not (the caller says
    which page a draft or closed study gets)."""
    study = Study.objects.filter(slug=slug).first()
    if study is None:
        raise Http404(gettext_lazy("There is no study at this link. Please check the link you were given."))
    return study
