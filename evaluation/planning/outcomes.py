"""The outcomes a follow-up study can be planned for, and how each is read from a pilot.

An outcome is one number per (participant, source, system): a lay panel-2 answer (the system is
the one the Latin square assigned to that item) or a radiologist's rating of a system's text. Its
`design` says how a study collects it: "lay" — each participant sees a window of sources, one
system per source, by radlay's Latin square (annotation/latin_square.py); "expert" — each
radiologist rates every system's text of every source. Its `kind` says how simulated answers are
drawn on the outcome's scale (see evaluation/planning/power.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from annotation import scales
from evaluation.stats.severity import severity_errors

COLUMNS = ["participant", "source", "system", "value"]


@dataclass(frozen=True)
class Outcome:
    key: str
    label: str
    design: str  # "lay" | "expert"
    kind: str  # "ordinal" (integer levels low..high) | "binary" (0/1) | "continuous" (clipped)
    low: float
    high: float


def _levels(scale: scales.Scale) -> tuple[float, float]:
    values = [level.value for level in scale.levels]
    return float(min(values)), float(max(values))


_U_LOW, _U_HIGH = _levels(scales.UNDERSTANDING)
_S_LOW, _S_HIGH = _levels(scales.SEVERITY)
_H_LOW, _H_HIGH = _levels(scales.HELPFULNESS)
_L_LOW, _L_HIGH = _levels(scales.LIKERT)

OUTCOMES: dict[str, Outcome] = {
    outcome.key: outcome
    for outcome in (
        Outcome(
            "understanding",
            "Understanding with the simplification (Q1, panel 2)",
            "lay",
            "ordinal",
            _U_LOW,
            _U_HIGH,
        ),
        Outcome(
            "understanding_gain",
            "Comprehension gain (Q1 panel 2 − panel 1, per item)",
            "lay",
            "ordinal",
            _U_LOW - _U_HIGH,
            _U_HIGH - _U_LOW,
        ),
        Outcome(
            "severity_accuracy", "Severity accuracy (Q3 = reference, panel 2)", "lay", "binary", 0.0, 1.0
        ),
        Outcome(
            "severity_squared_error",
            "Severity squared error (Q3 vs reference, panel 2)",
            "lay",
            "continuous",
            0.0,
            (_S_HIGH - _S_LOW) ** 2,
        ),
        Outcome("helpfulness", "Helpfulness (Q4)", "lay", "ordinal", _H_LOW, _H_HIGH),
        *(
            Outcome(f"expert_{aspect}", f"Radiologists' {aspect} (1–5)", "expert", "ordinal", _L_LOW, _L_HIGH)
            for aspect in scales.EXPERT_ASPECTS
        ),
    )
}


def get_outcome(key: str) -> Outcome:
    try:
        return OUTCOMES[key]
    except KeyError:
        raise ValueError(f"Unknown outcome {key!r}; choose one of: {', '.join(OUTCOMES)}.") from None


def outcome_frame(
    *, lay_answers: pd.DataFrame, expert_ratings: pd.DataFrame, outcome: Outcome
) -> pd.DataFrame:
    """Long frame (participant, source, system, value) of `outcome`, NaNs dropped.

    `lay_answers` / `expert_ratings` have the columns of evaluation/selectors.py's frames."""
    if outcome.design == "expert":
        aspect = outcome.key.removeprefix("expert_")
        frame = expert_ratings[["participant", "source", "system", aspect]].rename(columns={aspect: "value"})
        return frame.dropna(subset=["value"]).reset_index(drop=True)[COLUMNS]
    assisted = lay_answers[lay_answers["phase"] == "assisted"]
    base = assisted[["participant", "source"]].assign(system=assisted["assigned_system"].to_numpy())
    if outcome.key == "understanding_gain":
        original = lay_answers[lay_answers["phase"] == "original"].set_index("item_id")["understanding"]
        value = assisted["understanding"].to_numpy() - original.reindex(assisted["item_id"]).to_numpy()
    elif outcome.key in ("severity_accuracy", "severity_squared_error"):
        guess = assisted["severity_guess"].to_numpy(dtype=np.float64)
        reference = assisted["reference_severity"].to_numpy(dtype=np.float64)
        usable = ~(np.isnan(guess) | np.isnan(reference))
        squared, hits = severity_errors(guess[usable], reference[usable])
        value = np.full(len(assisted), np.nan)
        value[usable] = hits if outcome.key == "severity_accuracy" else squared
    else:
        value = assisted[outcome.key].to_numpy(dtype=np.float64)
    frame = base.assign(value=np.asarray(value, dtype=np.float64))
    return frame.dropna(subset=["value", "system"]).reset_index(drop=True)[COLUMNS]
