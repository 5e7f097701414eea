"""Time `manage.py analyze` on a large synthetic study.

    .venv/bin/python bench/analyze.py                                  # 20 000 sources × 20 laypeople
    .venv/bin/python bench/analyze.py --sources 2000 --laypeople 8 --resamples 2000

Builds, with bulk_create in a throwaway SQLite database (never the configured one), a study of
`--sources` sources × 4 systems (every tenth source has a text two systems share), `--radiologists`
radiologists rating every distinct text and `--laypeople` laypeople answering every source (both
panels and panel 3, Latin-square assignment), then times the analysis stage by stage.

Options: the analysis's defaults (every registered metric family, every per-text metric
correlated, AnalysisOptions' resamples), no embedder (no model in a bench); each can be reduced.
Targets: the 40-source release ≤ 2 s warm, 20 000 sources × 20 laypeople ≤ 30 s and < 1 GB RSS.

Runs, each timed (wall and CPU) with its peak RSS: cold (first analysis in the process, no
automatic metrics stored: the study's TextMetrics and SystemMetrics rows are deleted first, unless
`--keep-stored`; they are computed and stored in chunks), fresh process (a new Python process
analyses the same study with the metrics stored and nothing in memory: what a worker does after a
restart), warm (the first process again), then the warm run stage by stage.

`--database FILE` keeps the built study in FILE (and reuses it when FILE exists);
`--release [DIR]` analyses the authors' 2024 release instead (cold, warm, stage by stage);
`--profile N` adds cProfile's top N functions of a warm run.

Reference, measured in the same run on the same frames: a plain pandas groupby computing Table 1's
lay and radiologist means (the part of the analysis every implementation must do). The printed
ratio analysis / reference says what the rest (readability of every text, bootstrap intervals,
agreement, paired tests, correlations) costs on top of the bare means.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation import scales  # noqa: E402

SYSTEMS = ("plain_bs", "plain_sc", "cot_bs", "cot_sc")
SEVERITY = tuple(scales.SEVERITY.names)
UNDERSTANDING = tuple(scales.UNDERSTANDING.names)
CONFIDENCE = tuple(scales.CONFIDENCE.names)
HELPFULNESS = tuple(scales.HELPFULNESS.names)
ORGANS = (
    "liver",
    "left kidney",
    "right kidney",
    "pancreas",
    "spleen",
    "gallbladder",
    "bladder",
    "adrenal gland",
)
FINDINGS = (
    "hypodense lesion",
    "simple cyst",
    "calcified granuloma",
    "nodular contour",
    "mild dilatation",
    "enhancing mass",
    "small stone",
    "fluid collection",
)
PLAIN = (
    "spot",
    "fluid-filled sac",
    "hardened tiny lump",
    "bumpy edge",
    "slight widening",
    "growth that lights up",
    "small stone",
    "pocket of fluid",
)


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def synthetic_study(*, n_sources: int, n_lay: int, n_radiologists: int, seed: int = 0, slug: str = "bench"):
    """Create the study (see the module docstring) and return it. Rows go in through the importers'
    `rows_insert` (COPY on PostgreSQL, multi-row INSERTs elsewhere): `bulk_create` of the 2.4 M rows
    of 20 000 sources × 20 laypeople spent most of ~20 minutes building model instances."""
    import numpy as np
    from django.db import transaction

    from annotation import scales
    from annotation.bulk_insert import rows_insert
    from annotation.instrument_services import study_instruments_attach
    from annotation.models import (
        ItemAnswer,
        LayItem,
        Participant,
        Simplification,
        SimplificationText,
        Source,
        Study,
        System,
        text_hash,
    )

    rng = np.random.default_rng(seed)
    with transaction.atomic():
        study = Study.objects.create(slug=slug, title=f"Synthetic {n_sources} × {n_lay}", status="open")
        # Every answer is an item answer of the protocol's instruments (annotation/answer_store.py).
        instrument = {row.flow: row.pk for row in study_instruments_attach(study=study)}
        answer_columns = ("participant_id", "instrument_id", "item_key", "source_id", "shown_text_id")
        answer_columns += ("phase", "value", "score")
        code = {
            name: {level.name: level.value for level in scale.levels}
            for name, scale in scales.LAY_SCALES.items()
        }
        system_ids = rows_insert(
            System,
            columns=("key", "label", "position"),
            rows=[(key, key, i) for i, key in enumerate(SYSTEMS)],
            fixed={"study": study},
        )
        severities = rng.integers(0, 5, n_sources)
        source_ids = rows_insert(
            Source,
            columns=("key", "position", "reference_severity", "text"),
            rows=[
                (
                    f"s{i:06d}",
                    i,
                    SEVERITY[severities[i]],
                    f"{1 + i % 9}.{i % 7} cm {FINDINGS[i % 8]} in the {ORGANS[(i // 8) % 8]}, segment "
                    f"{1 + i % 8}, {'unchanged' if i % 3 else 'new'} since the prior examination of {i}.",
                )
                for i in range(n_sources)
            ],
            fixed={"study": study},
        )
        text_rows, owners = [], []
        for i, source_id in enumerate(source_ids):
            for j, system in enumerate(SYSTEMS):
                if j == 3 and i % 10 == 0:
                    continue  # cot_sc shares cot_bs's text on every tenth source
                words = " ".join(PLAIN[(i + k) % 8] for k in range(1 + j))
                text = (
                    f"There is a {words} in your {ORGANS[(i // 8) % 8]} ({i}). "
                    f"{'It looks harmless.' if j % 2 else 'Your doctor may want to check it again.'}"
                )
                text_rows.append((source_id, text, text_hash(text)))
                owners.append((i, system))
        text_ids = rows_insert(SimplificationText, columns=("source_id", "text", "text_hash"), rows=text_rows)
        text_of = dict(zip(owners, text_ids, strict=True))
        for i in range(0, n_sources, 10):
            text_of[(i, "cot_sc")] = text_of[(i, "cot_bs")]
        rows_insert(
            Simplification,
            columns=("source_id", "system_id", "shown_text_id"),
            rows=[
                (source_ids[i], system_id, text_of[(i, key)])
                for i in range(n_sources)
                for key, system_id in zip(SYSTEMS, system_ids, strict=True)
            ],
        )
        distinct = [
            [text_of[(i, s)] for s in SYSTEMS if not (s == "cot_sc" and i % 10 == 0)]
            for i in range(n_sources)
        ]

        # Participants through the ORM: each needs its own token (a default rows_insert gives once).
        radiologists = Participant.objects.bulk_create(
            [
                Participant(study=study, role="radiologist", pseudonym=f"R{r + 1:03d}")
                for r in range(n_radiologists)
            ]
        )
        text_source = [row[0] for row in text_rows]
        for radiologist in radiologists:
            scores = rng.integers(1, 6, (len(text_ids), 5))
            rows = [
                (radiologist.pk, instrument["expert"], aspect, source_id, text_id, "", int(v), float(v))
                for text_id, source_id, s in zip(text_ids, text_source, scores, strict=True)
                for aspect, v in zip(scales.EXPERT_ASPECTS, s, strict=True)
            ]
            for source_id in source_ids:
                severity = int(rng.integers(1, 6))
                simplicity = int(rng.integers(1, 6))
                rows.append(
                    (
                        radiologist.pk,
                        instrument["expert"],
                        "severity",
                        source_id,
                        None,
                        "",
                        severity,
                        float(severity),
                    )
                )
                key = "original_simplicity"
                rows.append(
                    (
                        radiologist.pk,
                        instrument["expert"],
                        key,
                        source_id,
                        None,
                        "",
                        simplicity,
                        float(simplicity),
                    )
                )
            rows_insert(ItemAnswer, columns=answer_columns, rows=rows)

        laypeople = Participant.objects.bulk_create(
            [
                Participant(study=study, role="layperson", pseudonym=f"L{p + 1:03d}", latin_square_row=p)
                for p in range(n_lay)
            ]
        )
        for p, person in enumerate(laypeople):
            rows_insert(
                LayItem,
                columns=("source_id", "position", "assigned_system_id", "shown_text_id", "preference_order"),
                rows=[
                    (
                        source_ids[i],
                        i,
                        system_ids[(p + i) % 4],
                        text_of[(i, SYSTEMS[(p + i) % 4])],
                        distinct[i],
                    )
                    for i in range(n_sources)
                ],
                fixed={"participant": person, "stage": "done"},
            )
            answers = rng.integers(0, 60, (n_sources, 8))
            rows = []
            for i in range(n_sources):
                shown = text_of[(i, SYSTEMS[(p + i) % 4])]
                given = (
                    ("original", None, "understanding", UNDERSTANDING[answers[i, 0] % 2]),
                    ("original", None, "confidence", CONFIDENCE[answers[i, 1] % 3]),
                    ("original", None, "severity_guess", SEVERITY[answers[i, 2] % 5]),
                    ("assisted", None, "understanding", UNDERSTANDING[1 + answers[i, 3] % 3]),
                    ("assisted", None, "confidence", CONFIDENCE[answers[i, 4] % 3]),
                    ("assisted", None, "severity_guess", SEVERITY[answers[i, 5] % 5]),
                    ("assisted", shown, "helpfulness", HELPFULNESS[answers[i, 6] % 4]),
                )
                for phase, text, key, level in given:
                    value = code[key][level]
                    rows.append(
                        (person.pk, instrument["lay"], key, source_ids[i], text, phase, value, float(value))
                    )
                most = str(distinct[i][answers[i, 7] % len(distinct[i])])
                rows.append(
                    (person.pk, instrument["lay"], "most", source_ids[i], None, "preference", [most], None)
                )
                least = str(distinct[i][0])
                rows.append(
                    (person.pk, instrument["lay"], "least", source_ids[i], None, "preference", [least], None)
                )
            rows_insert(ItemAnswer, columns=answer_columns, rows=rows)
    return study


def timed(label: str, function, timings: dict):
    """Run `function`, recording (wall seconds, CPU seconds of this process) under `label`: on a
    machine shared with other jobs the wall time grows with their load, the CPU time much less."""
    started, cpu = time.perf_counter(), time.process_time()
    result = function()
    timings[label] = (time.perf_counter() - started, time.process_time() - cpu)
    return result


def analysis_options(args):
    from evaluation.analysis import protocol

    defaults = protocol.AnalysisOptions()
    return protocol.AnalysisOptions(
        n_resamples=args.resamples or defaults.n_resamples,
        correlation_resamples=args.correlation_resamples or defaults.correlation_resamples,
        metric_families=None if args.metric_families == "all" else tuple(args.metric_families.split(",")),
        correlation_metrics=None
        if args.correlation_metrics == "all"
        else tuple(args.correlation_metrics.split(",")),
    )


def stage_timings(study, options) -> tuple[dict[str, tuple[float, float]], object]:
    """The analysis of `study`, stage by stage (the functions study_analysis calls, in its order):
    {stage: (wall seconds, CPU seconds)} and the frames."""
    from evaluation.analysis import protocol
    from evaluation.analysis.correlations import correlations
    from evaluation.analysis.intervals import (
        comparisons,
        confidence_intervals,
        measure_frames,
        system_intervals,
    )
    from evaluation.analysis.metric_tables import metric_tables, metrics_summary, readability_table
    from evaluation.analysis.study_frames import study_frames
    from evaluation.services import TextMetricsStore

    timings: dict[str, tuple[float, float]] = {}
    frames = timed("selectors: database → frames", lambda: study_frames(study=study), timings)
    metrics = timed(
        "automatic metrics of every text",
        lambda: metric_tables(frames, options, TextMetricsStore(study)),
        timings,
    )
    columns = timed("lay columns", lambda: protocol.lay_columns(frames), timings)
    timed(
        "Tables 1–3, distributions",
        lambda: (
            readability_table(metrics, frames),
            protocol.expert_table(frames),
            protocol.lay_table(frames, columns),
            protocol.confidence_vs_accuracy(frames),
            protocol.preference_wins(frames),
            protocol.distributions(frames, columns),
            metrics_summary(metrics, frames),
        ),
        timings,
    )
    timed("agreement (MASI α, ordinal α)", lambda: protocol.agreement(frames), timings)
    by_system = timed(
        "crossed intervals, means, differences",
        lambda: system_intervals(measure_frames(frames, columns), protocol.system_keys(frames), options),
        timings,
    )
    timed(
        "Table 1–2 intervals",
        lambda: confidence_intervals(frames, metrics, options, columns, by_system),
        timings,
    )
    timed("paired comparisons", lambda: comparisons(frames), timings)
    timed("correlations", lambda: correlations(frames, metrics, options), timings)
    return timings, frames


def frames_and_analysis(study, options) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for what the snapshot task does: read the
    frames, run study_analysis with the study's stored metrics (services.study_analysis_compute).
    On a machine shared with other jobs the wall time grows with their load and the CPU time
    much less: both are printed."""
    from evaluation.services import study_analysis_compute

    started, cpu = time.perf_counter(), time.process_time()
    study_analysis_compute(study=study, options=options)
    return time.perf_counter() - started, time.process_time() - cpu


def fresh_process(args, database: Path) -> dict:
    """frames_and_analysis in a new process on the same database (metrics stored, nothing in
    memory), with that process's peak RSS."""
    command = [sys.executable, __file__, "--database", str(database), "--fresh-process-run", "--keep-stored"]
    for option in ("resamples", "correlation_resamples"):
        if getattr(args, option):
            command += [f"--{option.replace('_', '-')}", str(getattr(args, option))]
    command += ["--metric-families", args.metric_families, "--correlation-metrics", args.correlation_metrics]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def stored_metrics_clear(study) -> int:
    from evaluation.models import SystemMetrics, TextMetrics

    deleted = TextMetrics.objects.filter(source__study=study).delete()[0]
    return deleted + SystemMetrics.objects.filter(system__study=study).delete()[0]


def print_stages(timings: dict[str, tuple[float, float]]) -> None:
    for label, (seconds, cpu) in timings.items():
        print(f"  {label:38} {seconds:8.2f} s  (CPU {cpu:6.2f} s)")
    wall, cpu = (sum(values) for values in zip(*timings.values(), strict=True))
    print(f"  {'sum of the stages':38} {wall:8.2f} s  (CPU {cpu:6.2f} s)")


def profile(study, options, top: int) -> None:
    """cProfile of one (warm) frames + analysis, the `top` functions by cumulative time."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(frames_and_analysis, study, options)
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sources", type=int, default=20000)
    parser.add_argument("--laypeople", type=int, default=20)
    parser.add_argument("--radiologists", type=int, default=2)
    parser.add_argument(
        "--resamples", type=int, default=None, help="bootstrap resamples per mean (default: the analysis's)"
    )
    parser.add_argument("--correlation-resamples", type=int, default=None)
    parser.add_argument(
        "--metric-families",
        default="all",
        help="comma-separated metric families ('all' = every registered one, the default of the analysis)",
    )
    parser.add_argument(
        "--correlation-metrics",
        default="all",
        help="comma-separated per-text metrics to correlate ('all' = every one computed, the default)",
    )
    parser.add_argument(
        "--release",
        nargs="?",
        const="default",
        help="analyse the authors' 2024 release instead (imported with import_release; default: "
        "RADLAY_RELEASE_DIR): cold, warm, and stage by stage",
    )
    parser.add_argument(
        "--database",
        help="SQLite file for the synthetic study: built there and kept when missing, reused when present "
        "(building 20 000 × 20 takes minutes); default: a throwaway file",
    )
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="also print cProfile's top N functions (warm)"
    )
    parser.add_argument(
        "--keep-stored",
        action="store_true",
        help="keep the study's stored automatic metrics (the cold run then reads them)",
    )
    parser.add_argument("--fresh-process-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        database = Path(args.database) if args.database else Path(tmp) / "bench.sqlite3"
        existing = database.exists()
        setup_django(database)
        if args.release:
            bench_release(args)
            return
        import numpy as np

        from annotation.models import Study
        from evaluation.analysis import protocol

        if args.fresh_process_run:
            wall, cpu = frames_and_analysis(Study.objects.get(slug="bench"), analysis_options(args))
            print(json.dumps({"wall": wall, "cpu": cpu, "peak_rss_mb": process_peak_rss_mb()}))
            return
        if existing:
            study = Study.objects.get(slug="bench")
            print(f"reusing the study in {database} ({study.title}); the size options are ignored")
        else:
            started = time.perf_counter()
            study = synthetic_study(
                n_sources=args.sources, n_lay=args.laypeople, n_radiologists=args.radiologists
            )
            print(
                f"built {args.sources} sources × {len(SYSTEMS)} systems, {args.laypeople} laypeople, "
                f"{args.radiologists} radiologists in {time.perf_counter() - started:.1f} s"
            )
        options = analysis_options(args)
        cleared = 0 if args.keep_stored else stored_metrics_clear(study)
        rss_before = peak_rss_mb()
        whole, whole_cpu = frames_and_analysis(study, options)
        rss_whole = peak_rss_mb()
        fresh = fresh_process(args, database)
        warm, warm_cpu = frames_and_analysis(study, options)
        timings, frames = stage_timings(study, options)

        def reference() -> None:
            lay = frames.lay_answers
            questions = ["understanding", "confidence", "helpfulness"]
            lay[lay["phase"] == "original"][questions].mean()
            assisted = lay[lay["phase"] == "assisted"].explode("systems")
            assisted.groupby("systems")[questions].mean()
            hit = (assisted["severity_guess"] == assisted["reference_severity"]).astype(np.float64)
            hit.groupby(assisted["systems"]).mean()
            frames.expert_ratings.groupby("system")[list(protocol.EXPERT_ASPECTS)].mean()

        started = time.perf_counter()
        reference()
        reference_seconds = time.perf_counter() - started

        ratings = frames.expert_ratings["rating_id"].nunique()
        print(
            f"{len(frames.lay_answers)} lay answers, {ratings} radiologist ratings, "
            f"{len(frames.lay_preferences)} preferences; options: {options.n_resamples} resamples per mean, "
            f"{options.correlation_resamples} per correlation, metric families: {args.metric_families}, "
            f"correlated metrics: {args.correlation_metrics}, no embedder"
        )
        print("stages (warm):")
        print_stages(timings)
        stored = "stored metrics kept" if args.keep_stored else f"{cleared} stored metric rows deleted first"
        ratio = {
            name: seconds / reference_seconds
            for name, seconds in (("cold", whole), ("fresh", fresh["wall"]), ("warm", warm))
        }
        print(
            f"frames + study_analysis (target ≤ 30 s and < 1 GB at 20 000 × 20):\n"
            f"  cold, first in the process, {stored}: "
            f"{whole:.2f} s, CPU {whole_cpu:.2f} s, peak RSS {rss_whole:.0f} MB "
            f"(after building the study: {rss_before:.0f} MB)\n"
            f"  fresh process, metrics stored: {fresh['wall']:.2f} s, CPU {fresh['cpu']:.2f} s, "
            f"peak RSS {fresh['peak_rss_mb']:.0f} MB\n"
            f"  warm, second in the first process: {warm:.2f} s, CPU {warm_cpu:.2f} s\n"
            f"reference (pandas groupby of Table 1's means on the same frames): {reference_seconds:.3f} s; "
            f"ratio cold {ratio['cold']:.0f}×, fresh process {ratio['fresh']:.0f}×, warm {ratio['warm']:.0f}×"
        )
        if args.profile:
            profile(study, options, args.profile)


def bench_release(args) -> None:
    """The release, default options (no embedder): frames + study_analysis cold (first call in
    the process) and warm (second call), then stage by stage, against the same pandas reference
    as the synthetic study."""
    import io

    import numpy as np
    from django.conf import settings
    from django.core.management import call_command

    from annotation.models import Study
    from evaluation.analysis import protocol

    directory = settings.RADLAY_RELEASE_DIR if args.release == "default" else Path(args.release)
    call_command("import_release", str(directory), "--study", "release", stdout=io.StringIO())
    study = Study.objects.get(slug="release")
    options = analysis_options(args)
    cold, cold_cpu = frames_and_analysis(study, options)
    warm, warm_cpu = frames_and_analysis(study, options)
    timings, frames = stage_timings(study, options)
    started = time.perf_counter()
    lay = frames.lay_answers
    lay.explode("systems").groupby("systems")[["understanding", "confidence", "helpfulness"]].mean()
    frames.expert_ratings.groupby("system")[list(protocol.EXPERT_ASPECTS)].mean()
    np.asarray(lay["understanding"]).mean()
    reference = time.perf_counter() - started
    print(
        f"release ({len(frames.sources)} sources, {len(lay)} lay answers), options: {options.n_resamples} "
        f"resamples per mean, {options.correlation_resamples} per correlation, metric families: "
        f"{args.metric_families}, correlated metrics: {args.correlation_metrics}, no embedder; stages (warm):"
    )
    print_stages(timings)
    print(
        f"frames + study_analysis cold {cold:.2f} s (CPU {cold_cpu:.2f} s), "
        f"warm {warm:.2f} s (CPU {warm_cpu:.2f} s; target ≤ 2 s warm); "
        f"reference (pandas means) {reference:.3f} s; ratio warm/reference {warm / reference:.0f}×; "
        f"peak RSS {peak_rss_mb():.0f} MB"
    )
    if args.profile:
        profile(study, options, args.profile)


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def process_peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM): Linux keeps ru_maxrss across the exec of a child, so a
    process started by a large one would report its parent's peak there."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return peak_rss_mb()


if __name__ == "__main__":
    main()
