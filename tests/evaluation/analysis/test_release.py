"""The protocol's figures on the authors' release (seed 003), computed independently here with
pandas straight from the release's CSV files and compared with radlay's analysis of the imported
study. Nothing here calls radlay's analysis to build the expected values."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command
from django.db import transaction

from annotation.models import Study
from evaluation.analysis.protocol import AnalysisOptions
from evaluation.analysis.study import study_analysis
from evaluation.analysis.study_frames import study_frames

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import textstat

# django_db: pytest-django sets up the test database only for the aliases that the collected tests
# declare; without the mark, this module run alone would import into the configured database.
pytestmark = [pytest.mark.release, pytest.mark.django_db]

RELEASE_SYSTEMS = {"Plain_BS": "plain_bs", "Plain_SC": "plain_sc", "CoT_BS": "cot_bs", "CoT_SC": "cot_sc"}
LAY_VERSION = {"Dummy_BS": "Plain_BS", "Dummy_SC": "Plain_SC", "CoT_BS": "CoT_BS", "CoT_SC": "CoT_SC"}
RATING_COLUMNS = {
    "Plain_BS": "Plain_BS_Rating",
    "Plain_SC": "Plain_Rating",
    "CoT_BS": "CoT_BS_Rating",
    "CoT_SC": "CoT_SC_Rating",
}
Q1 = {"Not at all": 1, "Some parts of it": 2, "Most of it": 3, "Completely": 4}
Q2 = {"Not at all": 1, "With low confidence": 2, "With high confidence": 3}
Q3 = {"Critical": 1, "Serious": 2, "Moderate": 3, "Mild": 4, "Healthy": 5}
Q4 = {
    "It further confused me": -1,
    "It did not help": 0,
    "I understand slightly better": 1,
    "I understand much better": 2,
}
ASPECTS = ["correctness", "completeness", "hallucination", "structure", "simplicity"]


def _norm(text: str) -> str:
    return " ".join(str(text).split())


class Release:
    """The release read with pandas, with the protocol's figures computed the plain way."""

    def __init__(self, directory: Path):
        self.simplifications = pd.read_csv(
            directory / "Original_setences_with_generated_simplifications.csv", encoding="utf-8-sig"
        )
        self.severity = pd.read_csv(directory / "Severity_ratings_by_radiologist.csv")[
            "Severity Level"
        ].to_numpy()
        self.radiologist = pd.read_csv(directory / "Radiologist_human_evaluation_results.csv")
        self.lay = [pd.read_csv(directory / f"proc_laypeople{n}.csv") for n in range(1, 9)]
        # Systems that produced each text of a sentence (identical texts are shared).
        self.producers: list[dict[str, list[str]]] = []
        for _, row in self.simplifications.iterrows():
            producers: dict[str, list[str]] = {}
            for system in RELEASE_SYSTEMS:
                producers.setdefault(_norm(row[system]), []).append(system)
            self.producers.append(producers)

    def credited(self, i: int, versions: list[str]) -> list[str]:
        """Every system whose text is the text of `versions` on sentence i."""
        row = self.simplifications.iloc[i]
        systems: list[str] = []
        for version in versions:
            for system in self.producers[i][_norm(row[version])]:
                if system not in systems:
                    systems.append(system)
        return systems

    def lay_rows(self) -> pd.DataFrame:
        rows = []
        for person, frame in enumerate(self.lay):
            for i in range(len(frame)):
                cells = frame.iloc[i]
                versions = [LAY_VERSION[v.strip()] for v in cells.iloc[2].split(";")]
                rows.append(
                    {
                        "person": person,
                        "i": i,
                        "reference": self.severity[i],
                        "systems": self.credited(i, versions),
                        "q1_before": Q1[cells.iloc[3].strip()],
                        "q2_before": Q2[cells.iloc[4].strip()],
                        "q3_before": Q3[cells.iloc[6].strip()],
                        "q1_after": Q1[cells.iloc[7].strip()],
                        "q2_after": Q2[cells.iloc[8].strip()],
                        "q4": Q4[cells.iloc[10].strip()],
                        "q3_after": Q3[cells.iloc[11].strip()],
                        "most": cells.iloc[12],
                        "least": cells.iloc[14],
                    }
                )
        return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def release(release_dir) -> Release:
    return Release(release_dir)


@pytest.fixture(scope="module")
def analysis(release_dir, django_db_setup, django_db_blocker) -> dict:
    """Import the release into the test database, analyse it, and roll the import back."""
    options = AnalysisOptions(
        n_resamples=200,
        correlation_resamples=50,
        metric_families=("readability",),
        correlation_metrics=("fkgl",),
    )
    with django_db_blocker.unblock(), transaction.atomic():
        call_command("import_release", str(release_dir), "--study", "release-test", stdout=io.StringIO())
        result = study_analysis(study_frames(study=Study.objects.get(slug="release-test")), options=options)
        transaction.set_rollback(True)
    return result


def test_table1_radiologist_means(release, analysis):
    for system, column in RATING_COLUMNS.items():
        scores = np.array([[int(x) for x in cell.split(";")] for cell in release.radiologist[column]])
        expected = dict(zip(ASPECTS, scores.mean(axis=0), strict=True))
        got = analysis["expert"][RELEASE_SYSTEMS[system]]
        assert {a: got[a] for a in ASPECTS} == pytest.approx(expected), system
        assert got["n"] == len(scores)


def test_table1_lay_columns(release, analysis):
    rows = release.lay_rows()
    before = analysis["lay"]["original"]
    assert before["understanding"] == pytest.approx(rows["q1_before"].mean())
    assert before["confidence"] == pytest.approx(rows["q2_before"].mean())
    assert before["severity_mse"] == pytest.approx(((rows["q3_before"] - rows["reference"]) ** 2).mean())
    assert before["severity_accuracy"] == pytest.approx((rows["q3_before"] == rows["reference"]).mean())
    assert before["helpfulness"] is None
    assert before["n"] == 320
    per_system = rows.explode("systems")
    for system, key in RELEASE_SYSTEMS.items():
        mine = per_system[per_system["systems"] == system]
        got = analysis["lay"][key]
        assert got["n"] == len(mine)
        assert got["understanding"] == pytest.approx(mine["q1_after"].mean()), system
        assert got["confidence"] == pytest.approx(mine["q2_after"].mean()), system
        assert got["helpfulness"] == pytest.approx(mine["q4"].mean()), system
        assert got["severity_mse"] == pytest.approx(((mine["q3_after"] - mine["reference"]) ** 2).mean()), (
            system
        )
        assert got["severity_accuracy"] == pytest.approx((mine["q3_after"] == mine["reference"]).mean()), (
            system
        )
    # The four shared CoT texts make those columns larger than the 80 answers per system.
    assert analysis["lay"]["cot_bs"]["n"] == analysis["lay"]["cot_sc"]["n"] == 88


def test_table2_confidence_vs_accuracy(release, analysis):
    rows = release.lay_rows()
    pairs = pd.concat(
        [
            pd.DataFrame(
                {"confidence": rows["q2_before"], "guess": rows["q3_before"], "reference": rows["reference"]}
            ),
            pd.DataFrame(
                {"confidence": rows["q2_after"], "guess": rows["q3_after"], "reference": rows["reference"]}
            ),
        ]
    )
    names = {1: "Not at all", 2: "With low confidence", 3: "With high confidence"}
    for level, group in pairs.groupby("confidence"):
        got = analysis["confidence_vs_accuracy"][names[level]]
        assert got["n"] == len(group)
        assert got["mse"] == pytest.approx(((group["guess"] - group["reference"]) ** 2).mean())
        assert got["accuracy"] == pytest.approx((group["guess"] == group["reference"]).mean())
    assert sum(v["n"] for v in analysis["confidence_vs_accuracy"].values()) == 640


def test_table3_majority_votes(release, analysis):
    rows = release.lay_rows()
    for side in ("most", "least"):
        wins = dict.fromkeys(RELEASE_SYSTEMS, 0)
        for i, group in rows.groupby("i"):
            votes = dict.fromkeys(RELEASE_SYSTEMS, 0)
            for cell in group[side].dropna():
                chosen = release.credited(i, [LAY_VERSION[v.strip()] for v in cell.split(";") if v.strip()])
                for system in chosen:
                    votes[system] += 1
            top = max(votes.values())
            for system, n in votes.items():
                wins[system] += int(top > 0 and n == top)
        assert analysis["preferences"][side] == {RELEASE_SYSTEMS[s]: n for s, n in wins.items()}, side
    # The paper's Table 3 (these agree with the data).
    assert analysis["preferences"]["most"] == {"plain_bs": 2, "plain_sc": 7, "cot_bs": 15, "cot_sc": 27}
    assert analysis["preferences"]["least"] == {"plain_bs": 32, "plain_sc": 7, "cot_bs": 5, "cot_sc": 2}


def test_severity_distribution(release, analysis):
    counts = pd.Series(release.severity).value_counts()
    names = ["Critical", "Serious", "Moderate", "Mild", "Healthy"]
    assert analysis["severity_distribution"] == {
        name: int(counts.get(i + 1, 0)) for i, name in enumerate(names)
    }
    assert list(analysis["severity_distribution"].values()) == [4, 2, 7, 20, 7]


def test_fkgl_per_text_is_textstat_073(release, analysis):
    from importlib.metadata import version

    assert version("textstat") == "0.7.3"
    per_text = {(r["source"], r["system"]): r["fkgl"] for r in analysis["metrics"]["per_simplification"]}
    for i, row in release.simplifications.iterrows():
        for system, key in RELEASE_SYSTEMS.items():
            assert per_text[(f"s{i + 1:02d}", key)] == pytest.approx(
                textstat.flesch_kincaid_grade(row[system].strip())
            )
    original = np.mean(
        [textstat.flesch_kincaid_grade(t.strip()) for t in release.simplifications["Original Sentence"]]
    )
    assert analysis["readability"]["original"]["fkgl"] == pytest.approx(original)


def test_preference_alpha_masi_against_nltk(release, analysis):
    from nltk.metrics.agreement import AnnotationTask
    from nltk.metrics.distance import masi_distance

    rows = release.lay_rows()
    for side in ("most", "least"):
        triples = []
        for _, row in rows.iterrows():
            if isinstance(row[side], str) and row[side].strip():
                chosen = release.credited(
                    row["i"], [LAY_VERSION[v.strip()] for v in row[side].split(";") if v.strip()]
                )
                triples.append((row["person"], row["i"], frozenset(chosen)))
        expected = AnnotationTask(data=triples, distance=masi_distance).alpha()
        assert analysis["agreement"]["preference_alpha_masi"][side] == pytest.approx(expected)
