"""The plain "rate each pair" flow (StudyInstrument.flow = "pairs"; docs/guide/pairs-flow.md): seed
002's caption pairs rated on four criteria by radiologists and a lay reader, seed 000's sentence
matching and expert verification. One page per (simplification, reference) pair, asking the items
of the participant's rater group from the study's current pairs instruments. One module per concern:

- `design.py`   what a study's pairs flow is: its instruments, a participant's rater group and
                items, the pairs (what a pair's reference is), the participant's seeded order;
- `setup.py`    attaching a preset to a study and inviting participants of a rater group;
- `pages.py`    one page's state (stored or posted answers, sentence splits), saving a page (all or
                nothing, each item's error named), progress and resume.

Path: invite link → consent (the study's text for the role) → pages in the participant's order →
end page with the completion code.
"""
