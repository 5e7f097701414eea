"""radlay's radiology lay glossary and the deterministic agents built on it (Django-free).

- lexicon: `load_glossary()`, `find_terms(text)` -> TermMatch(term, plain, start, end, category, ...)
- common_words: `load_common_words()`, `is_common(word)` for the Patient check
- facts: `extract_entities(text)`, `check_facts(source, simplification)` (Radiologist and SCGR)
- agents: `simplify`, `simplify_cot`, `radiologist_feedback`, `patient_feedback`, `process_feedback`,
  `refine` (the four agents of the self-correction loop, played without a model)
"""
