"""The options that `manage.py generate` and `manage.py judge` share: both launch a batch of
scheduled work (generation.services.scheduler) with a model, sampling settings and a concurrency,
resume one, and may wait for it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

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
        help=f"{items} of the {noun} queued or running at once (default RADLAY_GENERATION_CONCURRENCY)",
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
