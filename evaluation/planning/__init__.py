"""Sample-size planning for a follow-up study, from a pilot's answers (pure computation, no Django).

- `outcomes`: which answers an outcome is made of, on which scale, in which design.
- `variance`: participant, source and residual variance and the system effects of a pilot.
- `power`: power of radlay's own analysis for a grid of designs, by simulating that design.
"""
