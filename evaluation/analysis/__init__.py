"""A study's analysis, computed by a worker into its snapshot.

The computations (pure, no Django): study.py (the whole document) from protocol.py (the
protocol's tables and agreement), metric_tables.py, intervals.py (intervals and paired
comparisons), correlations.py, instrument_items.py and error_spans.py; style_control.py, figures.py
(the SVG figures).
The reads that feed them: study_frames.py and instrument_frames.py (pandas frames, worker only),
instrument_selectors.py and error_span_selectors.py (plain reads a web worker may import).
The document's parts: document.py (how readers take it), adjudication_summary.py with
adjudication_section.py, span_suggestions.py, planted_control_scores.py; what other apps add:
registered_sections.py (sections) and item_raters.py (raters). audit.py compares it with the
figures a paper reported (reported/).
"""
