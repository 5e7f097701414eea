"""The hold-out check: identified reports imported into a new study make no external call before
the de-identification is approved; after `deidentify --approve` the OpenAI-compatible server (a
real one on a loopback port) receives none of the structured identifiers and at most one name in
six, while the findings themselves reach it; a local-only study never calls out and still
generates with the offline glossary backend.

The reports are written here, not drawn from the bench's generator (privacy/synthetic_reports.py),
so that the detector is checked on text it was not tuned on.
"""

import io
import json
from dataclasses import replace

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from annotation.models import ActivityEvent, Simplification
from generation.backends.base import GenerationParams
from generation.backends.configured import cached_backend
from generation.services import batches
from privacy.gate import ExternalCallRefused
from privacy.services import data_policy_change
from studies.importers.study_file import StudyFile
from studies.importers.write import study_file_import
from tests.generation.scripted_llm_server import ScriptedLLMServer

pytestmark = pytest.mark.django_db

STRUCTURED = {
    "MRN": ["MRN: 7730194", "MRN 55102938", "medical record number 0049311"],
    "ACCESSION": ["XR-2023-0771542", "A77120934", "CT23099180"],
    "SSN": ["219-09-9999", "457-55-5462"],
    "PHONE": ["(503) 494-8311", "412-647-2345", "503.418.2300"],
    "EMAIL": ["ebony.washington@ohsu.example.org", "kfujimoto@upmc.example.org"],
    "DATE": ["07/04/1938", "2023-02-17", "17 February 2023", "Feb 19th, 2023", "1938-07-04", "02/19/2023"],
}
NAMES = [
    "Ebony Washington",
    "Kenji Fujimoto",
    "Dr. Marguerite Okonkwo-Hale",
    "Rafael Quintero",
    "Svetlana Morozova",
    "Dr. Ahmad Farouqi",
    "Thandiwe Ndlovu",
    "Dr. Padraig Geraghty",
    "Ingeborg Halvorsen",
    "Dr. Tomasz Wieczorek",
    "Nkechi Obi",
    "Dr. Chloe Lindgren",
]
FINDINGS = [
    "a 2.4 cm enhancing mass in the left kidney",
    "small bilateral pleural effusions",
    "compression fracture of the L1 vertebral body",
    "no pneumothorax",
    "mild hepatic steatosis",
    "an occlusive thrombus in the right popliteal vein",
]
REPORTS = [
    (
        "Patient: Ebony Washington  MRN: 7730194  DOB: 07/04/1938\n"
        "Accession: XR-2023-0771542  Date of exam: 2023-02-17\n"
        "Referring: Dr. Marguerite Okonkwo-Hale, phone (503) 494-8311.\n"
        "FINDINGS: There is a 2.4 cm enhancing mass in the left kidney. Small bilateral pleural effusions.\n"
        "Results discussed with Rafael Quintero, RN, on 17 February 2023; "
        "e-mail ebony.washington@ohsu.example.org.\n"
        "Dictated by: Svetlana Morozova, MD"
    ),
    (
        "Name: Kenji Fujimoto   MRN 55102938   SSN 219-09-9999\n"
        "Acc #: A77120934   Ordering physician: Dr. Ahmad Farouqi (412-647-2345)\n"
        "FINDINGS: Compression fracture of the L1 vertebral body. No pneumothorax.\n"
        "Mr. Fujimoto was informed. Contact kfujimoto@upmc.example.org.\n"
        "Electronically signed by Dr. Padraig Geraghty on Feb 19th, 2023"
    ),
    (
        "PATIENT NAME: Thandiwe Ndlovu, medical record number 0049311, born 1938-07-04, SSN 457-55-5462.\n"
        "Exam #: CT23099180 on 02/19/2023. Referring physician: Dr. Tomasz Wieczorek, fax 503.418.2300.\n"
        "FINDINGS: Mild hepatic steatosis. An occlusive thrombus in the right popliteal vein.\n"
        "Critical result called to Nkechi Obi, NP, and to Ingeborg Halvorsen. Read by Dr. Chloe Lindgren."
    ),
]


def _import(tmp_path, slug: str):
    path = tmp_path / "reports.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"source_key": f"r{i + 1}", "source_text": text}) for i, text in enumerate(REPORTS)
        )
        + "\n"
    )
    study, created, _ = study_file_import(slug=slug, title=slug, study_file=StudyFile(path), actor="test")
    assert created
    return study


def _sent_text(server) -> str:
    return "\n".join(m["content"] for r in server.chat_requests() for m in r.messages)


@pytest.fixture
def llm(settings):
    with ScriptedLLMServer() as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.RADLAY_LLM_CALLS = replace(settings.RADLAY_LLM_CALLS, retries=0)
        yield server


def _launch(django_capture_on_commit_callbacks, **kwargs):
    with django_capture_on_commit_callbacks(execute=True):
        batch = batches.generation_batch_create(**kwargs)
    batch.refresh_from_db()
    return batch


def test_identified_reports_reach_the_server_only_deidentified_and_only_after_approval(
    tmp_path, llm, django_capture_on_commit_callbacks
):
    study = _import(tmp_path, "holdout")

    # Before approval: the launch is refused with the policy named, and a call made anyway is
    # refused at the gate, logged, and never sent.
    with pytest.raises(ValidationError) as refused:
        batches.generation_batch_create(
            study=study,
            systems=["plain_bs"],
            backend="openai",
            model_name="gpt-3.5-turbo",
            check_server=False,
        )
    assert "deidentified" in str(refused.value) and "approve" in str(refused.value)
    backend = cached_backend("openai", "gpt-3.5-turbo", study=study, purpose="test")
    with pytest.raises(ExternalCallRefused):
        backend.complete(
            [{"role": "user", "content": study.sources.first().text}],
            agent="generator",
            params=GenerationParams(),
        )
    assert llm.requests == []
    assert ActivityEvent.objects.filter(study=study, verb="external_call.refused").count() == 1

    call_command("deidentify", "--study", study.slug, "--approve", stdout=io.StringIO())

    batch = _launch(
        django_capture_on_commit_callbacks,
        study=study,
        systems=["plain_bs"],
        backend="openai",
        model_name="gpt-3.5-turbo",
        check_server=False,
    )
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    sent = _sent_text(llm)
    assert len(llm.chat_requests()) == len(REPORTS)
    for kind, values in STRUCTURED.items():
        for value in values:
            number = value.split()[-1]
            assert number not in sent, f"{kind} {value!r} reached the server"
    leaked = [n for n in NAMES if n.replace("Dr. ", "") in sent or n.split()[-1] in sent]
    assert len(leaked) <= len(NAMES) / 6, leaked
    for finding in FINDINGS:
        assert finding.lower() in sent.lower(), finding
    generated = Simplification.objects.get(source__key="r1", origin="generation")
    assert generated.parameters["data_policy"] == {
        "policy": "deidentified",
        "endpoint": llm.base_url.rstrip("/"),
        "deidentification_approved": True,
    }


def test_a_local_only_study_never_calls_out_and_still_generates_locally(
    tmp_path, llm, django_capture_on_commit_callbacks
):
    study = _import(tmp_path, "local")
    data_policy_change(study=study, policy="local-only", reason="MIMIC data-use agreement", actor="test")
    call_command("deidentify", "--study", study.slug, "--approve", stdout=io.StringIO())

    with pytest.raises(ValidationError) as refused:
        batches.generation_batch_create(
            study=study,
            systems=["plain_bs"],
            backend="openai",
            model_name="gpt-3.5-turbo",
            check_server=False,
        )
    assert "local-only" in str(refused.value)
    backend = cached_backend("openai", "gpt-3.5-turbo", study=study, purpose="test")
    with pytest.raises(ExternalCallRefused, match="local-only"):
        backend.complete([{"role": "user", "content": "x"}], agent="generator", params=GenerationParams())

    batch = _launch(django_capture_on_commit_callbacks, study=study, systems=["plain_bs"], backend="glossary")
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    assert Simplification.objects.filter(source__study=study, origin="generation").count() == len(REPORTS)
    generated = Simplification.objects.filter(source__study=study, origin="generation").first()
    assert generated.parameters["data_policy"]["policy"] == "local-only"
    assert generated.parameters["data_policy"]["endpoint"] == "local"
    assert llm.requests == []
