"""The options that `manage.py generate` and `manage.py judge` share: both launch a batch of
scheduled work (work.scheduler) with a model, sampling settings and a concurrency, resume one, and
may wait for it (`wait`, the same loop for both)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

from work import runner
from work.runner import DATABASE_ERRORS
from work.selectors import WorkProgress

# The options add_launch_options adds that go to the launch service as they are (model → model_name).
LAUNCH_ARGUMENTS = ("temperature", "max_tokens", "seed", "prompt_version", "concurrency")


def add_launch_options(
    parser: CommandParser,
    *,
    noun: str,
    items: str,
    temperature: float | None,
    max_tokens: int,
    prompt_version: str,
) -> None:
    """Add --model, the sampling options, --concurrency, --resume, --retry-failed, --wait and
    --poll; `noun` names the batch ("batch", "run"), `items` its jobs ("jobs", "items")."""
    parser.add_argument("--model", default="", help="API model name, or local model directory (transformers)")
    parser.add_argument(
        "--temperature",
        type=float,
        default=temperature,
        help="default: the prompt set's" if temperature is None else None,
    )
    parser.add_argument("--max-tokens", type=int, default=max_tokens)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--prompt-version", default=prompt_version)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help=f"{items} of the {noun} queued or running at once (default RADLAY_JOB_CONCURRENCY)",
    )
    parser.add_argument(
        "--resume",
        type=int,
        default=None,
        metavar=noun.upper(),
        help=f"resume this {noun} instead of launching",
    )
    parser.add_argument(
        "--retry-failed", action="store_true", help=f"with --resume: run failed {items} again, on purpose"
    )
    parser.add_argument(
        "--wait", action="store_true", help=f"wait for the {noun} to finish, printing progress"
    )
    parser.add_argument("--poll", type=float, default=2.0, help="seconds between progress lines with --wait")


def launch_arguments(options: dict[str, Any]) -> dict[str, Any]:
    """The launch service's keyword arguments from the options add_launch_options added."""
    return {"model_name": options["model"], **{name: options[name] for name in LAUNCH_ARGUMENTS}}


def command_error(exc: ValidationError) -> CommandError:
    """A launch refused by its service, each field named."""
    return CommandError("; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items()))


def wait(
    command: BaseCommand,
    *,
    batch: Any,
    progress: Callable[[], WorkProgress],
    heal: Callable[[], Any],
    poll: float,
    label: str,
) -> WorkProgress:
    """Poll the batch until it finishes, writing a line on `command`'s stdout whenever its progress
    changes (`label`: "batch 12"); returns its last progress.

    In the embedded mode (no worker, no beat) waiting is when lost jobs are sent again (`heal`).
    A lost database connection (a PostgreSQL restart) is reported and retried: the batch carries on
    on the workers, and so does the report once the database is back."""
    last = None
    while True:
        try:
            if runner.embedded_mode():
                heal()
            batch.refresh_from_db()
            current = progress()
        except DATABASE_ERRORS as exc:
            # The broken connection is dropped so that the next poll opens a new one.
            connection.close()
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            command.stderr.write(
                f"{label}: the database is unreachable ({first_line}); retrying in {poll:g} s"
            )
            last = None
            time.sleep(poll)
            continue
        line = f"{label}: {current.line()}"
        if line != last:
            command.stdout.write(line)
            last = line
        if current.finished:
            return current
        time.sleep(poll)
