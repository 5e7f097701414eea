"""Bounds of the whole numbers a launch takes (generation's and judging's forms and the judge API):
a value outside them is an error naming the field, never a database error (concurrency is an integer
column, which PostgreSQL and radlay's backend refuse past 2**31 - 1) nor a request that a backend
refuses. work/limits.py holds the server's own, configurable limits on top of these."""

MAX_CONCURRENCY = 1000
MAX_TOKENS = 131_072  # the longest context of the models radlay is used with
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1  # a 64-bit seed, as the OpenAI API and torch take it
MAX_SAMPLE_INDEX = 1_000_000
