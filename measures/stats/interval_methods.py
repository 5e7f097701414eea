"""The names, minimums and thresholds of the crossed-design intervals (measures/stats/crossed.py),
kept apart from the computation so that the pages' captions and the Methods (evaluation/pages/report.py)
read them without importing numpy, pandas or scipy into a web worker."""

# Fewer participants or sources leave the participant (source) variance with one or two degrees
# of freedom: a t interval 4–13 times the SE, which says nothing a reader can use.
MIN_PARTICIPANTS = 3
MIN_SOURCES = 5
TOO_FEW = (
    f"too few to estimate an interval (needs at least {MIN_PARTICIPANTS} participants and "
    f"{MIN_SOURCES} sources)"
)
# The source × system interaction is pooled into the residual unless its F test rejects at this
# level (the "sometimes pool" rule's recommended 0.25).
POOLING_P = 0.25
METHOD_T = "crossed-design t interval (Satterthwaite df)"
# Below this many effective events (or non-events) a proportion's Wilson interval undercovers
# (92 % at 8 participants for shares of 0.05–0.95); Clopper–Pearson takes over.
RARE_EVENTS = 10
METHOD_WILSON = (
    "crossed-design Wilson interval (effective sample size, Satterthwaite df; "
    "Korn–Graubard for rare proportions)"
)
METHOD_MOVER = "crossed-design MOVER interval from the two means' Wilson intervals (Satterthwaite df)"
METHOD_RATE = (
    "crossed-design Poisson score interval for a count or rate (effective exposure, Satterthwaite df)"
)
METHOD_MOVER_RATE = (
    "crossed-design MOVER interval from the two means' Poisson score intervals (Satterthwaite df)"
)
