"""AI-assisted error-span marking from a judge run (judging.span_assistance): the option refuses a
bad rate on its field; a radiologist's page offers the judge's spans and planted ones without saying
which; the fates the page sends are stored with the answer and counted by the analysis."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string

from annotation import participant_services
from annotation.models import Participant, StudyInstrument
from annotation.span_suggestions import span_suggestions_offered
from evaluation import services as evaluation_services
from evaluation.analysis.protocol import AnalysisOptions
from judging.span_assistance import span_assistance_set
from studies import source_services
from studies.error_span_services import study_error_spans_add
from tests.annotation import answers
from tests.annotation.factories import build_study
from tests.studies.test_error_spans import HTMX, label_of, page_url, started

FAST = AnalysisOptions(n_resamples=20, correlations=False, metric_families=())


SOURCE = "Small 3 mm nodule in the left lower lobe. No pleural effusion."
TEXT = "There is a small 3 mm nodule in the left lung. There is no fluid around the lung."


def assisted_study(slug: str):
    """One source, system a's text TEXT, the error-span typology added."""
    study = build_study(slug=slug, n_sources=1, systems=("a", "b"))
    source = study.sources.get()
    source.text = SOURCE
    source.save(update_fields=["text"])
    source_services.simplification_upsert(source=source, system=study.systems.get(key="a"), text=TEXT)
    study_error_spans_add(study=study, actor=None)
    study.refresh_from_db()
    return study


@pytest.fixture
def assisted(db, launch):
    study = assisted_study("assisted")
    key = StudyInstrument.objects.get(study=study, flow="expert", is_current=True).key
    run = launch(study=study, backend="glossary", instruments=[key])
    span_assistance_set(study=study, run=run, planted_rate=0.5, seed=3)
    return study, run


@pytest.mark.parametrize("rate", [0, 0.6, -1, "half"])
def test_a_rate_outside_zero_to_a_half_is_refused_on_its_field(assisted, rate):
    study, run = assisted
    with pytest.raises(ValidationError) as caught:
        span_assistance_set(study=study, run=run, planted_rate=rate)
    assert "planted_rate" in caught.value.message_dict


def _offered(study, participant):
    item = StudyInstrument.objects.get(study=study, flow="expert", is_current=True)
    from instruments.validation import instrument_from_data

    span_item = instrument_from_data(item.definition).item("error_spans")
    text = study.sources.get().simplifications.get(system__key="a").shown_text
    return span_suggestions_offered(participant=participant, text=text, item=span_item)


def test_the_page_offers_suggestions_and_the_fates_are_stored_and_counted(assisted, client):
    study, run = assisted
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    item = started(client, participant)
    field = f"{label_of(item, TEXT)}-error_spans"
    assisted_page, offered = _offered(study, participant)
    assert assisted_page and offered
    origins = {s.id: s.origin for s in offered}
    assert "planted" in origins.values()

    html = client.get(page_url(participant, item)).content.decode()
    block = re.search(rf'<script id="span-suggestions-{field}" type="application/json">(.*?)</script>', html)
    shown = json.loads(unescape(block.group(1)))
    assert [s["id"] for s in shown] == [s.id for s in offered]
    assert all(set(s) == {"id", "start", "end", "category", "severity", "fate"} for s in shown)
    assert "planted" not in block.group(1)  # the page never says which suggestions are planted

    keep = next(s for s in offered if s.origin == "judge") if "judge" in origins.values() else offered[0]
    drop = next(s for s in offered if s.origin == "planted" and s.id != keep.id)
    marks = [{"start": keep.start, "end": keep.end, "category": keep.category, "severity": keep.severity}]
    answer = {"marks": marks, "suggestions": {keep.id: "accepted", drop.id: "deleted"}}
    response = client.post(page_url(participant, item), {field: json.dumps(answer)}, **HTMX)
    assert response.status_code == 200
    row = answers.item_answers().get(participant=participant, item_key="error_spans")
    assert row.value == marks
    fates = {s["id"]: (s["origin"], s["fate"]) for s in row.suggestions["items"]}
    assert fates[keep.id] == (keep.origin, "accepted") and fates[drop.id] == ("planted", "deleted")

    # The reloaded page shows the fates stored.
    html = client.get(page_url(participant, item)).content.decode()
    block = re.search(rf'<script id="span-suggestions-{field}" type="application/json">(.*?)</script>', html)
    assert {s["id"]: s["fate"] for s in json.loads(unescape(block.group(1)))}[drop.id] == "deleted"

    # A forged fate or a suggestion never offered is refused by name and changes nothing.
    for forged in ({"s99": "accepted"}, {keep.id: "kept"}):
        response = client.post(
            page_url(participant, item), {field: json.dumps({"marks": [], "suggestions": forged})}, **HTMX
        )
        assert "error_spans" in response.content.decode()
        assert answers.item_answers().get(pk=row.pk).value == marks

    analysis = evaluation_services.study_analysis_compute(study=study, options=FAST)
    section = analysis["span_suggestions"]
    overall = section["acceptance"]["overall"]
    assert overall["planted"]["kept"]["n"] == 1 and overall["planted"]["kept"]["estimate"] == 0
    kept_origin = keep.origin
    assert overall[kept_origin]["kept"]["k"] == 1
    assert section["span_rates"]["assisted"]["estimate"] == 1
    html = render_to_string("evaluation/_span_suggestions.html", {"analysis": analysis})
    assert "planted suggestions kept" in html and "0/1" in html and "Marks per page: assisted 1.00" in html
    for block in (overall["judge"], overall["planted"]):
        cell = block["kept"]
        assert cell["low"] is None or 0 <= cell["low"] <= cell["high"] <= 1

    # The export: one row per suggestion offered, with its origin and the rater's fate.
    from evaluation.exports.items import ItemAnswerExport

    export = ItemAnswerExport(study=study, file_format="json", layout="suggestions")
    rows = [dict(zip(export.columns, row, strict=True)) for row in export.rows()]
    assert [r["suggestion"] for r in rows] == [s.id for s in offered]
    by_id = {r["suggestion"]: r for r in rows}
    assert (by_id[drop.id]["origin"], by_id[drop.id]["fate"]) == ("planted", "deleted")
    assert (by_id[keep.id]["origin"], by_id[keep.id]["fate"]) == (keep.origin, "accepted")
    assert by_id[keep.id]["suggested_text"] == TEXT[keep.start : keep.end]


def test_a_page_of_a_study_without_assistance_offers_nothing(db, client):
    study = assisted_study("unassisted")
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    assert _offered(study, participant) is None
    item = started(client, participant)
    field = f"{label_of(item, TEXT)}-error_spans"
    response = client.post(
        page_url(participant, item), {field: json.dumps({"marks": [], "suggestions": {}})}, **HTMX
    )
    assert "offers no suggestions" in response.content.decode()


def test_the_command_turns_it_on_refuses_a_bad_rate_by_field_and_turns_it_off(assisted):
    import io

    from django.core.management import CommandError, call_command

    from judging.models import SpanAssistance

    study, run = assisted
    out = io.StringIO()
    call_command(
        "span_assistance", study=study.slug, run=run.pk, planted_rate="0.25", assisted_share="0.5", stdout=out
    )
    option = SpanAssistance.objects.get(study=study)
    assert (option.planted_rate, option.assisted_share) == (0.25, 0.5)
    with pytest.raises(CommandError, match="planted_rate: .*at most 0.5"):
        call_command("span_assistance", study=study.slug, run=run.pk, planted_rate="0.7", stdout=out)
    assert SpanAssistance.objects.get(study=study).planted_rate == 0.25
    call_command("span_assistance", study=study.slug, off=True, stdout=out)
    assert not SpanAssistance.objects.get(study=study).enabled


def _page_queries(client, participant) -> tuple[int, str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    item = started(client, participant)
    url = page_url(participant, item)
    client.get(url)  # the first visit may record the page's start: not what is measured
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    return len(queries), html


@pytest.mark.parametrize("assisted_on", [False, True], ids=["off", "on"])
def test_a_page_costs_the_same_queries_whatever_its_number_of_texts(db, client, launch, assisted_on):
    """The suggestions are read once per page (the option, the judge's spans, the stored fates),
    never per text: a page of six texts costs what a page of two costs, assistance off or on."""
    counts = {}
    for systems in (("a", "b"), ("a", "b", "c", "d", "e", "f")):
        study = build_study(slug=f"cost{len(systems)}{int(assisted_on)}", n_sources=1, systems=systems)
        study_error_spans_add(study=study, actor=None)
        study.refresh_from_db()
        if assisted_on:
            key = StudyInstrument.objects.get(study=study, flow="expert", is_current=True).key
            run = launch(study=study, backend="glossary", instruments=[key])
            span_assistance_set(study=study, run=run, planted_rate=0.5, seed=3)
        participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
        counts[len(systems)], html = _page_queries(client, participant)
        assert ('id="span-suggestions-' in html) is assisted_on
    assert counts[6] == counts[2], counts
