"""What a survey page GET renders faster (its CPU, bench/survey_pages.py) is byte for byte what was
rendered before: the Likert buttons of a radiologist row (surveys/templatetags/rating_rows.py,
escaped once per scale wording), a lay question's options (question_choices.py), the keyboard help
and the scripts' strings kept per language (protocol_wording.py); and a whole page is the same from
a cold and from a warm cache, in English and in Spanish, with no query added."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.template.loader import render_to_string
from django.test.utils import CaptureQueriesContext
from django.utils import translation
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from annotation import participant_services
from annotation.models import Participant, Study
from surveys.lay.panels import Option, Question
from surveys.radiologist import pages
from surveys.radiologist.pages import ShownLevel
from surveys.templatetags import protocol_wording, question_choices, rating_rows
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

# What differs between two GETs of one page: the CSRF token and the signed render time.
_VOLATILE = re.compile(r'(csrfmiddlewaretoken" value=|"X-CSRFToken": |name="rendered_at" value=)"[^"]*"')


def _likert_choices_as_before(cell, levels) -> str:
    """The tag as it was written (format_html_join over every button of the row)."""
    return format_html_join(
        "",
        '\n    <label title="{} – {}"><input type="radio" name="{}" value="{}" data-key="{}"{}>'
        "<span>{}</span></label>",
        (
            (
                level.value,
                level.label,
                cell.field,
                level.value,
                number,
                mark_safe(" checked") if cell.value == level.value else "",
                level.value,
            )
            for number, level in enumerate(levels, 1)
        ),
    )


def test_the_likert_buttons_are_the_markup_the_tag_wrote():
    levels = tuple(
        ShownLevel(name=f"n{code}", value=code, label=label)
        for code, label in enumerate(
            ("totalmente en desacuerdo", 'a "quoted" <b>label</b> & more', "neutral"), 1
        )
    )
    for value in (None, 1, 2, 3, 4):
        for field in ("A-correctness", 'odd"<field>&'):
            cell = pages.Cell(field=field, key="correctness", value=value)
            assert rating_rows.likert_choices(cell, levels) == _likert_choices_as_before(cell, levels)
    # A new levels object (another language, version) is never served another's markup.
    other = tuple(
        ShownLevel(name=level.name, value=level.value, label=level.label.upper()) for level in levels
    )
    cell = pages.Cell(field="A-correctness", key="correctness", value=2)
    assert rating_rows.likert_choices(cell, other) == _likert_choices_as_before(cell, other)
    assert rating_rows.likert_choices(cell, levels) == _likert_choices_as_before(cell, levels)


def _question_choices_as_before(question, first_error) -> str:
    """The lay options' tag as it was written (format_html_join over every option)."""
    kind = "checkbox" if question.multiple else "radio"
    focus = question.name == first_error
    return format_html_join(
        "",
        '\n    <label><input type="{}" name="{}" value="{}"{}{}{}><span class="opt"><span class="opt-name">'
        '<span class="key js-only">{}</span>{}</span>{}</span></label>',
        (
            (
                kind,
                question.name,
                option.value,
                mark_safe(" checked") if option.checked else "",
                mark_safe(" autofocus") if number == 1 and focus else "",
                format_html(
                    ' class="conflict" aria-invalid="true" aria-describedby="q-{}-error"', question.name
                )
                if option.conflict
                else "",
                number,
                option.label,
                format_html('<span class="level-def">{}</span>', option.definition)
                if option.definition
                else "",
            )
            for number, option in enumerate(question.options, 1)
        ),
    )


@pytest.mark.parametrize("multiple", [False, True])
def test_the_lay_options_are_the_markup_the_tag_wrote(multiple):
    options = [
        Option("Not at all", "Nada", "", checked=True),
        Option('a "b" <c>', "Label & <i>more</i>", 'Defined as "x" < y', conflict=multiple),
        Option("17", "Simplification B", "", checked=multiple, conflict=multiple),
    ]
    question = Question('name"<>', "Q1", "Wording", options, multiple=multiple)
    for first_error in (None, 'name"<>', "other"):
        expected = _question_choices_as_before(question, first_error)
        assert question_choices.question_choices(question, first_error) == expected


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_parts_kept_per_language_are_what_the_templates_render(language):
    protocol_wording._BY_LANGUAGE.clear()
    with translation.override(language):
        fresh = render_to_string("surveys/radiologist/_keys_help.html")
        assert protocol_wording.language_part("surveys/radiologist/_keys_help.html") == fresh
        assert protocol_wording.language_part("surveys/radiologist/_keys_help.html") == fresh  # kept
        assert protocol_wording.survey_strings() == protocol_wording._survey_strings()
    # Kept per language: the other language gets its own.
    other = "es" if language == "en" else "en"
    with translation.override(other):
        assert protocol_wording.language_part("surveys/radiologist/_keys_help.html") != fresh
        assert protocol_wording.survey_strings() == protocol_wording._survey_strings()
    assert ("Teclado" in fresh) == (language == "es")


@pytest.mark.parametrize("language", ["en", "es"])
def test_a_radiologist_page_is_the_same_from_a_cold_and_a_warm_cache(client, language):
    study = build_study(slug=f"cache-{language}", n_sources=2, systems=("a", "b", "c"))
    Study.objects.filter(pk=study.pk).update(language=language)
    participant = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    client.post(f"/r/{participant.token}/instructions/")
    item = participant.expert_items.order_by("position").first()
    url = f"/r/{participant.token}/page/{item.pk}/"
    # Some answers, so that checked buttons and the answered rows' marks are in the page.
    client.post(
        url, {"A-correctness": "4", "B-simplicity": "1", "original-severity": "Mild"}, HTTP_HX_REQUEST="true"
    )
    client.get(url)  # the instrument read once (cached by the study's stamp)
    rating_rows._PARTS.clear()
    protocol_wording._BY_LANGUAGE.clear()
    cold = client.get(url).content.decode()
    with CaptureQueriesContext(connection) as queries:
        warm = client.get(url).content.decode()
    assert len(queries) == 4  # as pinned for the protocol page (test_instrument_flows.py)
    assert _VOLATILE.sub("", cold) == _VOLATILE.sub("", warm)
    assert warm.count(" checked>") == 3 and 'id="keys-help"' in warm and 'id="survey-strings"' in warm
