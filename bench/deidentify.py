"""De-identification bench: recall and precision per identifier kind, and reports per second.

    .venv/bin/python bench/deidentify.py [--sentences 600] [--reports 150] [--seed 7] [--workers 2]

On a synthetic corpus with known spans (privacy/synthetic_reports.py: single sentences and whole
reports, every Safe Harbor kind, names from many cultures, dates in nine notations), it runs
radlay's detector (Presidio's analyzer with radlay's radiology recognizers) and, as the reference
in the same run, Presidio's predefined pattern recognizers alone on the same offline engine.

Recall of a kind: the share of its true spans wholly hidden by findings (of any kind: a date
hidden as an ID is still hidden). Precision: the share of findings that overlap a true span.
Medical words kept: the share of the words of the findings/impression sentences no finding
touches (a name recognizer that erases "Mass" fails here). Speed: whole reports per second, in
one process and in `--workers` processes.

Targets: recall >= 0.99 for MRN, phone, e-mail, SSN, date and accession; >= 0.95 for names;
precision >= 0.9; >= 50 reports/s on two cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from multiprocessing import Pool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from privacy.detection.engine import KIND_OF_ENTITY, detect  # noqa: E402
from privacy.detection.spans import KINDS, Span, merge_overlaps  # noqa: E402
from privacy.synthetic_reports import FINDINGS, IMPRESSIONS, Labelled, reports, sentences  # noqa: E402

STRUCTURED = ("MRN", "PHONE", "EMAIL", "SSN", "DATE", "ACCESSION")


def presidio_predefined() -> Callable[[str], list[Span]]:
    """The reference: Presidio's own pattern recognizers (phone, SSN, dates, IP, e-mail and URL
    without their network validation), on the same model-free engine."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        DateRecognizer,
        EmailRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UrlRecognizer,
        UsSsnRecognizer,
    )

    class OfflineEmail(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> None:
            return None

    class OfflineUrl(UrlRecognizer):
        def validate_result(self, pattern_text: str) -> None:
            return None

    registry = RecognizerRegistry(supported_languages=["en"])
    for recognizer in (
        PhoneRecognizer(supported_regions=("US", "GB")),
        UsSsnRecognizer(),
        DateRecognizer(),
        IpRecognizer(),
        OfflineEmail(),
        OfflineUrl(),
    ):
        registry.add_recognizer(recognizer)
    engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    engine.load()
    analyzer = AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])

    def run(text: str) -> list[Span]:
        found = analyzer.analyze(text=text, language="en", score_threshold=0.3)
        return merge_overlaps(
            Span(r.start, r.end, KIND_OF_ENTITY[r.entity_type], r.score)
            for r in found
            if r.entity_type in KIND_OF_ENTITY and r.end > r.start
        )

    return run


def score(corpus: Sequence[Labelled], predictions: Sequence[list[Span]]) -> dict:
    true_n: dict[str, int] = defaultdict(int)
    hidden: dict[str, int] = defaultdict(int)
    found_n: dict[str, int] = defaultdict(int)
    found_right: dict[str, int] = defaultdict(int)
    medical_words = medical_kept = 0
    medical = set(FINDINGS) | {"1. " + i for i in IMPRESSIONS}
    for item, spans in zip(corpus, predictions, strict=True):
        covered = bytearray(len(item.text))
        for s in spans:
            covered[s.start : s.end] = b"\x01" * (s.end - s.start)
        for start, end, kind in item.spans:
            true_n[kind] += 1
            hidden[kind] += all(covered[start:end])
        for s in spans:
            found_n[s.kind] += 1
            found_right[s.kind] += any(start < s.end and s.start < end for start, end, _ in item.spans)
        for sentence in medical:
            at = item.text.find(sentence)
            while at >= 0:
                for word_start in _word_starts(sentence):
                    medical_words += 1
                    medical_kept += not covered[at + word_start]
                at = item.text.find(sentence, at + 1)
    return {
        "recall": {k: (hidden[k] / true_n[k], true_n[k]) for k in KINDS if true_n[k]},
        "precision": {k: (found_right[k] / found_n[k], found_n[k]) for k in KINDS if found_n[k]},
        "precision_all": sum(found_right.values()) / max(1, sum(found_n.values())),
        "recall_all": sum(hidden.values()) / max(1, sum(true_n.values())),
        "medical_kept": medical_kept / max(1, medical_words),
    }


def _word_starts(sentence: str) -> list[int]:
    starts, previous = [], " "
    for i, ch in enumerate(sentence):
        if ch.isalpha() and not previous.isalnum():
            starts.append(i)
        previous = ch
    return starts


def _detect_texts(texts: list[str]) -> int:
    for text in texts:
        detect(text)
    return len(texts)


def speed(texts: list[str], workers: int) -> float:
    """Reports per second with `workers` processes (each warmed up first)."""
    if workers <= 1:
        detect(texts[0])
        start = time.perf_counter()
        _detect_texts(texts)
        return len(texts) / (time.perf_counter() - start)
    chunks = [texts[i::workers] for i in range(workers)]
    with Pool(workers) as pool:
        pool.map(_detect_texts, [[t[0]] for t in chunks])  # warm: build the analyzer in each
        start = time.perf_counter()
        pool.map(_detect_texts, chunks)
        return len(texts) / (time.perf_counter() - start)


def print_scores(title: str, scores: dict) -> None:
    print(f"\n{title}")
    print(f"  {'kind':<10} {'recall':>7} {'(n)':>6}   {'precision':>9} {'(n)':>6}")
    for kind in KINDS:
        recall = scores["recall"].get(kind)
        precision = scores["precision"].get(kind)
        r = f"{recall[0]:7.3f} {recall[1]:6d}" if recall else f"{'-':>7} {'':>6}"
        p = f"{precision[0]:9.3f} {precision[1]:6d}" if precision else f"{'-':>9} {'':>6}"
        print(f"  {kind:<10} {r}   {p}")
    print(f"  all        {scores['recall_all']:7.3f}          {scores['precision_all']:9.3f}")
    print(f"  medical words kept: {scores['medical_kept']:.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--reports", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    corpus_sentences = sentences(args.sentences, seed=args.seed)
    corpus_reports = reports(args.reports, seed=args.seed + 1)
    words = sum(len(r.text.split()) for r in corpus_reports) / len(corpus_reports)
    print(
        f"corpus: {len(corpus_sentences)} sentences, {len(corpus_reports)} reports "
        f"(mean {words:.0f} words), "
        f"{sum(len(x.spans) for x in corpus_sentences + corpus_reports)} identifiers"
    )
    reference = presidio_predefined()
    results = {}
    for name, run in (
        ("radlay (Presidio + radiology recognizers)", detect),
        ("Presidio predefined only", reference),
    ):
        for part, corpus in (("sentences", corpus_sentences), ("reports", corpus_reports)):
            results[(name, part)] = score(corpus, [run(x.text) for x in corpus])
            print_scores(f"{name} — {part}", results[(name, part)])

    texts = [r.text for r in corpus_reports]
    one = speed(texts, 1)
    many = speed(texts, args.workers)
    reference_speed = len(texts) / _timed(lambda: [reference(t) for t in texts])
    print(f"\nspeed: {one:.1f} reports/s in one process, {many:.1f} reports/s in {args.workers} processes")
    print(
        f"reference (Presidio predefined only, one process): {reference_speed:.1f} reports/s; "
        f"ratio radlay/reference {one / reference_speed:.2f}"
    )

    ours = results[("radlay (Presidio + radiology recognizers)", "reports")]
    ours_s = results[("radlay (Presidio + radiology recognizers)", "sentences")]
    checks = []
    for kind in STRUCTURED:
        for scores in (ours, ours_s):
            if kind in scores["recall"]:
                checks.append((f"recall {kind}", scores["recall"][kind][0], 0.99))
    checks.append(("recall NAME (reports)", ours["recall"]["NAME"][0], 0.95))
    checks.append(("recall NAME (sentences)", ours_s["recall"]["NAME"][0], 0.95))
    checks.append(("precision (reports)", ours["precision_all"], 0.9))
    checks.append(("precision (sentences)", ours_s["precision_all"], 0.9))
    checks.append((f"reports/s ({args.workers} processes)", many, 50.0))
    print("\ntargets:")
    failed = 0
    for label, value, target in checks:
        ok = value >= target
        failed += not ok
        print(f"  {'ok  ' if ok else 'MISS'} {label}: {value:.3f} (target >= {target})")
    return 1 if failed else 0


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


if __name__ == "__main__":
    raise SystemExit(main())
