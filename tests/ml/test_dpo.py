"""`train_simplifier --method dpo`: TRL's DPOTrainer on a study's preference pairs, with a tiny
random-init chat model on the CPU; the trained model becomes a ModelArtifact that generates a new
system of the same study. Refusals: a base without weights, a study without preferences, too few
pairs."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
from django.core.management import CommandError, call_command

from annotation import participant_services
from annotation.models import Participant, Simplification, System
from evaluation.exports.preferences import preference_records, write_jsonl
from generation.services import batches
from ml.models import ModelArtifact, TrainingJob
from surveys.radiologist import services as expert_answers
from tests.annotation.factories import build_study

pytestmark = pytest.mark.django_db

ASPECTS = ("correctness", "completeness", "hallucination", "structure", "simplicity")


def rated_study(slug: str = "dpo", n_sources: int = 6):
    """plain_bs texts rated 5, cot_bs texts rated 2 by one radiologist: one pair per source."""
    study = build_study(slug=slug, n_sources=n_sources, systems=("plain_bs", "cot_bs"))
    radiologist = participant_services.participant_create(study=study, role=Participant.Role.RADIOLOGIST)
    for simplification in Simplification.objects.filter(source__study=study).select_related("system"):
        score = 5 if simplification.system.key == "plain_bs" else 2
        expert_answers.expert_rating_save(
            participant=radiologist,
            shown_text=simplification.shown_text,
            scores=dict.fromkeys(ASPECTS, score),
        )
    return study


def dpo(*args: str) -> None:
    call_command("train_simplifier", "--method", "dpo", *args)


@pytest.mark.heavy
def test_dpo_trains_registers_and_generates_a_new_system(
    tiny_llama, settings, tmp_path, capsys, django_capture_on_commit_callbacks
):
    settings.RADLAY_TRAINING = replace(settings.RADLAY_TRAINING, dpo_min_pairs=4)
    study = rated_study()
    out = tmp_path / "dpo-model"
    dpo(
        "--study", "dpo", "--base-model", str(tiny_llama), "--max-steps", "6", "--lr", "0.005",
        "--batch-size", "2", "--out", str(out), "--wait", "--device", "cpu",
    )  # fmt: skip
    job = TrainingJob.objects.get()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    assert job.method == "dpo" and job.pair_filter["kind"] == "preferences"
    artifact = job.output_artifact
    assert artifact.architecture == ModelArtifact.Architecture.CAUSAL and artifact.kind == "fine_tuned"
    assert (out / "model.safetensors").is_file() and (out / "tokenizer_config.json").is_file()
    assert json.loads((out / "radlay_training.json").read_text())["method"] == "dpo"
    metrics = artifact.validation_metrics
    assert metrics["dpo_final_loss"] < metrics["dpo_first_loss"]  # the loss went down
    assert "6 radiologist_rating" in artifact.training_data
    assert f"model artifact {artifact.name}" in capsys.readouterr().out

    # The trained model writes a new system of the same study, beside the old ones.
    with django_capture_on_commit_callbacks(execute=True):  # the jobs run eagerly in tests
        batch = batches.generation_batch_create(
            study=study,
            systems=["plain_bs"],
            backend="transformers",
            model_artifact=artifact,
            system_tag="dpo",
            temperature=0.0,
            max_tokens=6,
        )
    batch.refresh_from_db()
    assert set(batch.jobs.values_list("status", flat=True)) == {"succeeded"}
    assert set(System.objects.filter(study=study).values_list("key", flat=True)) == {
        "plain_bs",
        "cot_bs",
        "plain_bs-dpo",
    }
    new = Simplification.objects.filter(source__study=study, system__key="plain_bs-dpo")
    assert new.count() == 6 and {s.model_name for s in new} == {artifact.path}
    old = Simplification.objects.filter(source__study=study, system__key="plain_bs")
    assert all(s.text.startswith("Simplification of sentence") for s in old)  # untouched


@pytest.mark.heavy
def test_dpo_with_lora_from_a_preference_file(tiny_llama, settings, tmp_path):
    settings.RADLAY_TRAINING = replace(settings.RADLAY_TRAINING, dpo_min_pairs=4)
    records, _ = preference_records(study=rated_study(slug="lora"))
    path = tmp_path / "pairs.jsonl"
    write_jsonl(records, path)
    dpo(
        "--corpus", str(path), "--base-model", str(tiny_llama), "--max-steps", "3", "--lr", "0.01",
        "--lora", "--out", str(tmp_path / "lora"), "--wait", "--device", "cpu",
    )  # fmt: skip
    job = TrainingJob.objects.get()
    assert job.status == TrainingJob.Status.SUCCEEDED, job.error
    assert job.output_artifact.hyperparameters["lora"] is True
    assert not (tmp_path / "lora" / "adapter_config.json").exists()  # merged into full weights
    assert (tmp_path / "lora" / "model.safetensors").is_file()


def test_refusals(tiny_llama, settings, tmp_path):
    settings.RADLAY_TRAINING = replace(settings.RADLAY_TRAINING, dpo_min_pairs=10)
    rated_study()
    build_study(slug="silent", n_sources=2)
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    for name in ("config.json", "tokenizer_config.json", "tokenizer.json"):
        shutil.copy(tiny_llama / name, no_weights / name)
    with pytest.raises(CommandError, match="has no weights"):
        dpo("--study", "dpo", "--base-model", str(no_weights), "--wait")
    with pytest.raises(CommandError, match="has no preference pairs"):
        dpo("--study", "silent", "--base-model", str(tiny_llama), "--wait")
    with pytest.raises(CommandError, match="at least 10 preference pairs"):
        dpo("--study", "dpo", "--base-model", str(tiny_llama), "--wait")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "chosen": "a"}\n')
    with pytest.raises(CommandError, match="bad.jsonl:1: no rejected"):
        dpo("--corpus", str(bad), "--base-model", str(tiny_llama), "--wait")
    with pytest.raises(CommandError, match="unknown DPO hyper-parameter"):
        dpo("--study", "dpo", "--base-model", str(tiny_llama), "--hyperparameters", '{"gamma": 1}')
    assert not TrainingJob.objects.exists()
