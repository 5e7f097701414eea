"""The pairwise comparison flow: a participant compares two simplifications of one source
side by side (A better / B better / tie / neither acceptable, an optional reason). The pairs and
their sides are drawn per participant (assignment.py, pure) and stored (PairwiseTask); answers are
ItemAnswers of the study's current `pairwise` instrument (preset pairwise_clinical)."""
