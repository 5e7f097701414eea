import math

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, mean_squared_error

from measures.stats.severity import mse_and_accuracy, severity_errors_per_answer


def test_mse_and_accuracy_ignore_missing_pairs():
    guesses = [1, 2, None, 4, 5, 3, float("nan")]
    references = [1, 4, 3, 4, None, 5, 2]
    kept_guesses, kept_references = [1, 2, 4, 3], [1, 4, 4, 5]
    mse, accuracy, n = mse_and_accuracy(guesses, references)
    assert n == 4
    assert mse == pytest.approx(mean_squared_error(kept_references, kept_guesses))  # (0 + 4 + 0 + 4) / 4
    assert mse == 2.0
    assert accuracy == accuracy_score(kept_references, kept_guesses) == 0.5


def test_mse_and_accuracy_without_pairs():
    assert mse_and_accuracy([None, 2], [3, math.nan]) == (None, None, 0)
    with pytest.raises(ValueError):
        mse_and_accuracy([1], [1, 2])


def test_errors_per_answer_stay_aligned_with_nan_where_a_side_is_missing():
    guesses = [1, 2, None, 4, 5, 3, float("nan")]
    references = [1, 4, 3, 4, None, 5, 2]
    squared_errors, hits = severity_errors_per_answer(guesses, references)
    nan = math.nan
    np.testing.assert_array_equal(squared_errors, [0.0, 4.0, nan, 0.0, nan, 4.0, nan])
    np.testing.assert_array_equal(hits, [1.0, 0.0, nan, 1.0, nan, 0.0, nan])
    with pytest.raises(ValueError):
        severity_errors_per_answer([1], [1, 2])
