import pytest
from django.urls import reverse

from ml.models import ModelArtifact, TrainingJob

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def model_dir(settings, tmp_path_factory):
    """Admin paths must lie inside RADLAY_MODEL_DIR: here the root of pytest's temporary
    directories, which holds the tiny models, the corpora and the outputs."""
    settings.RADLAY_MODEL_DIR = tmp_path_factory.getbasetemp()
    return settings.RADLAY_MODEL_DIR


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(
        "".join(
            f'{{"source": "pt {i} had an mri .", "target": "patient {i} had a scan ."}}\n' for i in range(4)
        )
    )
    return path


def launch_form(corpus, base, **overrides):
    data = {
        "study": "",
        "pair_filter": "all",
        "corpus_path": str(corpus),
        "base_artifact": "",
        "base_model_path": str(base),
        "epochs": "1",
        "learning_rate": "0.005",
        "batch_size": "4",
        "more_hyperparameters": '{"eval_max_new_tokens": 3}',
        "output_dir": "",
    }
    return {**data, **overrides}


def test_launch_a_training_job_from_the_admin(
    admin_client, corpus, tiny_t5, settings, tmp_path, django_capture_on_commit_callbacks
):
    add_url = reverse("admin:ml_trainingjob_add")
    assert b"expert_min:4" in admin_client.get(add_url).content
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(add_url, launch_form(corpus, tiny_t5))
    assert response.status_code == 302
    job = TrainingJob.objects.get()
    assert job.hyperparameters == {
        "epochs": 1,
        "learning_rate": 0.005,
        "batch_size": 4,
        "eval_max_new_tokens": 3,
    }
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error

    changelist = admin_client.get(reverse("admin:ml_trainingjob_changelist")).content.decode()
    total = job.progress["total_steps"]
    assert f'<progress value="{total}" max="{total}"' in changelist
    assert "ml/training_progress.js" in changelist
    detail = admin_client.get(reverse("admin:ml_trainingjob_change", args=[job.pk])).content.decode()
    assert job.output_artifact.name in detail


def test_launch_form_shows_the_services_errors(admin_client, corpus, tiny_t5):
    response = admin_client.post(
        reverse("admin:ml_trainingjob_add"), launch_form(tmp := corpus.parent / "missing.jsonl", tiny_t5)
    )
    assert response.status_code == 200
    assert f"{tmp} is not a file" in response.content.decode()
    response = admin_client.post(
        reverse("admin:ml_trainingjob_add"), launch_form(corpus, tiny_t5, more_hyperparameters='{"lr": 1}')
    )
    assert "unknown training hyper-parameter" in response.content.decode()
    assert not TrainingJob.objects.exists()


def test_progress_endpoint_feeds_the_live_bar(admin_client, client, corpus, tiny_t5):
    job = TrainingJob.objects.create(
        corpus_path=str(corpus),
        base_model_path=str(tiny_t5),
        status=TrainingJob.Status.RUNNING,
        progress={
            "step": 30,
            "total_steps": 120,
            "epoch": 0.25,
            "loss": 2.5,
            "eta_s": 95.0,
            "phase": "training",
        },
    )
    url = reverse("admin:ml_trainingjob_progress", args=[job.pk])
    data = admin_client.get(url).json()
    assert data["status"] == "running" and data["progress"]["step"] == 30
    assert '<progress value="30" max="120"' in data["html"]
    assert "ETA 1m 35s" in data["html"] and "loss 2.5000" in data["html"]
    assert client.get(url).status_code == 302  # not logged in: sent to the login page


def test_cancel_action(admin_client, corpus, tiny_t5):
    job = TrainingJob.objects.create(corpus_path=str(corpus), base_model_path=str(tiny_t5))
    admin_client.post(
        reverse("admin:ml_trainingjob_changelist"), {"action": "cancel_jobs", "_selected_action": [job.pk]}
    )
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.CANCELLED and job.cancel_requested


def test_register_a_model_directory(admin_client, tiny_llama, tmp_path):
    url = reverse("admin:ml_modelartifact_add")
    response = admin_client.post(url, {"name": "tiny-llama", "path": str(tiny_llama), "architecture": ""})
    assert response.status_code == 302
    artifact = ModelArtifact.objects.get()
    assert (artifact.architecture, artifact.kind, artifact.path) == (
        "causal",
        "base",
        str(tiny_llama.resolve()),
    )
    change = admin_client.get(reverse("admin:ml_modelartifact_change", args=[artifact.pk]))
    assert change.status_code == 200 and str(tiny_llama.resolve()) in change.content.decode()
    assert admin_client.get(reverse("admin:ml_modelartifact_changelist")).status_code == 200
    refused = admin_client.post(url, {"name": "nothing", "path": str(tmp_path), "architecture": ""})
    assert "Not a local model directory" in refused.content.decode()
    assert ModelArtifact.objects.count() == 1


@pytest.mark.parametrize("field", ["corpus_path", "base_model_path", "output_dir"])
def test_launch_form_confines_paths_to_the_model_dir(
    admin_client, corpus, tiny_t5, settings, tmp_path, field
):
    settings.RADLAY_MODEL_DIR = tmp_path / "models"
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "pairs.jsonl").write_text(corpus.read_text())
    inside = {"corpus_path": str(tmp_path / "models" / "pairs.jsonl"), "base_model_path": str(tiny_t5)}
    outside = {"corpus_path": "/etc/passwd", "base_model_path": "/usr/lib", "output_dir": "../../etc"}
    form = launch_form(inside["corpus_path"], tiny_t5, **{field: outside[field]})
    if field != "base_model_path":
        form["base_model_path"] = str(tiny_t5)
    response = admin_client.post(reverse("admin:ml_trainingjob_add"), form)
    assert response.status_code == 200
    assert "outside the model directory" in response.content.decode()
    assert not TrainingJob.objects.exists()


def test_register_refuses_a_path_outside_the_model_dir(admin_client, tiny_llama, settings, tmp_path):
    settings.RADLAY_MODEL_DIR = tmp_path
    url = reverse("admin:ml_modelartifact_add")
    for path in (str(tiny_llama), "/etc", str(tmp_path / ".." / "..")):
        response = admin_client.post(url, {"name": "x", "path": path, "architecture": ""})
        assert "outside the model directory" in response.content.decode(), path
    link = tmp_path / "link"
    link.symlink_to(tiny_llama)  # a link inside that points outside is followed and refused
    response = admin_client.post(url, {"name": "x", "path": str(link), "architecture": ""})
    assert "outside the model directory" in response.content.decode()
    assert not ModelArtifact.objects.exists()
