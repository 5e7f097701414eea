"""The deterministic agents of the self-correction loop, played with radlay's lexicon (Django-free).

- agents: `simplify`, `simplify_cot`, `radiologist_feedback`, `patient_feedback`, `process_feedback`,
  `refine` (the four agents, played without a model; the glossary and common-word rule live in the
  top-level `lexicon` package)
"""
