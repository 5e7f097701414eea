"""Sample-size planning for a follow-up study, from a pilot's answers, and adaptive allocation.

The computation (pure, no Django):

- `outcomes`: which answers an outcome is made of, on which scale, in which design;
  `outcome_frames`: how each is read from a pilot's answer frames.
- `variance`: participant, source and residual variance and the system effects of a pilot.
- `power`: power of radlay's own analysis for a grid of designs, by simulating that design;
  `sequential`: the same model with participants arriving one by one; `power_curve`: its figure.

The database side: `plans` (the stored PowerPlan: request, run on the job layer, read), `pilot`
(a pilot's answers fitted and a plan's designs simulated, in the task), `forms` (the planning
request, validated once for the page, the API and `manage.py plan`) and `adaptive` (a study's
adaptive allocation: the option, the row a newcomer gets, where the study stands).
"""
