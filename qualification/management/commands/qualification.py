"""manage.py qualification results --study SLUG [--json]: who passed the qualification round, who
failed and how (the progress page's and the API's rows).
manage.py qualification rule --study SLUG --flow expert --group radiologist --share 80 [--retries N]
[--min-seconds S] [--on-fail retry|screen_out|flag] [--screen-out-url URL] [--remove]: set (or
remove) a flow's pass rule, refused with the reason as the console's page refuses it."""

from __future__ import annotations

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.serializers.json import DjangoJSONEncoder

from annotation.models import Study
from qualification.api import result_rows
from qualification.models import QualificationRule
from qualification.rule_services import qualification_rule_remove, qualification_rule_save
from qualification.selectors import qualification_results

ACTOR = "manage.py qualification"


class Command(BaseCommand):
    help = "Read a study's qualification results, or set a flow's pass rule."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        results = sub.add_parser("results", help="who passed, who failed, and how")
        results.add_argument("--study", required=True)
        results.add_argument("--json", action="store_true", help="JSON rows instead of a table")
        rule = sub.add_parser("rule", help="set or remove a flow's pass rule")
        rule.add_argument("--study", required=True)
        rule.add_argument("--flow", default="expert")
        rule.add_argument("--group", default="radiologist")
        rule.add_argument("--share", type=int, default=80, help="share correct, in per cent")
        rule.add_argument("--retries", type=int, default=0)
        rule.add_argument("--min-seconds", type=int, default=0)
        rule.add_argument(
            "--on-fail", default=QualificationRule.OnFail.RETRY, choices=QualificationRule.OnFail.values
        )
        rule.add_argument("--screen-out-url", default="")
        rule.add_argument("--remove", action="store_true")

    def handle(self, *args, action: str, study: str, **options):
        target = Study.objects.filter(slug=study).first()
        if target is None:
            raise CommandError(f"No study with slug {study!r}.")
        if action == "results":
            self._results(target, as_json=options["json"])
        else:
            self._rule(target, options)

    def _results(self, study: Study, *, as_json: bool) -> None:
        results = qualification_results(study=study)
        if as_json:
            self.stdout.write(json.dumps(result_rows(results), indent=2, cls=DjangoJSONEncoder))
            return
        self.stdout.write("participant\tgroup\tflow\tstate\tattempts\tlast score\tseconds")
        for r in results:
            score = (
                f"{r.last_correct}/{r.last_total} ({r.last_needed} needed)"
                if r.last_correct is not None
                else "open"
            )
            seconds = f"{r.last_seconds:.0f}" if r.last_seconds is not None else "-"
            self.stdout.write(
                f"{r.pseudonym}\t{r.group}\t{r.flow}\t{r.state or '-'}\t{r.attempts}\t{score}\t{seconds}"
            )

    def _rule(self, study: Study, options: dict) -> None:
        flow, group = options["flow"], options["group"]
        if options["remove"]:
            removed = qualification_rule_remove(study=study, flow=flow, group=group, actor=ACTOR)
            self.stdout.write("Removed." if removed else "There was no rule.")
            return
        try:
            rule = qualification_rule_save(
                study=study,
                flow=flow,
                group=group,
                share_percent=options["share"],
                retries=options["retries"],
                min_seconds=options["min_seconds"],
                on_fail=options["on_fail"],
                screen_out_redirect_url=options["screen_out_url"],
                actor=ACTOR,
            )
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            ) from None
        self.stdout.write(f"Rule set: {rule}")
