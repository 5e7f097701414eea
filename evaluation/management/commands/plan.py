"""`manage.py plan --pilot SLUG --outcome understanding --effect 0.25`: how many participants and
sources a follow-up study needs, by simulating radlay's design and analysis from the pilot's
variance (evaluation/planning/). The plan is stored, so the dashboard and the report show it too."""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Study
from evaluation.models import PowerPlan
from evaluation.planning import plans
from evaluation.planning.forms import PlanForm
from evaluation.planning.outcomes import OUTCOMES


class Command(BaseCommand):
    help = "Power and sample size for a follow-up study, simulated from a pilot study's answers."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--pilot", required=True, help="slug of the pilot study")
        parser.add_argument("--outcome", required=True, choices=list(OUTCOMES), help="the outcome to power")
        parser.add_argument(
            "--effect", required=True, type=float, help="difference to detect (outcome's scale)"
        )
        parser.add_argument("--systems", type=int, help="systems in the follow-up (default: the pilot's)")
        parser.add_argument("--alpha", type=float, help="significance level (default 0.05)")
        parser.add_argument("--power", type=float, help="target power (default 0.8)")
        parser.add_argument(
            "--max-participants", type=int, help="largest number of participants (default 100)"
        )
        parser.add_argument("--max-sources", type=int, help="largest number of sources (default 100)")
        parser.add_argument("--per-participant", type=int, help="sources per layperson (default: pilot's)")
        parser.add_argument("--dropout", type=float, help="drop-out rate (default: the pilot's)")
        parser.add_argument("--baseline", type=float, help="baseline mean answer (default: the pilot's)")
        parser.add_argument("--simulations", type=int, help="simulated studies per design (default 1000)")
        parser.add_argument(
            "--mixed-simulations", type=int, help="of those, analysed with the mixed model (200)"
        )
        parser.add_argument(
            "--points", type=int, help="designs per axis of the grid (default 10, at most 20)"
        )
        parser.add_argument("--seed", type=int, help="random seed (default 0)")
        parser.add_argument("--json", dest="json_path", help="also write the whole plan as JSON to this file")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["pilot"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['pilot']!r}")
        form = PlanForm.with_defaults({name: options.get(name) for name in PlanForm.base_fields})
        if not form.is_valid():
            problems = "; ".join(
                f"--{k.replace('_', '-')}: {' '.join(map(str, messages))}"
                for k, messages in form.errors.items()
            )
            raise CommandError(problems)
        created = plans.plan_create(study=study, parameters=form.cleaned_data, dispatch=False)
        plan = plans.plan_run(plan_id=created.pk)
        if plan is None:
            raise CommandError(f"plan {created.pk} was deleted while it ran")
        if plan.status != PowerPlan.Status.DONE:
            raise CommandError(f"plan {plan.pk} failed: {plan.error}")
        result = plan.result
        assert result is not None  # a done plan has its result
        self.stdout.write(plan_text(result))
        self.stdout.write(f"Stored as plan {plan.pk} of study {study.slug} ({result['seconds']} s).")
        if options.get("json_path"):
            Path(options["json_path"]).write_text(json.dumps(plan.result, indent=2), encoding="utf-8")


def plan_text(result: dict) -> str:
    pilot, grid = result["pilot"], result["grid"]
    settings, components = grid["settings"], pilot["components"]
    lines = [
        f"Pilot {pilot['study']}: {settings['outcome_label']}, {components['n_answers']} answers of "
        f"{components['n_participants']} participants on {components['n_sources']} sources.",
        f"Variance components ({components['method']}): participant {components['participant']:.3f}, "
        f"source {components['source']:.3f}, residual {components['residual']:.3f}.",
        f"Simulated: {settings['n_systems']} systems, one {settings['effect']:+g} above the baseline mean "
        f"{settings['baseline']:.3f}; alpha {settings['alpha']}, Holm over all pairs; drop-out "
        f"{settings['dropout']:.0%}; {settings['n_simulations']} studies per design, "
        f"seed {settings['seed']}.",
        "",
        "Power of the paired per-source Wilcoxon test (rows: participants who complete; columns: sources)",
    ]
    cells = {(c["participants"], c["sources"]): c for c in grid["cells"]}
    lines.append("participants " + "".join(f"{s:>8}" for s in grid["sources"]))
    for p in grid["participants"]:
        lines.append(f"{p:>12} " + "".join(f"{cells[(p, s)]['power']:>8.1%}" for s in grid["sources"]))
    smallest = grid["smallest"]
    lines.append("")
    if smallest:
        mixed = (
            f", mixed model {smallest['mixed_power']:.1%}" if smallest.get("mixed_power") is not None else ""
        )
        lines.append(
            f"Smallest design with power ≥ {settings['target']:.0%}: {smallest['participants']} participants "
            f"who complete (recruit about {smallest['recruited']}) × {smallest['sources']} sources: power "
            f"{smallest['power']:.1%} ± {smallest['power_se']:.1%} (Monte Carlo SE){mixed}."
        )
    else:
        lines.append(
            f"No design in the grid reaches {settings['target']:.0%}: "
            "raise --max-participants or --max-sources."
        )
    return "\n".join(lines)
