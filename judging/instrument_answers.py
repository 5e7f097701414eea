"""The LLM judges' answers to instrument items as rows of the instrument-item analysis (the column
contract of evaluation/analysis/instrument_items.py), registered with evaluation from
JudgingConfig.ready()."""

from __future__ import annotations

import numpy as np
import pandas as pd

from annotation.models import Study
from annotation.selectors import systems_by_text
from evaluation.analysis.instrument_items import ANSWER_COLUMNS, JUDGE_ROLE_PREFIX
from judging.instrument_items import ITEM_TASK
from judging.models import JudgeAnswer
from judging.pair_orders import is_reversed_order, reference_texts


def judge_answers_frame(*, study: Study, run_id: int | None = None) -> pd.DataFrame:
    """The instrument-item answers of the study's judge runs (or of one run) in the same frame,
    one row per (judge item, item key), each run a rater of its own: participant "judge <run>",
    role "judge:<run>" (JUDGE_ROLE_PREFIX), so the analysis keeps them out of the human figures and
    sets them beside the humans only in the judge-vs-human agreement. The reversed order of a
    (text, reference) comparison (judging.pair_orders) is left out: the humans answered the first
    order, and the reversed one feeds the position bias only. Two queries."""
    answers = JudgeAnswer.objects.filter(item__run__study=study, item__task=ITEM_TASK)
    if run_id is not None:
        answers = answers.filter(item__run_id=run_id)
    rows = answers.values_list(
        "item__run_id",
        "item__instrument__key",
        "item__instrument__version",
        "item__instrument__structure_fingerprint",
        "item__source__key",
        "item__instrument__flow",
        "item__source_id",
        "item__shown_text_id",
        "item__reference_text_id",
        "item_values",
        "item_scores",
    )
    systems = {text: tuple(keys) for text, keys in systems_by_text(study=study).items()}
    references = reference_texts(study_id=study.pk)
    records = []
    for run, key, version, structure, source, flow, source_id, text, reference, values, scores in rows:
        if is_reversed_order(
            flow=flow, source_id=source_id, text_id=text, reference_id=reference, references=references
        ):
            continue
        for item, value in values.items():
            score = scores.get(item)
            records.append(
                (
                    f"judge {run}",
                    f"{JUDGE_ROLE_PREFIX}{run}",
                    "",
                    key,
                    version,
                    structure,
                    item,
                    source,
                    np.nan if text is None else text,
                    np.nan if reference is None else reference,
                    systems.get(text, ()) if text is not None else (),
                    value,
                    np.nan if score is None else score,
                )
            )
    if not records:
        return pd.DataFrame({column: pd.Series(dtype=object) for column in ANSWER_COLUMNS})
    frame = pd.DataFrame.from_records(records, columns=list(ANSWER_COLUMNS))
    return frame.astype({"text_id": np.float64, "reference_id": np.float64, "score": np.float64})
