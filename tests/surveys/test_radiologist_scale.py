"""The radiologist flow at study scale and under concurrency: every request costs a fixed number of
queries whatever the study's size and the rater's progress, the index of all sentences is not in
every page, concurrent full-page posts never deadlock, and free text is bounded."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation import answer_writes, participant_services
from annotation.models import ExpertItem, Participant
from surveys.radiologist import pages
from surveys.radiologist import selectors as progress
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study

HTMX = {"HTTP_HX_REQUEST": "true"}

# Pinned from the measured counts (transaction and savepoint statements included); they must not
# grow with the number of sources or the pages already done.
PAGE_GET_QUERIES = 4  # page with participant, the page's rows, the progress, the neighbours' ids
AUTOSAVE_QUERIES = 5  # savepoint, token + page locked with its time, the page's rows, upsert, release
# The autosave that completes the page also marks it complete and counts the survey's progress
# (one UPDATE, one aggregate).
COMPLETING_AUTOSAVE_QUERIES = AUTOSAVE_QUERIES + 2
# A submit of answers all saved already: savepoint, token + page locked with its time, the page's
# rows, release (nothing written), then the progress and the neighbours' ids (where to go next).
SUBMIT_QUERIES = 6
# The submit that carries the page's answers (survey.js sends the answers still waiting with it)
# and completes the survey: the same, plus one INSERT of the new answers of every target (each
# text, the original), the completion's UPDATE, the progress counted under the lock, the
# participant's completion, and the look-up of where to resume (nothing: the end page).
SUBMIT_CARRYING_QUERIES = 11


def page_url(participant, item) -> str:
    return reverse("surveys:expert-page", args=[participant.token, item.pk])


def full_answers(item, value: int = 4) -> dict[str, str]:
    page = pages.expert_page_get(item=item)
    data = {"original-severity": "Moderate", "original-simplicity": "2"}
    data.update({cell.field: str(value) for row in page.texts for cell in row.aspects})
    return data


def started(client, participant) -> list[ExpertItem]:
    client.get(reverse("surveys:entry", args=[participant.token]))
    client.post(reverse("surveys:expert-instructions", args=[participant.token]))
    return list(ExpertItem.objects.filter(participant=participant).order_by("position"))


@pytest.mark.django_db
@pytest.mark.parametrize("n_sources", [3, 40])
def test_page_autosave_and_submit_cost_a_fixed_number_of_queries(
    client, django_assert_max_num_queries, n_sources
):
    study = build_study(slug=f"scale{n_sources}", n_sources=n_sources, systems=("a", "b", "c"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    items = started(client, participant)
    # Progress must not matter either: finish all but the last two pages first.
    for item in items[:-2]:
        pages.expert_page_save(participant=participant, item=item, data=full_answers(item))
    item = items[-2]
    url = page_url(participant, item)

    with django_assert_max_num_queries(PAGE_GET_QUERIES):
        response = client.get(url)
    assert response.status_code == 200
    with django_assert_max_num_queries(AUTOSAVE_QUERIES):
        response = client.post(url, {"A-correctness": "3", "elapsed_ms": "900"}, **HTMX)
    assert response.status_code == 200 and "Saved" in response.content.decode()
    # A changed answer keeps its earlier value (annotation.AnswerRevision): one INSERT more.
    with django_assert_max_num_queries(AUTOSAVE_QUERIES + 1):
        response = client.post(url, {"A-correctness": "4", "elapsed_ms": "900"}, **HTMX)
    assert response.status_code == 200
    answers = full_answers(item)
    last = answers.popitem()
    pages.expert_page_save(participant=participant, item=item, data=answers)
    with django_assert_max_num_queries(COMPLETING_AUTOSAVE_QUERIES):
        response = client.post(url, dict([last]) | {"elapsed_ms": "900"}, **HTMX)
    assert response.status_code == 200 and "Page complete" in response.content.decode()
    assert f"{len(items) - 1} of {len(items)} sentence" in response.content.decode()
    data = full_answers(item) | {"action": "next"}
    with django_assert_max_num_queries(SUBMIT_QUERIES):
        response = client.post(url, data)
    assert response.status_code == 302 and response.url == page_url(participant, items[-1])
    first = typed_answers.rating(participant=participant, shown_text=item.text_order[0])
    assert first.correctness == 4
    data = full_answers(items[-1]) | {"action": "next"}
    with django_assert_max_num_queries(SUBMIT_CARRYING_QUERIES):
        response = client.post(page_url(participant, items[-1]), data)
    assert response.status_code == 302 and response.url.endswith("/done/")


@pytest.mark.django_db
def test_a_rating_page_links_its_neighbours_and_leaves_the_index_to_a_lazy_request(client):
    study = build_study(slug="index", n_sources=5, systems=("a", "b"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    items = started(client, participant)
    html = client.get(page_url(participant, items[2])).content.decode()
    assert "<h1" in html and "Sentence 3 of 5" in html
    # No page link of the index is rendered into the page itself: only the lazy loader's link.
    assert html.count('class="index-entry') == 0
    index_url = reverse("surveys:expert-index", args=[participant.token])
    assert f'hx-get="{index_url}?current={items[2].pk}&amp;from=2"' in html

    fragment = client.get(f"{index_url}?current={items[2].pk}", **HTMX).content.decode()
    assert "<html" not in fragment
    assert fragment.count('class="index-entry') == 5
    assert f'href="{page_url(participant, items[4])}"' in fragment
    assert 'aria-current="page"' in fragment and f'id="index-{items[2].pk}"' in fragment

    plain = client.get(index_url)
    assert plain.status_code == 200 and "<h1>All sentences</h1>" in plain.content.decode()


@pytest.mark.django_db
def test_the_index_comes_200_sentences_at_a_time(client, monkeypatch):
    monkeypatch.setattr(progress, "INDEX_PAGE_SIZE", 2)
    study = build_study(slug="paged", n_sources=5, systems=("a",))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    items = started(client, participant)
    index_url = reverse("surveys:expert-index", args=[participant.token])
    html = client.get(f"{index_url}?from=3").content.decode()
    assert [page_url(participant, item) in html for item in items] == [False, False, True, True, False]
    assert "Sentences 3–4 of 5" in html
    assert f'href="{index_url}?from=0"' in html and f'href="{index_url}?from=4"' in html
    assert client.get(f"{index_url}?from=-7").status_code == 200
    assert client.get(f"{index_url}?from=abc").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_concurrent_full_page_posts_in_different_field_orders_neither_deadlock_nor_lose_answers():
    study = build_study(slug="race", n_sources=1, systems=("a", "b", "c"))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(Client(), participant)[0]
    url = page_url(participant, item)
    fields = list(full_answers(item))
    # Every row exists before the race, so each post locks rows that the others lock too.
    assert Client().post(url, full_answers(item, value=1)).status_code == 302

    statuses: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(12)

    def post(n: int) -> None:
        try:
            order = fields[:]
            random.Random(n).shuffle(order)
            values = full_answers(item, value=n % 5 + 1)
            data = {name: values[name] for name in (order if n % 2 else reversed(order))}
            client = Client(raise_request_exception=True)
            start.wait()
            statuses.append(client.post(url, data).status_code)
        except BaseException as exc:  # noqa: BLE001 (reported by the assertion below)
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert statuses == [302] * 12
    ratings = list(typed_answers.ratings(participant=participant))
    assert len(ratings) == 3
    # Each post wrote one value everywhere; the last one to commit wins on every row alike.
    values = {getattr(rating, aspect) for rating in ratings for aspect in ("correctness", "structure")}
    assert len(values) == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("A-comment", "a\x00b", "NUL character"),
        ("original-comment", "a\x00b", "NUL character"),
        ("A-comment", "x" * (answer_writes.COMMENT_MAX_LENGTH + 1), "at most 5000"),
        ("original-comment", "x" * (answer_writes.COMMENT_MAX_LENGTH + 1), "at most 5000"),
    ],
)
def test_a_comment_with_a_nul_or_over_the_limit_is_a_clear_400(client, field, text, message):
    study = build_study(slug="text", n_sources=1, systems=("a",))
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)[0]
    url = page_url(participant, item)
    response = client.post(url, {field: text}, **HTMX)
    assert response.status_code == 400 and message in response.content.decode()
    response = client.post(url, full_answers(item) | {field: text})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing on this page was saved" in html and message in html
    assert not typed_answers.ratings() and not typed_answers.judgements()
    # The limit itself is accepted.
    ok = "y" * answer_writes.COMMENT_MAX_LENGTH
    assert client.post(url, {field: ok}, **HTMX).status_code == 200
