"""How each outcome of evaluation/planning/outcomes.py is read from a pilot's answers: one long
frame (participant, source, system, value) per outcome, the input of the variance components
(evaluation/planning/variance.py). Pure computation: no Django."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation.planning.outcomes import Outcome
from measures.stats.severity import severity_errors

COLUMNS = ["participant", "source", "system", "value"]


def outcome_frame(
    *, lay_answers: pd.DataFrame, expert_ratings: pd.DataFrame, outcome: Outcome
) -> pd.DataFrame:
    """Long frame (participant, source, system, value) of `outcome`, NaNs dropped.

    `lay_answers` / `expert_ratings` have the columns of evaluation/analysis/study_frames.py's frames."""
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
