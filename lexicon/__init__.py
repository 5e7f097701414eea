"""radlay's radiology lay glossary and common-word rule (Django-free).

- glossary: `load_glossary()`, `find_terms(text)` -> TermMatch(term, plain, start, end, category, ...)
- common_words: `is_common(word)` (seed 001's top-3000 rule, used by CWR and the Patient agent),
  `is_known_to_laypeople(word)` (the Patient agent's check)
- facts: `extract_entities(text)`, `check_facts(source, simplification)` (Radiologist agent, SCGR)

Used by measures (the HIT and CWR metrics), generation (glossary backend, SCGR), judging (the
glossary judge's error spans) and privacy (the name recognizer's word lists); imports none of them.
"""
