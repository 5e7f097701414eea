"""Planning on the authors' 2024 release: the fitted model, simulated at the release's own design,
reproduces the variability the release shows (skips when the release is absent)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Study
from evaluation.planning.outcomes import get_outcome
from evaluation.planning.pilot import pilot_components, pilot_frame
from evaluation.planning.power import PowerSettings, latent_mean, simulate_answers

pytestmark = [pytest.mark.release, pytest.mark.django_db]


@pytest.fixture
def release(release_dir):
    call_command("import_release", str(release_dir), "--study", "release-plan", stdout=io.StringIO())
    return Study.objects.get(slug="release-plan")


@pytest.mark.parametrize("outcome_key", ["understanding", "helpfulness", "severity_accuracy"])
def test_the_release_design_simulated_from_its_fit_reproduces_its_variability(release, outcome_key):
    outcome = get_outcome(outcome_key)
    components, mean = pilot_components(study=release, outcome=outcome)
    frame = pilot_frame(study=release, outcome=outcome)
    assert (components.n_participants, components.n_sources) == (8, 40)
    systems = sorted(components.system_means)
    settings = PowerSettings(
        outcome=outcome,
        participant_var=components.participant,
        source_var=components.source,
        residual_var=components.residual,
        baseline=mean,
        effect=0.0,
        n_systems=len(systems),
    )
    latent = [latent_mean(settings, components.system_means[s]) for s in systems]
    y, part, src, sys_ = simulate_answers(settings, 8, 40, system_means=latent, n_studies=600, seed=4)

    def statistics(values, participant, source, system):
        per_source = np.bincount(source, weights=values) / np.bincount(source)
        per_participant = np.bincount(participant, weights=values) / np.bincount(participant)
        per_system = [values[system == k].mean() for k in range(len(systems))]
        return [values.std(), per_source.std(), per_participant.std(), *per_system]

    simulated = np.array([statistics(row, part, src, sys_) for row in y])
    codes = {key: i for i, key in enumerate(systems)}
    participants = {p: i for i, p in enumerate(sorted(frame["participant"].unique()))}
    sources = {s: i for i, s in enumerate(sorted(frame["source"].unique()))}
    observed = statistics(
        frame["value"].to_numpy(),
        frame["participant"].map(participants).to_numpy(),
        frame["source"].map(sources).to_numpy(),
        frame["system"].map(codes).to_numpy(),
    )
    low, high = np.percentile(simulated, [1, 99], axis=0)
    names = ["SD of answers", "SD of source means", "SD of participant means", *systems]
    for name, value, lo, hi in zip(names, observed, low, high, strict=True):
        assert lo <= value <= hi, (
            f"{outcome_key}: the release's {name} {value:.3f} is outside [{lo:.3f}, {hi:.3f}]"
        )
