"""The compare-two flow: a participant compares two simplifications of one source side by side
(A better / B better / tie / neither acceptable, an optional reason). The pairs and their sides are
drawn per participant (assignment.py, pure) and stored (PairwiseTask); answers are ItemAnswers of
the study's current instrument of flow `pairwise` (the stored value; preset pairwise_clinical).
Shaped as every flow of surveys/ is: views.py, urls.py, services.py, selectors.py; templates in
templates/surveys/compare_two/, script and styles static/radlay/compare_two.js, .css."""
