"""Waiting, in a browser test, for what the page sent to reach the database."""

import time


def wait_for(read, expected, seconds: float = 15.0):
    """Call `read` every 0.2 s until it returns `expected` or `seconds` pass; return its last value."""
    deadline = time.monotonic() + seconds
    while True:
        got = read()
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.2)
