"""surveys/radiologist/views.py through Django's test client: entry, instructions, pages, autosave
(htmx) and whole-form saving (no JavaScript), completion, access rules and bad input."""

from __future__ import annotations

import json
import re
import time
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation import participant_services, protocol_texts, scales
from annotation.models import (
    AnswerRevision,
    ExpertItem,
    ItemAnswer,
    Participant,
    Study,
)
from studies import source_services, study_services
from surveys.radiologist import pages
from tests.annotation import answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def radiologist(study, **kwargs) -> Participant:
    return participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST, **kwargs)


def started(client, participant) -> list[ExpertItem]:
    """Open the invite link and press Begin, as a radiologist would."""
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return list(ExpertItem.objects.filter(participant=participant).order_by("position"))


def page_url(participant, item) -> str:
    return reverse("surveys:expert-page", args=[participant.token, item.pk])


def full_answers(item, value: int = 4) -> dict[str, str]:
    page = pages.expert_page_get(item=item)
    data = {"original-severity": "Moderate", "original-simplicity": "2"}
    data.update({cell.field: str(value) for row in page.texts for cell in row.aspects})
    return data


def nothing_saved() -> bool:
    return not answers.ratings() and not answers.judgements()


# --- entry, instructions, resume ----------------------------------------------------------------------


def test_invite_link_leads_to_instructions_then_to_the_first_page(client):
    study = build_study(n_sources=3)
    participant = radiologist(study)
    response = client.get(reverse("surveys:entry", args=[participant.token]), follow=True)
    assert [url for url, _ in response.redirect_chain] == [
        reverse("surveys:expert-start", args=[participant.token]),
        reverse("surveys:expert-instructions", args=[participant.token]),
    ]
    html = response.content.decode()
    for definition in scales.EXPERT_ASPECTS.values():
        assert definition in html
    for level in scales.SEVERITY.levels:
        assert level.definition.replace("'", "&#x27;") in html
    assert protocol_texts.EXPERT_INSTRUCTION in html

    response = client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    first = ExpertItem.objects.get(participant=participant, position=1)
    assert response.status_code == 302 and response.url == page_url(participant, first)
    participant.refresh_from_db()
    assert participant.started_at is not None


def test_start_link_resumes_at_the_first_incomplete_page(client):
    study = build_study(n_sources=3)
    participant = radiologist(study)
    items = started(client, participant)
    client.post(page_url(participant, items[0]), full_answers(items[0]))
    client.post(page_url(participant, items[1]), {"A-correctness": "3"}, **HTMX)
    response = client.get(reverse("surveys:expert-start", args=[participant.token]))
    assert response.url == page_url(participant, items[1]) + "?why=resume"
    html = client.get(response.url).content.decode()
    missing = len(pages.expert_page_get(item=items[1]).missing)
    # The count sits in a span that radiologist.js updates as rows get answered.
    assert f"Sentence 2 is the first one not finished: {missing} unanswered rows" in re.sub(
        r"<[^>]+>", "", html
    )


def test_custom_instructions_replace_the_default_text(client):
    study = build_study(n_sources=1)
    study.expert_instructions = "Rate quickly.\n\nUse the whole scale."
    study.save()
    participant = radiologist(study)
    html = client.get(reverse("surveys:expert-instructions", args=[participant.token])).content.decode()
    custom = html.split('class="custom-instructions">')[1].split("</div>")[0]
    assert "<p>Rate quickly.</p>" in custom and "<p>Use the whole scale.</p>" in custom


def test_consent_text_is_shown_and_beginning_records_consent(client):
    study = build_study(n_sources=1)
    study.expert_consent_text = "Your ratings will be published in aggregate."
    study.save()
    participant = radiologist(study)
    url = reverse("surveys:expert-instructions", args=[participant.token])
    assert "published in aggregate" in client.get(url).content.decode()
    client.post(url)
    participant.refresh_from_db()
    assert participant.consented_at is not None


# --- the rating page ----------------------------------------------------------------------------------


def test_page_shows_original_texts_rubric_and_progress_but_never_a_system_name(client):
    study = build_study(n_sources=2, systems=("plain_bs", "plain_sc", "cot_bs", "cot_sc"))
    study.systems.filter(key="cot_sc").update(label="ChatGPT CoT self-corrected")
    for source in study.sources.all():  # texts that do not themselves name their system
        for n, simplification in enumerate(source.simplifications.all()):
            source_services.simplification_upsert(
                source=source,
                system=simplification.system,
                text=f"Plain words, version {n}, for {source.key}.",
            )
    participant = radiologist(study)
    items = started(client, participant)
    html = client.get(page_url(participant, items[0])).content.decode()
    assert items[0].source.text in html
    for n in range(4):
        assert f"Plain words, version {n}, for {items[0].source.key}." in html
    assert [f"Simplification {label}" in html for label in "ABCDE"] == [True] * 4 + [False]
    for aspect in protocol_texts.EXPERT_ASPECTS:
        assert aspect.title in html and aspect.definition in html
    assert "introduces no harmful or misleading content" in html
    assert protocol_texts.EXPERT_ORIGINAL_SIMPLICITY_QUESTION in html
    assert "0 of 2 sentences done" in html
    lowered = html.lower()
    for system in study.systems.all():
        assert system.key.lower() not in lowered
        assert system.label.lower() not in lowered
    assert "chatgpt" not in lowered and "self-correct" not in lowered  # not even the protocol paper's title


def test_autosave_saves_one_answer_and_reports_it(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    response = client.post(
        page_url(participant, items[0]), {"A-correctness": "2", "elapsed_ms": "1800"}, **HTMX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert '<span class="saved">Saved</span>' in html
    assert 'id="page-state"' in html and 'hx-swap-oob="true"' in html
    # The page is not complete yet, so the survey's progress and the index entry are unchanged and
    # not sent again.
    assert 'id="progress"' not in html and 'id="index-' not in html
    rating = answers.rating()
    assert (rating.participant_id, rating.correctness, rating.completeness) == (participant.pk, 2, None)
    assert rating.shown_text_id == items[0].text_order[0]
    assert rating.time_spent_ms == 1800
    assert ExpertItem.objects.get(pk=items[0].pk).time_spent_ms == 1800


def test_the_last_autosave_of_a_page_marks_it_complete_and_updates_the_progress(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    data = full_answers(items[0])
    last = data.pop("original-simplicity")
    client.post(page_url(participant, items[0]), data)  # all but one answer, without JavaScript
    response = client.post(page_url(participant, items[0]), {"original-simplicity": last}, **HTMX)
    html = response.content.decode()
    assert "1 of 2 sentences done" in html and "Page complete" in html
    assert f'id="index-{items[0].pk}"' in html and "index-entry done" in html
    assert ExpertItem.objects.get(pk=items[0].pk).completed_at is not None
    # Clearing nothing but re-answering keeps it complete: no progress sent again.
    response = client.post(page_url(participant, items[0]), {"original-simplicity": "1"}, **HTMX)
    assert "Page complete" in response.content.decode() and 'id="progress"' not in response.content.decode()


@pytest.mark.parametrize("bad", ["0", "6", "x"])
def test_autosave_of_an_out_of_range_value_is_a_400_fragment_and_saves_nothing(client, bad):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    items = started(client, participant)
    response = client.post(page_url(participant, items[0]), {"A-simplicity": bad}, **HTMX)
    assert response.status_code == 400
    html = response.content.decode()
    assert "whole number from 1 to 5" in html and "<html" not in html
    assert nothing_saved()


def test_unknown_or_foreign_text_fields_are_refused(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    other_study = build_study(slug="other", n_sources=1)
    foreign_text = other_study.sources.get().texts.first().pk
    for field in ("Z-correctness", f"{items[1].text_order[0]}-correctness", f"{foreign_text}-correctness"):
        response = client.post(page_url(participant, items[0]), {field: "3"}, **HTMX)
        assert response.status_code == 400, field
    assert nothing_saved()


def test_another_participants_page_is_a_404_and_nothing_is_saved(client):
    study = build_study(n_sources=1)
    owner, intruder = radiologist(study), radiologist(study)
    items = started(client, owner)
    started(client, intruder)
    url = reverse("surveys:expert-page", args=[intruder.token, items[0].pk])
    assert client.get(url).status_code == 404
    response = client.post(url, {"A-correctness": "3"}, **HTMX)
    assert response.status_code == 404
    response = client.post(url, full_answers(items[0]))
    assert response.status_code == 404 and "not part of your survey" in response.content.decode()
    assert nothing_saved()


def test_unknown_token_is_a_clear_404(client):
    response = client.get(reverse("surveys:expert-start", args=["no-such-token"]))
    assert response.status_code == 404
    assert "not valid" in response.content.decode()
    response = client.post(
        reverse("surveys:expert-page", args=["no-such-token", 1]), {"A-correctness": "3"}, **HTMX
    )
    assert response.status_code == 404 and "not valid" in response.content.decode()


def test_a_laypersons_token_cannot_open_radiologist_pages(client):
    study = build_study(n_sources=1)
    lay = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    owner = radiologist(study)
    item = started(client, owner)[0]
    for url in (
        reverse("surveys:expert-start", args=[lay.token]),
        reverse("surveys:expert-instructions", args=[lay.token]),
        reverse("surveys:expert-page", args=[lay.token, item.pk]),
        reverse("surveys:expert-done", args=[lay.token]),
    ):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "This link is for a layperson, not a radiologist." in response.content.decode()
    response = client.post(reverse("surveys:expert-page", args=[lay.token, item.pk]), {"A-correctness": "3"})
    assert response.status_code == 403
    assert nothing_saved() and not ExpertItem.objects.filter(participant=lay).exists()


@pytest.mark.parametrize("status", [Study.Status.CLOSED, Study.Status.DRAFT])
def test_a_study_that_is_not_open_shows_a_clear_page_and_saves_nothing(client, status):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = started(client, participant)[0]
    study_services.study_set_status(study=study, status=status)
    response = client.get(page_url(participant, item))
    assert response.status_code == 403 and "This survey is not open" in response.content.decode()
    assert client.get(reverse("surveys:expert-start", args=[participant.token])).status_code == 403
    response = client.post(page_url(participant, item), {"A-correctness": "3"}, **HTMX)
    assert response.status_code == 403 and "not open" in response.content.decode()
    assert client.post(page_url(participant, item), full_answers(item)).status_code == 403
    assert nothing_saved()


def test_double_submit_keeps_one_row_per_answer(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    data = full_answers(items[0])
    first = client.post(page_url(participant, items[0]), data)
    second = client.post(page_url(participant, items[0]), data)
    assert first.status_code == second.status_code == 302
    client.post(page_url(participant, items[0]), {"A-correctness": "1"}, **HTMX)
    client.post(page_url(participant, items[0]), {"A-correctness": "1"}, **HTMX)
    assert len(answers.ratings()) == 4
    assert len(answers.judgements()) == 1


# --- the page form without JavaScript ----------------------------------------------------------------------


def test_a_complete_page_form_saves_everything_and_goes_to_the_next_page(client):
    study = build_study(n_sources=2, shared=((0, "plain_bs", "cot_bs"),))
    participant = radiologist(study)
    items = started(client, participant)
    data = full_answers(items[0], value=5) | {"A-comment": "Clear.", "original-comment": "Short finding."}
    response = client.post(page_url(participant, items[0]), data | {"action": "next"})
    assert response.status_code == 302 and response.url == page_url(participant, items[1])
    ratings = answers.ratings(participant=participant)
    assert len(ratings) == len(items[0].text_order)
    assert all(r.is_complete and r.correctness == 5 for r in ratings)
    assert answers.rating(shown_text=items[0].text_order[0]).comment == "Clear."
    judgement = answers.judgement()
    assert (judgement.severity, judgement.simplicity, judgement.comment) == ("Moderate", 2, "Short finding.")
    assert ExpertItem.objects.get(pk=items[0].pk).completed_at is not None


def test_an_incomplete_page_form_saves_what_was_given_and_shows_what_is_missing(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    data = full_answers(items[0])
    del data["C-completeness"], data["original-severity"]
    response = client.post(page_url(participant, items[0]), data | {"action": "next"})
    assert response.status_code == 302 and response.url == page_url(participant, items[0]) + "?missing=1"
    html = client.get(response.url).content.decode()
    assert html.count("Please answer") == 2
    assert "2 answers still missing" in re.sub(r"<[^>]+>", "", html)
    assert len(answers.ratings()) == 4 and answers.judgement().simplicity == 2
    assert ExpertItem.objects.get(pk=items[0].pk).completed_at is None


def test_a_page_form_with_a_bad_value_is_a_400_and_saves_nothing(client):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = started(client, participant)[0]
    data = full_answers(item) | {"B-structure": "9"}
    response = client.post(page_url(participant, item), data)
    assert response.status_code == 400
    assert "Nothing on this page was saved" in response.content.decode()
    assert nothing_saved()


def test_previous_and_skip_save_first_then_move(client):
    study = build_study(n_sources=3)
    participant = radiologist(study)
    items = started(client, participant)
    response = client.post(page_url(participant, items[1]), {"A-correctness": "3", "action": "previous"})
    assert response.url == page_url(participant, items[0])
    response = client.post(page_url(participant, items[1]), {"A-completeness": "2", "action": "skip"})
    assert response.url == page_url(participant, items[2])
    rating = answers.rating()
    assert (rating.correctness, rating.completeness) == (3, 2)


def test_the_page_form_is_timed_from_its_signed_render_time_or_the_clients_count(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    stamp = pages.page_stamp(item=items[0], now=time.time() - 20)
    client.post(page_url(participant, items[0]), {"A-correctness": "3", "rendered_at": stamp})
    spent = ExpertItem.objects.get(pk=items[0].pk).time_spent_ms
    assert 20000 <= spent < pages.MAX_INTERVAL_MS
    client.post(
        page_url(participant, items[1]), {"A-correctness": "3", "rendered_at": stamp, "elapsed_ms": "4321"}
    )
    assert ExpertItem.objects.get(pk=items[1].pk).time_spent_ms == 4321  # the client's count wins


def test_a_rendered_page_carries_its_answers_after_a_reload(client):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = started(client, participant)[0]
    client.post(page_url(participant, item), {"B-structure": "2", "original-severity": "Critical"}, **HTMX)
    html = client.get(page_url(participant, item)).content.decode()
    checked = re.findall(r'name="([^"]+)" value="([^"]+)"[^>]* checked', html)
    assert sorted(checked) == [("B-structure", "2"), ("original-severity", "Critical")]


# --- completion and revising -------------------------------------------------------------------------------


def test_done_page_sends_back_to_unfinished_work_then_completes_the_participant(client):
    study = build_study(n_sources=2)
    participant = radiologist(study)
    items = started(client, participant)
    done = reverse("surveys:expert-done", args=[participant.token])
    assert client.get(done).url == page_url(participant, items[0]) + "?why=finish"
    html = client.get(page_url(participant, items[0]) + "?why=finish").content.decode()
    missing = len(pages.expert_page_get(item=items[0]).missing)
    assert f"Not finished yet: sentence 1 still has {missing} unanswered rows" in re.sub(r"<[^>]+>", "", html)
    client.post(page_url(participant, items[0]), full_answers(items[0]))
    response = client.post(page_url(participant, items[1]), full_answers(items[1]))
    assert response.url == done
    response = client.get(done)
    assert response.status_code == 200 and "all 2 sentences are rated" in response.content.decode()
    participant.refresh_from_db()
    assert participant.completed_at is not None


def test_a_participant_who_finished_may_still_revise_while_the_study_is_open(client):
    study = build_study(n_sources=1)
    participant = radiologist(study)
    item = started(client, participant)[0]
    client.post(page_url(participant, item), full_answers(item, value=4))
    response = client.post(page_url(participant, item), {"A-correctness": "1"}, **HTMX)
    assert response.status_code == 200
    rating = answers.rating(shown_text=item.text_order[0])
    assert rating.correctness == 1
    # The earlier value is kept (annotation.AnswerRevision), with when it had been saved.
    row = ItemAnswer.objects.get(
        participant=participant, shown_text_id=item.text_order[0], item_key="correctness"
    )
    (revision,) = AnswerRevision.objects.filter(answer_id=row.pk, answer_type="annotation.ItemAnswer")
    assert revision.previous == {"value": 4} and revision.previous_at < revision.revised_at


def test_several_radiologists_rate_independently_and_answers_reach_study_stats(client):
    study = build_study(n_sources=1, shared=((0, "plain_bs", "cot_bs"),))
    first, second = radiologist(study), radiologist(study)
    item_1 = started(client, first)[0]
    item_2 = started(client, second)[0]
    client.post(page_url(first, item_1), full_answers(item_1, value=5))
    html = client.get(page_url(second, item_2)).content.decode()
    assert " checked" not in html  # the second radiologist sees none of the first one's answers
    client.post(page_url(second, item_2), full_answers(item_2, value=2))
    assert sum(r.correctness == 5 for r in answers.ratings(participant=first)) == 3
    assert sum(r.correctness == 2 for r in answers.ratings(participant=second)) == 3
    out = StringIO()
    call_command("study_stats", study=study.slug, stdout=out)
    counts = json.loads(out.getvalue())
    # 3 distinct texts per rater; the shared one counts once per system that produced it.
    assert counts["expert_ratings"] == 2 * 4
    assert counts["expert_source_judgements"] == 2


# --- radiologists with accounts -----------------------------------------------------------------------------


def test_study_list_needs_a_login_and_lists_only_the_users_studies(client):
    user = get_user_model().objects.create_user("dr_a", password="s3cret-pass")
    mine = build_study(slug="mine", n_sources=2)
    theirs = build_study(slug="theirs", n_sources=1)
    participant = radiologist(mine, user=user)
    radiologist(theirs)
    url = reverse("surveys:expert-studies")
    assert client.get(url).url.startswith(reverse("surveys:expert-login"))

    response = client.post(reverse("surveys:expert-login"), {"username": "dr_a", "password": "s3cret-pass"})
    assert response.url == url
    html = client.get(url).content.decode()
    assert "Study mine" in html and "Study theirs" not in html
    assert reverse("surveys:expert-start", args=[participant.token]) in html
    assert "0 / 2" in html
