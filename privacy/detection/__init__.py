"""Finding Safe Harbor identifiers in report text. Django-free: Presidio's analyzer with the
radiology-aware recognizers of `recognizers.py` and the name list of `names.py`; `spans.py` turns
the findings into the de-identified text."""
