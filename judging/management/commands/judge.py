"""`manage.py judge`: run an LLM judge (or the offline glossary heuristic) on a study.

    manage.py judge --study demo --backend glossary --wait
    manage.py judge --study demo --backend openai --model gpt-4o-mini --samples 3 --wait
    manage.py judge --study demo --backend transformers --model /models/qwen2.5-7b-instruct
    manage.py judge --resume 4 --retry-failed --wait

Items run on the Celery workers (in-process in the embedded mode without REDIS_URL, where the
command returns when the run is done). --wait polls the run until it finishes (outliving a database
restart) and prints the judge–radiologist agreement; the exit status is then 1 when any item
failed. When the task queue is down, a launch or resume says so (exit status 2); the run starts by
itself once the queue is back.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Study
from generation.backends.registry import backend_help, offered
from judging import selectors, services
from judging.agreement_terms import STATISTICS
from judging.instrument import INSTRUMENT_TASKS
from judging.models import JudgeRun
from judging.prompts.registry import DEFAULT_VERSION
from work.launch_options import add_launch_options, command_error, launch_arguments, wait
from work.scheduler import TaskQueueUnreachable


class Command(BaseCommand):
    help = "Run a judge on a study's simplifications (the radiologist rubric and the lay questions)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", help="study slug")
        parser.add_argument(
            "--backend",
            choices=[value for value, _ in offered(JudgeRun.Backend.choices)],
            help=backend_help() or None,
        )
        parser.add_argument(
            "--samples", type=int, default=1, help="K samples per item, summarised by the median"
        )
        parser.add_argument(
            "--instruments",
            default=",".join(INSTRUMENT_TASKS),
            help=f"comma-separated, among {','.join(INSTRUMENT_TASKS)}",
        )
        add_launch_options(
            parser,
            noun="run",
            items="items",
            temperature=None,
            max_tokens=256,
            prompt_version=DEFAULT_VERSION,
        )

    def handle(self, *args, **options) -> None:
        try:
            run = self._resume(options) if options["resume"] is not None else self._launch(options)
        except TaskQueueUnreachable as exc:
            raise CommandError(str(exc), returncode=2) from None
        if not options["wait"]:
            return
        progress = wait(
            self,
            batch=run,
            progress=lambda: selectors.run_progress(run=run),
            heal=lambda: services.judge_runs_heal(run=run),
            poll=options["poll"],
            label=f"judge run {run.pk}",
        )
        if run.agreement_computed_at is None:
            services.judge_run_agreement_compute(run=run)
        self._print_agreement(run)
        if progress.failed:
            raise CommandError(
                f"{progress.failed} item(s) failed; see the run page or --resume {run.pk} --retry-failed"
            )

    def _resume(self, options) -> JudgeRun:
        run = JudgeRun.objects.filter(pk=options["resume"]).first()
        if run is None:
            raise CommandError(f"no judge run {options['resume']}")
        sent = services.judge_run_resume(run=run, retry_failed=options["retry_failed"])
        self.stdout.write(f"judge run {run.pk} resumed: {len(sent)} item(s) sent")
        return run

    def _launch(self, options) -> JudgeRun:
        if not options["study"] or not options["backend"]:
            raise CommandError("--study and --backend are required (or --resume RUN_ID)")
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        try:
            run = services.judge_run_create(
                study=study,
                backend=options["backend"],
                samples=options["samples"],
                instruments=[name.strip() for name in options["instruments"].split(",") if name.strip()],
                **launch_arguments(options),
            )
        except ValidationError as exc:
            raise command_error(exc) from None
        self.stdout.write(f"judge run {run.pk} launched ({run.label}): {run.items.count()} items")
        return run

    def _print_agreement(self, run: JudgeRun) -> None:
        result = run.agreement or {}
        self.stdout.write(f"agreement of {run.label} with the radiologists:")
        for row in result.get("per_field", []):
            cells = " ".join(
                f"{name}={row[name]['estimate']:.3f}" if row[name]["estimate"] is not None else f"{name}=—"
                for name in STATISTICS
            )
            self.stdout.write(f"  {row['field']:<20} vs {row['comparison']:<22} n={row['n']:<4} {cells}")
        calibration = result.get("calibration") or {}
        if calibration.get("available"):
            self.stdout.write(f"calibration of {run.label} ({calibration['per_field'][0]['binning']}):")
            for row in calibration["per_field"]:
                self.stdout.write(
                    f"  {row['field']:<20} n={row['n']:<4} ECE={row['ece']['estimate']:.3f} "
                    f"Brier={row['brier']['estimate']:.3f} accuracy={row['accuracy']['estimate']:.3f} "
                    f"confidence={row['mean_confidence']['estimate']:.3f}"
                )
        elif calibration:
            self.stdout.write(f"calibration: {calibration['reason']}")
        for row in result.get("position_bias") or []:
            flip, first = row["flip_share"], row["first_position_win_rate"]
            if flip["estimate"] is not None:
                self.stdout.write(
                    f"position bias of {row['instrument']}·{row['item']}: flip share {flip['estimate']:.3f} "
                    f"[{flip['low']:.3f}, {flip['high']:.3f}] over {row['n_pairs_both_orders']} pairs"
                    + (
                        f"; first-position win rate {first['estimate']:.3f}"
                        if first["estimate"] is not None
                        else ""
                    )
                )
        lay = (result.get("lay_severity") or {}).get("judge")
        if lay:
            self.stdout.write(
                f"  lay judge severity accuracy: before {lay['original']['accuracy']} · "
                f"after {lay['assisted']['accuracy']}"
            )
