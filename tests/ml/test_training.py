import json

import pytest
import sacrebleu
import textstat
import torch
from safetensors.torch import load_file

from ml.corpora import CorpusRecord, SimplificationPair
from ml.inference import TRAINING_METADATA_FILE, clear_model_cache, generate, load_model
from ml.training import (
    ResumeMismatchError,
    TrainingCancelled,
    TrainingConfig,
    latest_checkpoint,
    split_records,
    train_simplifier,
)

PAIRS = [
    SimplificationPair(
        "There is a small pleural effusion on the left.",
        "There is a small amount of fluid around the left lung.",
    ),
    SimplificationPair("No acute cardiopulmonary abnormality.", "The heart and lungs look normal."),
    SimplificationPair(
        "Mild degenerative changes of the thoracic spine.", "Some wear and tear of the bones in the back."
    ),
    SimplificationPair(
        "Cardiomegaly with pulmonary vascular congestion.", "The heart is enlarged with fluid in the lungs."
    ),
    SimplificationPair(
        "Patchy opacity in the right lower lobe.", "A cloudy area at the bottom of the right lung."
    ),
    SimplificationPair(
        "The endotracheal tube terminates 4 cm above the carina.",
        "The breathing tube ends 4 cm above the split.",
    ),
    SimplificationPair("No pneumothorax.", "No collapsed lung."),
    SimplificationPair("Mild cardiomegaly.", "The heart is a bit big."),
]
HELD_OUT = [
    SimplificationPair("Small left effusion.", "A little fluid by the left lung."),
    SimplificationPair("Small left effusion.", "Some fluid near the left lung."),
    SimplificationPair("Normal heart size.", "The heart is a normal size."),
]


def test_fine_tune_halves_the_loss_then_reloads_and_validates(tiny_t5, tmp_path):
    out = tmp_path / "simplifier"
    config = TrainingConfig(
        epochs=60,
        learning_rate=1e-2,
        batch_size=8,
        validation_fraction=0.0,
        checkpoint_every=1000,
        seed=3,
        eval_max_new_tokens=12,
    )
    result = train_simplifier(PAIRS, base_model=tiny_t5, output_dir=out, config=config)

    assert result.train_size == 8 and result.global_step == 60
    assert result.loss_history[-1] <= result.loss_history[0] / 2
    clear_model_cache()
    loaded = load_model(out)
    outputs = generate(loaded, [p.source for p in PAIRS[:3]], temperature=0, max_new_tokens=12)
    assert len(outputs) == 3 and all(o.completion_tokens > 0 for o in outputs)
    metadata = json.loads((out / TRAINING_METADATA_FILE).read_text())
    assert metadata["global_step"] == 60 and metadata["architecture"] == "seq2seq"
    assert metadata["base_model"] == str(tiny_t5.resolve())


def test_validation_metrics_match_sacrebleu_and_textstat_on_the_saved_model(tiny_t5, tmp_path):
    out = tmp_path / "validated"
    pairs = PAIRS + HELD_OUT
    config = TrainingConfig(
        epochs=2,
        learning_rate=1e-2,
        batch_size=4,
        validation_fraction=0.2,
        seed=5,
        checkpoint_every=1000,
        eval_max_new_tokens=10,
    )
    result = train_simplifier(pairs, base_model=tiny_t5, output_dir=out, config=config)

    records = [
        CorpusRecord(s, tuple(t for p in pairs if p.source == s for t in [p.target]))
        for s in dict.fromkeys(p.source for p in pairs)
    ]
    train, validation = split_records(records, validation_fraction=0.2, seed=5)
    assert result.validation_size == sum(len(r.targets) for r in validation)
    assert result.train_size == sum(len(r.targets) for r in train)

    clear_model_cache()
    predictions = [
        o.text
        for o in generate(load_model(out), [r.source for r in validation], temperature=0, max_new_tokens=10)
    ]
    most = max(len(r.targets) for r in validation)
    streams = [[r.targets[k] if k < len(r.targets) else None for r in validation] for k in range(most)]
    metrics = result.validation_metrics
    assert metrics["bleu"] == pytest.approx(sacrebleu.corpus_bleu(predictions, streams).score)
    expected_fkgl = sum(textstat.flesch_kincaid_grade(p) for p in predictions) / len(predictions)
    assert metrics["fkgl"] == pytest.approx(expected_fkgl)
    assert metrics["loss"] > 0
    reference = pytest.importorskip("measures.metrics.reference")
    expected_sari = reference.corpus_sari(
        [r.source for r in validation], predictions, [list(r.targets) for r in validation]
    )
    assert metrics["corpus_sari"] == pytest.approx(expected_sari)


def test_split_is_by_source_and_seeded():
    records = [CorpusRecord(f"source {i}", (f"a {i}", f"b {i}")) for i in range(10)]
    train, validation = split_records(records, validation_fraction=0.3, seed=1)
    assert len(validation) == 3 and len(train) == 7
    assert {r.source for r in train}.isdisjoint(r.source for r in validation)
    assert split_records(records, validation_fraction=0.3, seed=1) == (train, validation)
    assert split_records(records, validation_fraction=0.3, seed=2)[1] != validation
    # A tiny corpus still keeps one source for validation and one for training.
    assert [len(x) for x in split_records(records[:2], validation_fraction=0.1, seed=0)] == [1, 1]


class Interrupt(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    pass


def _config(**overrides) -> TrainingConfig:
    values = {
        "epochs": 3,
        "learning_rate": 5e-3,
        "batch_size": 3,
        "validation_fraction": 0.0,
        "seed": 11,
        "checkpoint_every": 4,
        "keep_checkpoints": 2,
        "eval_max_new_tokens": 4,
    }
    return TrainingConfig(**{**values, **overrides})


def test_resume_continues_the_step_count_and_reproduces_the_uninterrupted_run(tiny_t5, tmp_path):
    # 8 pairs, batch 3 -> 3 steps per epoch, 9 steps; checkpoints at 4 and 8 fall mid-epoch.
    reports = []
    straight = train_simplifier(
        PAIRS, base_model=tiny_t5, output_dir=tmp_path / "straight", config=_config(), progress=reports.append
    )
    assert [r.step for r in reports if r.phase == "training"] == list(range(1, 10))

    def crash_after_step_4(report):
        if report.step == 4:
            raise Interrupt

    with pytest.raises(Interrupt):
        train_simplifier(
            PAIRS,
            base_model=tiny_t5,
            output_dir=tmp_path / "resumed",
            config=_config(),
            progress=crash_after_step_4,
        )
    assert latest_checkpoint(tmp_path / "resumed").name == "step-00000004"

    resumed_reports = []
    resumed = train_simplifier(
        PAIRS,
        base_model=tiny_t5,
        output_dir=tmp_path / "resumed",
        config=_config(),
        progress=resumed_reports.append,
    )
    assert resumed.resumed_from_step == 4
    assert [r.step for r in resumed_reports if r.phase == "training"] == [5, 6, 7, 8, 9]
    assert resumed.global_step == straight.global_step == 9
    # Same batches, same dropout masks, same optimizer state: identical losses on a CPU.
    assert resumed.loss_history == straight.loss_history
    a = load_file(tmp_path / "straight" / "model.safetensors")
    b = load_file(tmp_path / "resumed" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_progress_reports_epochs_eta_and_phases(tiny_t5, tmp_path):
    reports = []
    train_simplifier(
        PAIRS,
        base_model=tiny_t5,
        output_dir=tmp_path / "p",
        config=_config(epochs=2, log_every=2),
        progress=reports.append,
    )
    training = [r for r in reports if r.phase == "training"]
    assert [r.step for r in training] == [2, 4, 6]  # every 2 steps, and the last one
    assert all(r.total_steps == 6 for r in reports)
    assert [r.epoch for r in training] == pytest.approx([2 / 3, 4 / 3, 2.0])
    assert all(r.loss is not None and r.loss > 0 for r in training)
    assert all(r.eta_s is not None and r.eta_s >= 0 for r in training) and training[-1].eta_s == 0
    assert [r.phase for r in reports[-2:]] == ["validating", "saving"]


def test_checkpoints_rotate_and_cancel_leaves_a_resumable_checkpoint(tiny_t5, tmp_path):
    out = tmp_path / "c"
    with pytest.raises(TrainingCancelled) as cancelled:
        train_simplifier(
            PAIRS,
            base_model=tiny_t5,
            output_dir=out,
            config=_config(checkpoint_every=2),
            should_stop=iter([False] * 6 + [True]).__next__,
        )
    assert cancelled.value.step == 7
    names = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert names == ["step-00000006", "step-00000007"]  # keep_checkpoints=2
    assert not (out / "model.safetensors").exists()
    result = train_simplifier(PAIRS, base_model=tiny_t5, output_dir=out, config=_config(checkpoint_every=2))
    assert result.resumed_from_step == 7 and result.global_step == 9


def test_resume_refuses_other_hyper_parameters_or_data(tiny_t5, tmp_path):
    out = tmp_path / "m"
    train_simplifier(PAIRS, base_model=tiny_t5, output_dir=out, config=_config(epochs=1))
    with pytest.raises(ResumeMismatchError, match="learning_rate"):
        train_simplifier(
            PAIRS, base_model=tiny_t5, output_dir=out, config=_config(epochs=1, learning_rate=1e-3)
        )
    with pytest.raises(ResumeMismatchError, match="different pairs"):
        train_simplifier(PAIRS[:-1], base_model=tiny_t5, output_dir=out, config=_config(epochs=1))
    fresh = train_simplifier(
        PAIRS[:-1], base_model=tiny_t5, output_dir=out, config=_config(epochs=1), resume=False
    )
    assert fresh.resumed_from_step is None and fresh.global_step == 3


def test_decoder_only_base_models_are_refused(tiny_llama, tmp_path):
    with pytest.raises(ValueError, match="decoder-only"):
        train_simplifier(PAIRS, base_model=tiny_llama, output_dir=tmp_path / "x", config=_config())


def test_unknown_hyper_parameters_are_refused():
    with pytest.raises(ValueError, match="lr"):
        TrainingConfig.from_dict({"lr": 1e-3})
    assert TrainingConfig.from_dict({"learning_rate": 1e-3}).learning_rate == 1e-3
