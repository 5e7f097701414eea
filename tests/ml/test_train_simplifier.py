import json

import pytest
from django.core.management import CommandError, call_command

from annotation import participant_services
from annotation.models import Participant, Simplification
from ml import services
from ml.models import ModelArtifact, TrainingJob
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "medlane.txt"
    blocks = [f"pt {i} had an mri .\npatient {i} had a scan .\nyou had a scan .\n" for i in range(5)]
    path.write_text("\n".join(blocks))
    return path


def test_corpus_training_with_wait(tiny_t5, corpus, tmp_path, capsys):
    out = tmp_path / "out"
    call_command(
        "train_simplifier",
        "--corpus",
        str(corpus),
        "--base-model",
        str(tiny_t5),
        "--epochs",
        "2",
        "--lr",
        "0.005",
        "--batch-size",
        "4",
        "--out",
        str(out),
        "--wait",
        "--hyperparameters",
        json.dumps({"eval_max_new_tokens": 4}),
    )
    printed = capsys.readouterr().out
    job = TrainingJob.objects.get()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    assert job.hyperparameters == {
        "epochs": 2,
        "learning_rate": 0.005,
        "batch_size": 4,
        "eval_max_new_tokens": 4,
    }
    artifact = job.output_artifact
    assert artifact.path == str(out.resolve()) and (out / "model.safetensors").is_file()
    assert f"model artifact {artifact.name}: {artifact.path}" in printed
    # 5 sources x 2 simplifications; 1 source held out for validation.
    assert "corpus" in artifact.training_data and "8 train / 2 validation" in artifact.training_data


@pytest.mark.django_db(transaction=True)
def test_study_training_through_the_queue_in_eager_mode(tiny_t5, settings, tmp_path, capsys):
    # A real commit (no test transaction around it), so the on_commit dispatch runs the eager task
    # inside the command, as in the embedded mode.
    settings.RADLAY_MODEL_DIR = tmp_path / "models"
    study = build_study(slug="cmd", n_sources=3, systems=("plain_bs", "cot_bs"))
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    for simplification in Simplification.objects.filter(source__study=study, system__key="cot_bs"):
        expert_answers.expert_rating_save(
            participant=radiologist,
            shown_text=simplification.shown_text,
            scores=dict.fromkeys(
                ("correctness", "completeness", "hallucination", "structure", "simplicity"), 5
            ),
        )
    base = services.model_artifact_register(name="tiny-t5", path=tiny_t5)
    call_command(
        "train_simplifier",
        "--study",
        "cmd",
        "--filter",
        "expert_min:5",
        "--base-model",
        "tiny-t5",
        "--epochs",
        "1",
        "--hyperparameters",
        '{"eval_max_new_tokens": 4}',
    )
    job = TrainingJob.objects.get()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    assert job.base_artifact == base and job.pair_filter == {"kind": "expert_min", "min_score": 5}
    assert job.output_artifact.base_model == base
    assert "filter expert_min:5: 3 pairs" in job.output_artifact.training_data  # only the rated cot_bs texts
    assert ModelArtifact.objects.count() == 2
    assert "model artifact tiny-t5-ft-" in capsys.readouterr().out


def test_errors_are_reported_plainly(tiny_t5, corpus):
    with pytest.raises(CommandError, match="no study"):
        call_command("train_simplifier", "--study", "nope", "--base-model", str(tiny_t5))
    with pytest.raises(CommandError, match="not a local model directory"):
        call_command("train_simplifier", "--corpus", str(corpus), "--base-model", "/nowhere")
    with pytest.raises(CommandError, match="unknown training hyper-parameter"):
        call_command(
            "train_simplifier",
            "--corpus",
            str(corpus),
            "--base-model",
            str(tiny_t5),
            "--hyperparameters",
            '{"warmup": 3}',
        )
    assert not TrainingJob.objects.exists()
