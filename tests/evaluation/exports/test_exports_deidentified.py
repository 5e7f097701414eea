"""Every export of a study hands out de-identified source text unless an owner asks for the
originals: a study whose sources carry names, MRNs and phone numbers is de-identified with the
privacy services, and the output of every export (answers CSV/XLSX/JSON long and wide, instrument
items long/wide/spans, metrics, the analysis, the report, the API's lists and exports, the
preference pairs as JSONL and as a `datasets` folder, the study archive) is scanned for them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import ActivityEvent
from evaluation.exports import FORMATS
from evaluation.exports.items import LAYOUTS
from tests.evaluation.archive_studies import protocol_study
from tests.evaluation.identified_studies import identified_study

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_analysis")]


def _texts(body: bytes) -> list[str]:
    """The text of a download, and of every member when it is a zip (XLSX, the archive)."""
    if body[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(body)) as members:
            return [members.read(name).decode("utf-8", "replace") for name in members.namelist()]
    return [body.decode("utf-8", "replace")]


def _body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def _web_surfaces(slug: str) -> dict[str, str]:
    urls = {}
    for f in FORMATS:
        urls[f"answers.{f}"] = reverse("evaluation:study-export", args=[slug, f])
        urls[f"answers-wide.{f}"] = reverse("evaluation:study-export", args=[slug, f]) + "?layout=wide"
        urls[f"api answers.{f}"] = reverse("api:export", args=[slug, f])
        for layout in LAYOUTS:
            urls[f"items-{layout}.{f}"] = (
                reverse("evaluation:study-item-export", args=[slug, f]) + f"?layout={layout}"
            )
            urls[f"api items-{layout}.{f}"] = reverse("api:item-export", args=[slug, f]) + f"?layout={layout}"
    urls["metrics.csv"] = reverse("evaluation:study-metrics-csv", args=[slug])
    urls["analysis.json"] = reverse("evaluation:study-analysis", args=[slug])
    urls["report.html"] = reverse("evaluation:study-report", args=[slug])
    urls["archive.zip"] = reverse("evaluation:study-archive", args=[slug])
    for name in ("source-list", "simplification-list", "answer-list", "analysis", "study-detail"):
        urls[f"api {name}"] = reverse(f"api:{name}", args=[slug])
    return urls


def _scan(client, slug: str, words: list[str], tmp_path: Path, *, pairs: bool) -> dict[str, list[str]]:
    leaks: dict[str, list[str]] = {}
    for name, url in _web_surfaces(slug).items():
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
        texts = _texts(_body(response))
        hits = sorted({w for text in texts for w in words if w in text})
        if hits:
            leaks[name] = hits
        if name in ("api source-list", "archive.zip"):  # the sources are there, de-identified
            assert any("Patient: [NAME], MRN [MRN]" in text for text in texts), name
    if not pairs:
        return leaks
    pairs_file, folder = tmp_path / f"{slug}.jsonl", tmp_path / f"{slug}-dataset"
    call_command("export", study=slug, format="preferences", out=pairs_file)
    assert "Patient: [NAME]" in pairs_file.read_text()
    call_command("export", study=slug, format="hf-dataset", out=folder)
    files = [("preferences", pairs_file), *((f"hf-dataset {p.name}", p) for p in folder.rglob("*"))]
    for name, path in files:
        if path.is_file():
            hits = sorted({w for text in _texts(path.read_bytes()) for w in words if w in text})
            if hits:
                leaks[name] = hits
    return leaks


@pytest.mark.heavy
@pytest.mark.parametrize(
    "build,pairs", [(None, True), (protocol_study, False)], ids=["lay-and-ratings", "protocol-with-spans"]
)
def test_no_export_hands_out_an_identifier_of_a_deidentified_study(client, tmp_path, build, pairs):
    study, owner, words = identified_study(slug="identified", build=build)
    client.force_login(owner)
    assert _scan(client, study.slug, words, tmp_path, pairs=pairs) == {}


def test_an_owner_asking_for_originals_gets_them_recorded(client, tmp_path):
    study, owner, words = identified_study(slug="released")
    pairs = tmp_path / "pairs.jsonl"
    call_command("export", study=study.slug, format="preferences", out=pairs, originals=True)
    assert "Okafor" in pairs.read_text()
    client.force_login(owner)
    body = client.get(reverse("api:source-list", args=[study.slug]) + "?originals=1").content.decode()
    assert "Okafor" in body
    released = ActivityEvent.objects.filter(study=study, verb="sources.originals_released")
    assert sorted(released.values_list("details__purpose", flat=True)) == [
        "API source list",
        "preferences export",
    ]


def test_fine_tuning_pairs_carry_the_deidentified_sources():
    """The local fine-tuning (ml/) trains on what a model is given: the de-identified text."""
    from ml.selectors import training_pairs_for_study

    study, _, words = identified_study(slug="tuned")
    pairs = training_pairs_for_study(study=study)
    assert pairs and all(pair.source.startswith("Patient: [NAME], MRN [MRN]") for pair in pairs)
    assert not [w for pair in pairs for w in words if w in pair.source]
