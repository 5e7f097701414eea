"""AI-assisted error-span marking in headless Chromium: a radiologist's span widget is pre-filled
with a glossary judge's spans and planted wrong ones (the page does not say which); the rater
accepts a judge suggestion by keyboard and deletes a planted one with the mouse; the answer stores
both fates and the study's analysis counts both."""

from __future__ import annotations

import pytest

from annotation import participant_services
from annotation.models import ExpertItem, Participant, StudyInstrument
from annotation.span_suggestions import span_suggestions_offered
from evaluation import services as evaluation_services
from evaluation.analysis.protocol import AnalysisOptions
from instruments.validation import instrument_from_data
from judging import services as judging_services
from judging.span_assistance import span_assistance_set
from tests.annotation import answers
from tests.e2e.polling import wait_for
from tests.judging.test_span_assistance import TEXT, assisted_study
from tests.studies.test_error_spans import label_of


def _fates(participant) -> dict[str, tuple[str, str]]:
    answer = answers.item_answers().filter(participant=participant, item_key="error_spans").first()
    if answer is None:
        return {}
    return {s["id"]: (s["origin"], s["fate"]) for s in (answer.suggestions or {}).get("items", [])}


@pytest.mark.django_db(transaction=True)
def test_a_radiologist_accepts_a_suggestion_and_deletes_a_planted_one(page, live_server):
    from playwright.sync_api import expect

    study = assisted_study("assisted-browser")
    expert = StudyInstrument.objects.get(study=study, flow="expert", is_current=True)
    run = judging_services.judge_run_create(study=study, backend="glossary", instruments=[expert.key])
    for item_id in run.items.values_list("pk", flat=True):
        judging_services.judge_item_run(item_id=item_id)
    span_assistance_set(study=study, run=run, planted_rate=0.5, seed=3)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)

    page.goto(f"/s/{participant.token}/")
    page.click("#begin")
    item = ExpertItem.objects.filter(participant=participant).order_by("position").first()
    field = f"{label_of(item, TEXT)}-error_spans"
    widget = f'[data-span-item][data-field="{field}"]'
    page.wait_for_selector(f"{widget}[data-ready]", state="attached")

    text = study.sources.get().simplifications.get(system__key="a").shown_text
    span_item = instrument_from_data(expert.definition).item("error_spans")
    _, offered = span_suggestions_offered(participant=participant, text=text, item=span_item)
    judge = next(s for s in offered if s.origin == "judge")
    planted = next(s for s in offered if s.origin == "planted")

    entries = page.locator(f"{widget} [data-span-suggestion-list] li")
    expect(entries).to_have_count(len(offered))
    # Shown as suggestions, outlined in the text, with nothing that tells a planted one apart.
    expect(page.locator(f"{widget} mark.span-suggested")).to_have_count(len(offered))
    assert "planted" not in page.locator(widget).inner_html()

    # Accept the judge's suggestion by keyboard: its Accept button has a name, Enter presses it.
    accept = page.locator(f'{widget} li[data-suggestion="{judge.id}"] .span-suggestion-accept')
    accept.focus()
    page.keyboard.press("Enter")
    status = page.locator(f"{widget} [data-span-status]")
    expect(status).to_contain_text(f"Suggestion accepted: “{TEXT[judge.start : judge.end]}”")
    expect(page.locator(f"{widget} mark.span-mark")).to_have_count(1)

    # Delete the planted one with the mouse.
    page.locator(f'{widget} li[data-suggestion="{planted.id}"] .span-suggestion-delete').click()
    expect(status).to_contain_text("Suggestion deleted")
    expect(entries).to_have_count(len(offered) - 2)

    expected = {judge.id: ("judge", "accepted"), planted.id: ("planted", "deleted")}
    got = wait_for(lambda: {k: v for k, v in _fates(participant).items() if k in expected}, expected)
    assert got == expected
    answer = answers.item_answers().get(participant=participant, item_key="error_spans")
    assert answer.value == [
        {"start": judge.start, "end": judge.end, "category": judge.category, "severity": judge.severity}
    ]

    # Edit another: it becomes the selection with its category and severity chosen; the rater
    # changes the severity and adds the mark.
    other = next(s for s in offered if s.id not in (judge.id, planted.id))
    page.locator(f'{widget} li[data-suggestion="{other.id}"] .span-suggestion-edit').click()
    expect(status).to_contain_text(f"Editing the suggestion “{TEXT[other.start : other.end]}”")
    checked = page.locator(f"{widget} [data-span-category]:checked")
    assert checked.get_attribute("value") == other.category
    page.locator(f'{widget} [data-span-severity][value="minor"]').check()
    page.locator(f"{widget} [data-span-add]").click()
    expected[other.id] = (other.origin, "edited")
    got = wait_for(lambda: {k: v for k, v in _fates(participant).items() if k in expected}, expected)
    assert got == expected
    edited = {"start": other.start, "end": other.end, "category": other.category, "severity": "minor"}
    expect(status).to_contain_text("Mark 2 added")

    def stored() -> bool:
        return edited in answers.item_answers().get(participant=participant, item_key="error_spans").value

    assert wait_for(stored, True)

    # After a reload the decided suggestions stay decided.
    page.reload()
    page.wait_for_selector(f"{widget}[data-ready]", state="attached")
    expect(entries).to_have_count(len(offered) - 3)
    expect(page.locator(f"{widget} mark.span-mark")).to_have_count(2)

    options = AnalysisOptions(n_resamples=20, correlations=False, metric_families=())
    section = evaluation_services.study_analysis_compute(study=study, options=options)["span_suggestions"]
    overall = section["acceptance"]["overall"]
    kept = {"judge": 1, "planted": 0}
    decided = {"judge": 1, "planted": 1}
    kept[other.origin] += 1
    decided[other.origin] += 1
    for origin in ("judge", "planted"):
        assert (
            overall[origin]["kept"]["k"] == kept[origin] and overall[origin]["kept"]["n"] == decided[origin]
        )
    assert overall["judge"]["pending"] + overall["planted"]["pending"] == len(offered) - 3
