import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from ml import embedding_cache, services
from ml.embeddings import Embedder, cache_key
from ml.inference import clear_model_cache, generate, load_model
from ml.models import EmbeddingCacheEntry, ModelArtifact, TrainingJob
from ml.selectors import training_pairs_for_study
from ml.tasks import training_job_run_task
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

SMALL = {
    "epochs": 2,
    "batch_size": 4,
    "learning_rate": 5e-3,
    "validation_fraction": 0.25,
    "eval_max_new_tokens": 6,
}


@pytest.fixture(autouse=True)
def model_dir(settings, tmp_path):
    settings.RADLAY_MODEL_DIR = tmp_path / "models"
    return settings.RADLAY_MODEL_DIR


def test_training_job_runs_end_to_end_through_the_eager_task(
    tiny_t5, model_dir, django_capture_on_commit_callbacks
):
    study = build_study(slug="train-me", n_sources=4, systems=("plain_bs", "cot_bs"))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = services.training_job_create(
            study=study, pair_filter="all", base_model_path=str(tiny_t5), hyperparameters=SMALL
        )
    assert len(callbacks) == 1  # dispatched after commit, not inside the transaction
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    assert job.celery_task_id and job.started_at and job.finished_at

    # 8 pairs from 4 sources; one source (2 pairs) goes to validation -> 6 train pairs, 2 steps/epoch.
    assert job.progress["step"] == job.progress["total_steps"] == 4
    assert job.progress["phase"] == "saving"

    artifact = job.output_artifact
    assert artifact.kind == ModelArtifact.Kind.FINE_TUNED and artifact.architecture == "seq2seq"
    assert artifact.training_job == job
    assert artifact.path == str(model_dir / f"fine-tuned-{job.pk}")
    assert artifact.base_model.path == str(tiny_t5.resolve()) and artifact.base_model.kind == "base"
    assert artifact.hyperparameters["epochs"] == 2 and artifact.hyperparameters["learning_rate"] == 5e-3
    assert artifact.training_filter == {"kind": "all"}
    assert "6 train / 2 validation" in artifact.training_data
    assert set(artifact.validation_metrics) >= {"loss", "bleu", "fkgl"}

    clear_model_cache()
    loaded = load_model(artifact.path)  # what the transformers generation backend is given
    assert generate(
        loaded, [training_pairs_for_study(study=study)[0].source], temperature=0, max_new_tokens=4
    )

    # Running the task again is harmless: the job is finished and nothing new is registered.
    training_job_run_task.apply(args=[job.pk])
    assert ModelArtifact.objects.filter(kind="fine_tuned").count() == 1


def test_a_failing_job_records_its_error(tiny_t5, tmp_path):
    corpus = tmp_path / "pairs.jsonl"
    corpus.write_text('{"source": "a", "target": "b"}\n{"source": "c"}\n')
    job = services.training_job_create(corpus_path=str(corpus), base_model_path=str(tiny_t5), enqueue=False)
    job = services.training_job_run(job=job)
    assert job.status == TrainingJob.Status.FAILED
    assert "pairs.jsonl:2: missing key(s) target" in job.error
    assert job.output_artifact is None


def test_cancel_and_retry(tiny_t5, tmp_path, django_capture_on_commit_callbacks):
    corpus = tmp_path / "pairs.jsonl"
    corpus.write_text("".join(json.dumps({"source": f"s {i}", "target": f"t {i}"}) + "\n" for i in range(6)))
    job = services.training_job_create(
        corpus_path=str(corpus), base_model_path=str(tiny_t5), hyperparameters=SMALL, enqueue=False
    )
    job = services.training_job_cancel(job=job)
    assert job.status == TrainingJob.Status.CANCELLED
    assert services.training_job_run(job=job).status == TrainingJob.Status.CANCELLED  # not started

    with django_capture_on_commit_callbacks(execute=True):
        job = services.training_job_retry(job=job)
    job.refresh_from_db()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    with pytest.raises(ValidationError):
        services.training_job_retry(job=job)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"corpus_path": "/nowhere.jsonl"}, "corpus_path"),
        ({"hyperparameters": {"lr": 1}}, "hyperparameters"),
        ({"pair_filter": "expert_min:7", "with_study": True}, "pair_filter"),
    ],
)
def test_training_job_create_validates(tiny_t5, tmp_path, kwargs, field):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"source": "a", "target": "b"}\n')
    kwargs = dict(kwargs)
    arguments = {"base_model_path": str(tiny_t5), "enqueue": False}
    if kwargs.pop("with_study", False):
        arguments["study"] = build_study(slug="v", n_sources=1, systems=("plain_bs",))
    else:
        arguments["corpus_path"] = str(corpus)
    with pytest.raises(ValidationError) as error:
        services.training_job_create(**{**arguments, **kwargs})
    assert field in error.value.message_dict
    assert not TrainingJob.objects.exists()


def test_causal_artifacts_cannot_be_fine_tuned(tiny_llama, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"source": "a", "target": "b"}\n')
    artifact = services.model_artifact_register(name="tiny-llama", path=tiny_llama)
    assert artifact.architecture == "causal"
    with pytest.raises(ValidationError, match="encoder-decoder"):
        services.training_job_create(corpus_path=str(corpus), base_artifact=artifact, enqueue=False)


def test_model_artifact_register_needs_a_model_directory(tmp_path):
    with pytest.raises(ValidationError):
        services.model_artifact_register(name="empty", path=tmp_path)


def test_embedding_cache_in_the_database(monkeypatch):
    store = embedding_cache.EmbeddingCacheStore()
    first = Embedder(model_id="db-test", store=store)
    vectors = first(["a small effusion", "normal heart"])
    assert EmbeddingCacheEntry.objects.count() == 2
    row = EmbeddingCacheEntry.objects.get(key=cache_key("db-test", "normal heart"))
    assert row.dimension == 384 and row.model_id == "db-test"
    np.testing.assert_array_equal(np.frombuffer(bytes(row.vector), dtype="<f4"), vectors[1])

    # A fresh embedder (another worker) finds both in the table and never calls the model.
    second = Embedder(model_id="db-test", store=store)
    monkeypatch.setattr(second.model, "encode", lambda *a, **k: pytest.fail("model called"))
    np.testing.assert_array_equal(second(["normal heart", "a small effusion"]), vectors[::-1])
    # Writing the same keys again is a no-op, not an integrity error.
    embedding_cache.embedding_cache_put_many(vectors={row.key: vectors[1]}, model_id="db-test")
    assert EmbeddingCacheEntry.objects.count() == 2
