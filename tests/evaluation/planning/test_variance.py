"""The variance-component estimators recover the components of data simulated with them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.planning.variance import estimate_components, moment_components


def crossed(n_participants, n_sources, sd_p, sd_s, sd_e, *, share=1.0, seed=0, systems=(0.0, 0.5, 1.0)):
    rng = np.random.default_rng(seed)
    u = rng.normal(0, sd_p, n_participants)
    v = rng.normal(0, sd_s, n_sources)
    p, s = np.meshgrid(np.arange(n_participants), np.arange(n_sources), indexing="ij")
    p, s = p.ravel(), s.ravel()
    keep = rng.random(p.size) < share
    p, s = p[keep], s[keep]
    k = (p + s) % len(systems)
    value = np.asarray(systems)[k] + u[p] + v[s] + rng.normal(0, sd_e, p.size)
    return pd.DataFrame({"participant": p, "source": s, "system": k.astype(str), "value": value})


def test_moments_recover_known_components_on_a_large_unbalanced_design():
    frame = crossed(300, 400, 0.5, 0.7, 0.6, share=0.3, seed=1)
    p, s, e = moment_components(frame)
    assert p == pytest.approx(0.25, rel=0.15)
    assert s == pytest.approx(0.49, rel=0.15)
    assert e == pytest.approx(0.36, rel=0.05)


def test_reml_recovers_known_components_and_system_means():
    frame = crossed(30, 40, 0.5, 0.5, 0.6, seed=2)
    fit = estimate_components(frame, method="reml", n_resamples=50)
    assert fit.method.startswith("REML")
    assert fit.residual == pytest.approx(0.36, rel=0.1)
    assert fit.participant == pytest.approx(0.25, rel=0.6)  # 30 participants: a wide estimate
    assert fit.source == pytest.approx(0.25, rel=0.6)
    differences = np.array([fit.system_means[k] for k in "012"]) - fit.system_means["0"]
    np.testing.assert_allclose(differences, [0.0, 0.5, 1.0], atol=0.08)
    low, high = fit.intervals["residual"]
    assert low < 0.36 < high


def test_moment_estimates_agree_with_reml_on_the_same_data():
    frame = crossed(40, 60, 0.4, 0.6, 0.5, share=0.6, seed=3)
    reml = estimate_components(frame, method="reml", n_resamples=20)
    moments = estimate_components(frame, method="moments", n_resamples=20)
    assert moments.method.startswith("method of moments")
    for name in ("participant", "source", "residual"):
        assert getattr(moments, name) == pytest.approx(getattr(reml, name), rel=0.25, abs=0.02)


def test_too_few_participants_is_a_clear_error():
    frame = crossed(1, 10, 0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="at least two participants and two sources"):
        estimate_components(frame)
