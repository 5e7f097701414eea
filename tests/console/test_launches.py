"""Generation and judge launches from the console (and the admin's launch forms): the default
backend is one that can run here, an OpenAI-compatible server is asked before anything is queued
(a refused key and a closed port are form errors naming the backend), and a launch leads to its
live batch or run page."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from generation.backends.configured import default_backend, openai_server_problem
from generation.models import GenerationBatch
from judging.models import JudgeRun
from tests.generation.scripted_llm_server import ScriptedLLMServer

GENERATION = {
    "systems": ["plain_bs"],
    # The draft study's plain_bs texts are uploaded ones: replaced on purpose.
    "replace_uploaded": "on",
    "model_name": "gpt-test",
    "temperature": "0.8",
    "max_rounds": "1",
    "max_tokens": "64",
    "sample_index": "0",
    "prompt_version": "seed003-v1",
}
JUDGES = {
    "model_name": "gpt-test",
    "instruments": ["radiologist"],
    "samples": "1",
    "prompt_version": "judge-v1",
}


class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server name
        body = b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def no_server(settings):
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


def test_the_default_backend_is_one_that_runs_here(settings, client, editor, draft, no_server):
    assert default_backend() == "glossary"
    client.force_login(editor)
    for name in ("console:launch-generation", "console:launch-judges"):
        page = client.get(reverse(name, args=[draft.slug])).content.decode()
        assert '<option value="glossary" selected>' in page, name
    settings.OPENAI_BASE_URL = "http://127.0.0.1:1/v1"
    assert default_backend() == "openai"
    page = client.get(reverse("console:launch-generation", args=[draft.slug])).content.decode()
    assert '<option value="openai" selected>' in page


def test_the_admin_launch_forms_default_the_same_way(client, draft, no_server):
    admin = get_user_model().objects.create_superuser("root", password="pw")
    client.force_login(admin)
    for name in ("admin:generation_generationbatch_launch", "admin:judging_judgerun_launch"):
        page = client.get(reverse(name)).content.decode()
        assert '<option value="glossary" selected>' in page, name


@pytest.mark.parametrize("name", ["console:launch-generation", "console:launch-judges"])
def test_a_refused_key_is_a_form_error_and_nothing_is_queued(
    settings, client, editor, draft, refusing_server, name, external_calls_approved
):
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = refusing_server, "sk-wrong"
    client.force_login(editor)
    data = {**(GENERATION if name.endswith("generation") else JUDGES), "backend": "openai", "study": draft.pk}
    response = client.post(reverse(name, args=[draft.slug]), data)
    assert response.status_code == 400
    errors = response.context["form"].errors["backend"]
    assert errors == [
        f"The server at {refusing_server} refused the API key (HTTP 401): check OPENAI_API_KEY."
    ]
    assert not GenerationBatch.objects.exists() and not JudgeRun.objects.exists()


def test_an_unreachable_server_is_a_form_error(
    settings, client, editor, draft, closed_port, external_calls_approved
):
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = closed_port, ""
    client.force_login(editor)
    data = {**GENERATION, "backend": "openai", "study": draft.pk}
    response = client.post(reverse("console:launch-generation", args=[draft.slug]), data)
    assert response.status_code == 400
    (error,) = response.context["form"].errors["backend"]
    assert error.startswith(f"No server answers at {closed_port}") and "OPENAI_BASE_URL" in error
    assert not GenerationBatch.objects.exists()


def test_no_server_configured_is_said_so(no_server):
    assert openai_server_problem().startswith("No OpenAI-compatible server is configured")


def test_a_server_that_answers_takes_the_launch_to_its_live_page(
    settings, client, editor, draft, django_capture_on_commit_callbacks, external_calls_approved
):
    with ScriptedLLMServer() as server:
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url, "sk-test"
        client.force_login(editor)
        with django_capture_on_commit_callbacks(execute=False):
            response = client.post(
                reverse("console:launch-generation", args=[draft.slug]),
                {**GENERATION, "backend": "openai", "study": draft.pk},
            )
        assert [r.path for r in server.requests] == ["/v1/models"]  # one cheap call, nothing generated
    batch = GenerationBatch.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "generation:batch_detail", args=[batch.pk]
    )


def test_generating_with_the_glossary_backend_from_the_console(
    client, editor, draft, no_server, django_capture_on_commit_callbacks
):
    client.force_login(editor)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("console:launch-generation", args=[draft.slug]),
            {
                **GENERATION,
                "systems": ["plain_bs", "scgr"],
                "backend": "glossary",
                "model_name": "",
                "study": draft.pk,
            },
        )
    batch = GenerationBatch.objects.get()
    assert response["Location"] == reverse("generation:batch_detail", args=[batch.pk])
    batch.refresh_from_db()
    assert batch.finished_at is not None and batch.created_by == editor
    assert draft.activity.filter(verb="generation.launched").exists()
    judged = client.post(
        reverse("console:launch-judges", args=[draft.slug]),
        {**JUDGES, "backend": "glossary", "model_name": "", "study": draft.pk},
    )
    run = JudgeRun.objects.get()
    assert judged["Location"] == reverse("judging:run-detail", args=[draft.slug, run.pk])


def test_a_bad_launch_is_a_named_error_not_a_500(client, editor, draft, no_server):
    client.force_login(editor)
    response = client.post(
        reverse("console:launch-generation", args=[draft.slug]),
        {**GENERATION, "backend": "openai", "model_name": "", "study": draft.pk},
    )
    assert response.status_code == 400
    assert "needs a model name" in " ".join(response.context["form"].errors["model_name"])
    empty = client.post(reverse("console:launch-judges", args=[draft.slug]), {})
    assert empty.status_code == 400 and "This field is required" in empty.content.decode()


def test_generate_refuses_to_overwrite_uploaded_texts_until_told_to(
    client, editor, no_server, django_capture_on_commit_callbacks
):
    """A system whose texts were uploaded is refused, named with how many texts it would lose; the
    form's "Replace uploaded texts" lets it through; generated texts are replaced without asking,
    and a system tag writes beside the uploaded system."""
    from annotation.models import Simplification
    from studies.team_services import study_member_add
    from tests.annotation.factories import build_study

    study = build_study(slug="uploaded", n_sources=2, systems=("plain_bs",), status="draft")
    study_member_add(study=study, user=editor, role="editor", actor="test")
    uploaded = dict(
        Simplification.objects.filter(system__key="plain_bs").values_list("pk", "shown_text__text")
    )
    client.force_login(editor)
    url = reverse("console:launch-generation", args=[study.slug])
    data = {**GENERATION, "systems": ["plain_bs", "plain_sc"], "backend": "glossary", "model_name": ""}
    del data["replace_uploaded"]
    response = client.post(url, {**data, "study": study.pk})
    assert response.status_code == 400
    (error,) = response.context["form"].errors["systems"]
    assert error.startswith("Generating would overwrite uploaded texts: plain_bs (2 texts).")
    assert not GenerationBatch.objects.exists()
    assert dict(
        Simplification.objects.filter(system__key="plain_bs").values_list("pk", "shown_text__text")
    ) == (uploaded)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {**data, "study": study.pk, "replace_uploaded": "on"})
    assert response.status_code == 302
    assert set(Simplification.objects.filter(system__key="plain_bs").values_list("origin", flat=True)) == {
        "generation"
    }
    # Generated texts are replaced without asking.
    with django_capture_on_commit_callbacks(execute=True):
        again = client.post(url, {**data, "study": study.pk, "sample_index": "1"})
    assert again.status_code == 302 and GenerationBatch.objects.count() == 2


def test_the_generate_command_refuses_uploaded_texts_too(db):
    from django.core.management import CommandError, call_command

    from tests.annotation.factories import build_study

    build_study(slug="cmd-uploaded", n_sources=1, systems=("cot_bs",))
    with pytest.raises(CommandError, match=r"overwrite uploaded texts: cot_bs \(1 text\)"):
        call_command("generate", "--study", "cmd-uploaded", "--systems", "cot_bs", "--backend", "glossary")
    assert not GenerationBatch.objects.exists()
    call_command(
        "generate",
        "--study",
        "cmd-uploaded",
        "--systems",
        "cot_bs",
        "--backend",
        "glossary",
        "--system-tag",
        "v2",
    )
    assert GenerationBatch.objects.count() == 1
