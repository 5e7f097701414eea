"""A study's language (docs/guide/languages.md): the protocol's wording per language
(annotation/wording.py) against the presets' own files, the switch of every participant-facing
request to the study's language and back, the participant's recorded language, the check of
Study.language where it is set, and the Spanish catalogue (complete for the participant templates;
the committed .mo is what msgfmt makes of the .po)."""

from __future__ import annotations

import gettext
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import translation
from django.utils.translation.template import templatize

from annotation import participant_services, protocol_texts, scales
from annotation.models import LayItem, Participant, Study
from annotation.wording import protocol_wording, translation_status
from evaluation.exports.rows import answer_columns, answer_rows
from surveys.lay import assignment
from tests.annotation import answers as typed_answers
from tests.annotation.factories import build_study

REPO = Path(__file__).resolve().parents[2]
PO = REPO / "locale" / "es" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
PRESETS = REPO / "instruments" / "presets"
PARTICIPANT_TEMPLATES = [
    *sorted((REPO / "templates" / "surveys").rglob("*.html")),
    REPO / "templates" / "errors" / "page.html",
    REPO / "templates" / "500.html",
    REPO / "templates" / "base.html",
]


def _preset(name: str) -> dict:
    # The YAML itself, not instruments.presets: an independent reading of the Spanish wording.
    return yaml.safe_load((PRESETS / f"{name}.yaml").read_text(encoding="utf-8"))


def _item(preset: dict, key: str) -> dict:
    return next(item for item in preset["items"] if item["key"] == key)


# --- The wording lookup ---------------------------------------------------------------------------


def test_english_is_the_protocol_texts_byte_for_byte():
    for name in scales.LAY_QUESTIONS:
        assert protocol_wording(f"question:{name}", "en") == scales.LAY_SCALES[name].question
    assert protocol_wording("question:most", "en") == scales.PREFERENCE_MOST_QUESTION
    for level in scales.SEVERITY.levels:
        assert protocol_wording(f"level:severity:{level.name}", "en") == level.name
        assert protocol_wording(f"definition:severity:{level.name}", "en") == level.definition
    for panel, intro in protocol_texts.LAY_PANEL_INTROS.items():
        assert protocol_wording(f"intro:{panel}", "en") == intro
    assert protocol_wording("lay_consent", "en") == protocol_texts.LAY_CONSENT_DEFAULT
    assert protocol_wording("lay_instructions", "en") == protocol_texts.LAY_INSTRUCTIONS_DEFAULT
    assert protocol_wording("expert_instructions", "en") == protocol_texts.EXPERT_INSTRUCTIONS_DEFAULT
    assert protocol_wording("expert_likert_legend", "en") == protocol_texts.EXPERT_LIKERT_LEGEND
    # A regional variant and a language the presets do not translate get English.
    assert protocol_wording("question:understanding", "en-gb") == scales.UNDERSTANDING.question
    assert protocol_wording("question:understanding", "de") == scales.UNDERSTANDING.question


def test_spanish_is_the_presets_spanish():
    lay, expert = _preset("protocol_003_layperson"), _preset("protocol_003_radiologist")
    for name in scales.LAY_QUESTIONS:
        assert protocol_wording(f"question:{name}", "es") == _item(lay, name)["wording"]["es"]
    assert protocol_wording("question:least", "es") == _item(lay, "least")["wording"]["es"]
    assert protocol_wording("question:justification", "es") == "Por favor, justifique su respuesta."
    understanding = [point["label"]["es"] for point in _item(lay, "understanding")["scale"]["points"]]
    assert (
        [protocol_wording(f"level:understanding:{name}", "es") for name in scales.UNDERSTANDING.names]
        == understanding
        == ["En absoluto", "Algunas partes", "La mayor parte", "Completamente"]
    )
    # Matched by code: helpfulness runs -1..2, severity Critical = 1.
    assert protocol_wording("level:helpfulness:It further confused me", "es") == "Me confundió aún más"
    assert protocol_wording("level:severity:Healthy", "es") == "Sano"
    assert protocol_wording("definition:severity:Critical", "es").startswith("Describe una afección médica")
    assert protocol_wording("level:likert:strongly agree", "es") == "totalmente de acuerdo"
    assert protocol_wording("aspect_title:correctness", "es") == _item(expert, "correctness")["title"]["es"]
    assert (
        protocol_wording("aspect_statement:hallucination", "es")
        == (_item(expert, "hallucination")["short_wording"]["es"])
    )
    assert protocol_wording("intro:assisted", "es") == lay["phases"][1]["intro"]["es"]
    assert protocol_wording("expert_instruction", "es") == expert["description"]["es"]
    assert protocol_wording("expert_likert_legend", "es") == (
        "1 - totalmente en desacuerdo, 2 - en desacuerdo, 3 - neutral, 4 - de acuerdo, "
        "5 - totalmente de acuerdo."
    )
    instructions = protocol_wording("lay_instructions", "es")
    assert lay["phases"][0]["intro"]["es"] in instructions
    assert "Niveles de gravedad:\n- Crítico: Describe" in instructions
    assert "Acepto" in protocol_wording("lay_consent", "es")
    with pytest.raises(KeyError):
        protocol_wording("question:no_such_question", "es")


def test_the_spanish_translation_is_marked_unvalidated():
    assert translation_status("es") == "unvalidated translation"
    assert translation_status("en") == "source"
    assert translation_status("de") == "missing"
    assert "NOT YET VALIDATED" in PO.read_text(encoding="utf-8")


# --- The study's language on participant requests --------------------------------------------------


@pytest.fixture
def spanish_study(db) -> Study:
    study = build_study(slug="estudio", n_sources=2, systems=("a", "b"))
    study.language = "es"
    study.full_clean()
    study.save()
    return study


def test_a_spanish_study_shows_its_layperson_spanish_and_records_it(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    assert person.language == ""
    page = client.get(f"/l/{person.token}/consent/")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<html lang="es">' in html
    assert page["Content-Language"] == "es"
    assert "Información y consentimiento" in html
    assert "Acepto, continuar" in html and "I agree, continue" not in html
    assert protocol_wording("lay_consent", "es").split("\n")[0] in html
    # Reading a page writes nothing; the first POST (the consent) records the language.
    assert Participant.objects.get(pk=person.pk).language == ""
    client.post(f"/l/{person.token}/consent/", {"choice": "accept"})
    assert Participant.objects.get(pk=person.pk).language == "es"
    # The next request of the same thread is a researcher's: English again.
    login = client.get("/dashboard/login/")
    assert '<html lang="en">' in login.content.decode()
    assert translation.get_language() == settings.LANGUAGE_CODE


def test_panel_one_questions_and_labels_in_spanish_the_stored_value_unchanged(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=person, accepted=True)
    assignment.lay_survey_start(participant=person)
    item = LayItem.objects.filter(participant=person).order_by("position").first()
    url = f"/l/{person.token}/sentence/{item.pk}/original/"
    html = client.get(url).content.decode()
    assert "Usted entiende el significado de la frase." in html
    assert "You understand the meaning" not in html
    assert 'value="Some parts of it"' in html and "Algunas partes" in html
    assert "Mostrar la simplificación" in html
    assert "Dada una frase de un informe de radiología" in html
    # An answer left out is refused in Spanish; the answer given is stored by its level name.
    refused = client.post(url, {"understanding": "Some parts of it", "continue": "1"})
    assert refused.status_code == 400
    assert "Responda a esta pregunta." in refused.content.decode()
    assert typed_answers.lay_answer(item, "original").understanding == "Some parts of it"


def test_activation_costs_no_query(spanish_study, client):
    """The survey path reads the language from the study row it loads anyway: a Spanish panel GET
    costs what the same English one costs."""
    english = build_study(slug="english", n_sources=2, systems=("a", "b"))
    counts = {}
    for study in (english, spanish_study):
        person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
        participant_services.participant_consent(participant=person, accepted=True)
        assignment.lay_survey_start(participant=person)
        item = LayItem.objects.filter(participant=person).order_by("position").first()
        url = f"/l/{person.token}/sentence/{item.pk}/original/"
        client.get(url)  # the first request records the language (one write, once)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        counts[study.language] = len(queries)
    assert counts["es"] == counts["en"]


def test_refusals_before_the_view_are_in_the_studys_language(spanish_study):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    strict = Client(enforce_csrf_checks=True)
    refused = strict.post(f"/l/{person.token}/consent/", {"choice": "accept"})
    assert refused.status_code == 403
    assert "Su página había caducado" in refused.content.decode()
    # The other role's page, and a closed study's page.
    wrong = Client().get(f"/r/{person.token}/")
    assert wrong.status_code == 403
    assert "Este enlace es para una persona sin formación médica" in wrong.content.decode()
    spanish_study.status = Study.Status.CLOSED
    spanish_study.save()
    closed = Client().get(f"/l/{person.token}/")
    assert closed.status_code == 403
    assert "Esta encuesta no está abierta" in closed.content.decode()
    # An unknown link follows the browser's language.
    unknown = Client().get("/s/no-such-token/", HTTP_ACCEPT_LANGUAGE="es-ES,es;q=0.9")
    assert "Este enlace de la encuesta no es válido" in unknown.content.decode()
    assert "This survey link is not valid" in Client().get("/s/no-such-token/").content.decode()


def test_a_server_error_in_a_spanish_survey_is_in_spanish(spanish_study, monkeypatch):
    """The 500 page is rendered after the view raised, still in the study's language; the next
    request is English again."""
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)

    def broken(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr("surveys.lay.views.lay_next_step", broken)
    client = Client(raise_request_exception=False)
    failed = client.get(f"/l/{person.token}/consent/")
    assert failed.status_code == 500
    assert "Algo ha ido mal por nuestra parte" in failed.content.decode()
    assert '<html lang="es">' in failed.content.decode()
    assert "Page not found" in client.get("/no-such-page/").content.decode()


def test_a_started_participant_keeps_the_language_they_were_shown(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    client.get(f"/l/{person.token}/consent/")
    client.post(f"/l/{person.token}/consent/", {"choice": "accept"})  # the first POST records it
    spanish_study.language = "en"
    spanish_study.save()
    assert '<html lang="es">' in client.get(f"/l/{person.token}/", follow=True).content.decode()
    assert Participant.objects.get(pk=person.pk).language == "es"
    newcomer = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    assert "Information and consent" in client.get(f"/l/{newcomer.token}/consent/").content.decode()


def test_the_radiologist_page_in_spanish(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.RADIOLOGIST)
    html = client.get(f"/r/{person.token}/instructions/").content.decode()
    assert "Acepto — empezar" in html and "Corrección" in html
    client.post(f"/r/{person.token}/instructions/")
    item = person.expert_items.order_by("position").first()
    html = client.get(f"/r/{person.token}/page/{item.pk}/").content.decode()
    assert "La frase original" in html and "Toda la información es médicamente correcta." in html
    assert 'value="Critical"' in html and "Crítico" in html
    assert 'title="1 – totalmente en desacuerdo"' in html


def test_exports_record_the_language_each_participant_saw(spanish_study, client):
    person = participant_services.participant_create(study=spanish_study, role=Participant.Role.LAYPERSON)
    participant_services.participant_consent(participant=person, accepted=True)
    assignment.lay_survey_start(participant=person)
    item = LayItem.objects.filter(participant=person).order_by("position").first()
    client.post(
        f"/l/{person.token}/sentence/{item.pk}/original/",
        {"understanding": "Completely", "autosave": "1"},
        HTTP_HX_REQUEST="true",
    )
    rows = list(answer_rows(study=spanish_study))
    assert rows, "the answer was not stored"
    at = answer_columns().index("language")
    assert {row[at] for row in rows} == {"es"}


# --- Where Study.language is set ---------------------------------------------------------------------


def test_a_language_radlay_does_not_offer_is_refused(db, tmp_path):
    with pytest.raises(ValidationError) as refused:
        Study(slug="x", title="x", language="xx").full_clean()
    assert "language" in refused.value.message_dict
    data = tmp_path / "study.csv"
    data.write_text("source_key,source_text\ns1,A sentence.\n", encoding="utf-8")
    with pytest.raises(CommandError, match="language"):
        call_command("import_study", str(data), "--study", "lang", "--language", "xx", stdout=io.StringIO())
    assert not Study.objects.filter(slug="lang").exists()
    call_command("import_study", str(data), "--study", "lang", "--language", "es", stdout=io.StringIO())
    assert Study.objects.get(slug="lang").language == "es"


def test_the_admin_offers_the_languages(admin_client, db):
    study = build_study(slug="admin-lang", n_sources=1, systems=("a",))
    form = admin_client.get(f"/admin/annotation/study/{study.pk}/change/")
    html = form.content.decode()
    assert '<option value="es">Spanish</option>' in html


def test_the_dashboard_says_the_spanish_is_not_validated(spanish_study, admin_client):
    html = admin_client.get(f"/dashboard/{spanish_study.slug}/").content.decode()
    assert "not yet validated for research use" in html
    assert '<html lang="en">' in html


# --- The catalogue ---------------------------------------------------------------------------------


def _template_msgids() -> set[str | tuple[str, str]]:
    from babel.messages.extract import extract_python

    found: set[str | tuple[str, str]] = set()
    for path in PARTICIPANT_TEMPLATES:
        code = templatize(path.read_text(encoding="utf-8"), origin=str(path))
        for _, function, message, _ in extract_python(
            io.BytesIO(code.encode()), ["gettext", "ngettext"], [], {}
        ):
            if function == "ngettext":
                found.add((message[0], message[1]))
            elif message:
                found.add(message)
    return found


def _python_msgids() -> set[str | tuple[str, str]]:
    """What the participant-facing code passes to gettext (messages raised to participants)."""
    from babel.messages.extract import extract_python

    keywords = {"_": None, "gettext": None, "gettext_lazy": None, "ngettext": (1, 2)}
    found: set[str | tuple[str, str]] = set()
    apps = ("annotation", "studies", "surveys", "config")
    for path in sorted(path for app in apps for path in (REPO / app).rglob("*.py")):
        with path.open("rb") as handle:
            for _, _function, message, _ in extract_python(handle, keywords, [], {}):
                if isinstance(message, tuple):
                    found.add(message if len(message) == 2 else message[0])
                elif message:
                    found.add(message)
    return found


def test_every_participant_string_has_a_spanish_translation():
    with MO.open("rb") as handle:
        catalogue = gettext.GNUTranslations(handle)
    templates, code = _template_msgids(), _python_msgids()
    # The extraction found the strings (a broken extraction would pass vacuously).
    assert len(templates) > 100 and len(code) > 40
    assert catalogue.gettext("Information and consent") == "Información y consentimiento"
    msgids = templates | code
    missing = []
    for msgid in msgids:
        if isinstance(msgid, tuple):
            translated = catalogue.ngettext(msgid[0], msgid[1], 1), catalogue.ngettext(msgid[0], msgid[1], 2)
            if translated == msgid:
                missing.append(msgid)
        elif not catalogue._catalog.get(msgid):  # type: ignore[attr-defined]
            missing.append(msgid)
    assert not missing, f"no Spanish for: {missing}"
    # And nothing of the .po is left empty or fuzzy.
    text = PO.read_text(encoding="utf-8")
    assert not re.search(r'^msgstr(\[\d\])? ""\n\n', text, re.MULTILINE)
    assert "#, fuzzy" not in text


# Words a participant template may show untranslated: key names and the product's name.
UNTRANSLATED_WORDS = {"Enter", "Tab", "radlay"}


def _untranslated_words(template: str) -> list[str]:
    """The words of a template a participant would read that no {% translate %} or
    {% blocktranslate %} wraps: its text between tags and its title/aria-label/placeholder/alt."""
    text = re.sub(r"{%\s*blocktranslate.*?{%\s*endblocktranslate\s*%}", "", template, flags=re.S)
    text = re.sub(r"{%\s*block body_class\s*%}.*?{%\s*endblock\s*%}", "", text, flags=re.S)
    text = re.sub(r"{#.*?#}|{%.*?%}|{{.*?}}", "", text, flags=re.S)
    words = []
    for value in re.findall(r'\b(?:title|aria-label|placeholder|alt)="([^"]*)"', text):
        words += re.findall(r"[A-Za-z]{2,}", value)
    words += re.findall(r"[A-Za-z]{2,}", re.sub(r"<[^>]*>", " ", text))
    return [word for word in words if word not in UNTRANSLATED_WORDS]


def test_no_participant_template_shows_text_outside_the_catalogue():
    # The scan finds what it is for (a template with a bare sentence and attribute).
    assert _untranslated_words('<p title="Saved earlier">Text to rate {{ n }}</p>') == [
        "Saved",
        "earlier",
        "Text",
        "to",
        "rate",
    ]
    pairs = sorted((REPO / "templates" / "surveys" / "rate_each_pair").glob("*.html"))
    assert len(pairs) >= 8 and set(pairs) <= set(PARTICIPANT_TEMPLATES)
    left = {}
    for path in PARTICIPANT_TEMPLATES:
        words = _untranslated_words(path.read_text(encoding="utf-8"))
        # templates/base.html's footer cites the protocol's paper to researchers only (in English).
        if words and path != REPO / "templates" / "base.html":
            left[str(path.relative_to(REPO))] = words
    assert not left, left


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="msgfmt (gettext) is not installed")
def test_the_committed_mo_is_what_msgfmt_compiles_from_the_po(tmp_path):
    compiled = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "--check", "-o", str(compiled), str(PO)], check=True)
    if compiled.read_bytes() == MO.read_bytes():
        return
    # Another gettext version may lay the file out differently: the messages must still agree.
    with compiled.open("rb") as fresh, MO.open("rb") as committed:
        assert gettext.GNUTranslations(fresh)._catalog == gettext.GNUTranslations(committed)._catalog  # type: ignore[attr-defined]


# --- The pairs flow ---------------------------------------------------------------------------------

PAIRS_SPANISH_TITLES = {
    "factual_correctness": "Corrección factual",
    "completeness": "Exhaustividad",
    "simplicity": "Sencillez",
    "fluency": "Fluidez",
}


def _pairs_study_es(*, spanish_items: bool) -> Study:
    """A Spanish study in the pairs flow asking seed 002's four criteria: the shipped preset (English
    only), or the same instrument with a Spanish version of its titles, statements and points."""
    from instruments.presets import preset_load
    from instruments.validation import instrument_from_data, instrument_to_data
    from surveys.rate_each_pair.services import study_instrument_attach
    from tests.evaluation.instrument_studies import instrument_add

    study = build_study(slug="pares", n_sources=2, systems=("a", "b"))
    study.language = "es"
    study.save(update_fields=["language"])
    if not spanish_items:
        study_instrument_attach(study=study, preset_name="medlaybench_002", actor="test")
        return study
    data = instrument_to_data(preset_load("medlaybench_002"))
    data["languages"] = ["en", "es"]
    data["translation_status"] = {"en": "source", "es": "unvalidated translation"}
    data["title"]["es"] = "Evaluación humana de MedLayBench-V"
    data["description"]["es"] = "Valore cada par en cada criterio, de 1 a 5."
    for item in data["items"]:
        item["title"]["es"] = PAIRS_SPANISH_TITLES[item["key"]]
        item["wording"]["es"] = f"Enunciado en español de {PAIRS_SPANISH_TITLES[item['key']]}."
        for point in item["scale"]["points"]:
            point["label"]["es"] = f"punto {point['code']}"
    instrument_add(study=study, instrument=instrument_from_data(data), preset="medlaybench_002")
    return study


def _pairs_walk_es(client: Client, study: Study) -> tuple[Participant, dict[str, str]]:
    """Consent, every pair answered with a plain submit (one refused first), the done page: the
    pages' HTML by name."""
    from django.urls import reverse

    from surveys.rate_each_pair import selectors as design

    person = participant_services.participant_create(study=study, role=Participant.Role.LAYPERSON)
    seen = {"consent": client.get(reverse("surveys:pairs-consent", args=[person.token])).content.decode()}
    assert Participant.objects.get(pk=person.pk).language == ""  # a GET writes nothing
    client.post(reverse("surveys:pairs-consent", args=[person.token]), {"choice": "accept"})
    assert Participant.objects.get(pk=person.pk).language == "es"
    order = design.participant_pairs(participant=person)
    first = reverse("surveys:pairs-page", args=[person.token, order[0].shown_text_id])
    seen["page"] = client.get(first).content.decode()
    refused = client.post(first, {"medlaybench_002.fluency": "9", "action": "next"})
    assert refused.status_code == 400
    seen["refused"] = refused.content.decode()
    seen["missing"] = client.get(first + "?missing=1").content.decode()
    for pair in order:
        url = reverse("surveys:pairs-page", args=[person.token, pair.shown_text_id])
        answers = {f"medlaybench_002.{key}": "4" for key in PAIRS_SPANISH_TITLES}
        response = client.post(url, {**answers, "action": "next"})
        assert response.status_code == 302, response.content.decode()[:500]
    seen["done"] = client.get(response.url).content.decode()
    return person, seen


def _assert_spanish_interface(seen: dict[str, str], person: Participant) -> None:
    for name, html in seen.items():
        assert '<html lang="es">' in html, name
    consent = seen["consent"]
    assert "Información y consentimiento" in consent and "Acepto, continuar" in consent
    assert "No deseo participar" in consent and "I agree, continue" not in consent
    # radlay's default consent text, in Spanish.
    assert "Le invitamos a participar en un estudio" in consent and "You are invited" not in consent
    assert "pares que valorar" in consent and "to rate" not in consent
    page = seen["page"]
    assert "Par 1 de " in page and "Texto que debe valorar" in page and "Texto original" in page
    assert "Guardar y siguiente" in page and "Saltar por ahora" in page
    assert "Las respuestas se guardan a medida que las da" in page
    assert "Save and next" not in page and "Text to rate" not in page and "pairs done" not in page
    assert "pares hechos" in page
    # The autosave's own messages come with the page, in Spanish (static/radlay/rate_each_pair.js reads them).
    strings = json.loads(re.search(r'id="survey-strings"[^>]*>(.*?)</script>', page, re.S).group(1))
    assert strings["sending"] == "Guardando…"
    assert "frases de referencia" in strings["grid_open_other"]
    assert "No se ha guardado nada de esta página" in seen["refused"]
    assert "aún les falta una respuesta" in seen["missing"] or "aún le falta una respuesta" in seen["missing"]
    done = seen["done"]
    assert "Gracias, ha terminado" in done and "Su código de finalización:" in done
    assert person.completion_code in done and "Thank you" not in done


def test_a_spanish_pairs_study_with_spanish_items_is_all_spanish_and_records_es(client, db):
    study = _pairs_study_es(spanish_items=True)
    person, seen = _pairs_walk_es(client, study)
    _assert_spanish_interface(seen, person)
    # The instrument's Spanish wording, not its English.
    assert "Corrección factual" in seen["page"] and "punto 5" in seen["page"]
    assert "Valore cada par en cada criterio" in seen["consent"] and "Rate each pair" not in seen["consent"]
    assert "Factual Correctness" not in seen["page"] and "strongly agree" not in seen["page"]
    # A refused answer is named by the title the page shows.
    assert "Fluidez:" in seen["refused"]
    person.refresh_from_db()
    assert person.language == "es" and person.completed_at is not None
    languages = set(
        typed_answers.item_answers().filter(participant=person).values_list("language", flat=True)
    )
    assert languages == {"es"} and typed_answers.item_answers().filter(participant=person).count() > 0


def test_a_spanish_pairs_study_with_an_english_only_preset_translates_the_interface(client, db):
    study = _pairs_study_es(spanish_items=False)
    person, seen = _pairs_walk_es(client, study)
    _assert_spanish_interface(seen, person)
    # medlaybench_002 offers English only: its items stay in English, and the answers say so.
    assert "Factual Correctness" in seen["page"] and "strongly agree" in seen["page"]
    person.refresh_from_db()
    assert person.language == "es"
    assert set(
        typed_answers.item_answers().filter(participant=person).values_list("language", flat=True)
    ) == {"en"}
