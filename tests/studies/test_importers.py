"""Importers: the study file (wide/long CSV, JSONL), the 2024 release, study_stats and invite."""

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import (
    LayItem,
    Participant,
    Simplification,
    Source,
    Study,
)
from tests.annotation import answers

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "studies" / "examples" / "example_study.csv"


def stats(slug: str) -> dict:
    out = StringIO()
    call_command("study_stats", "--study", slug, stdout=out)
    return json.loads(out.getvalue())


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- study files ----------------------------------------------------------------------------


def test_wide_csv_import_and_reimport_updates(tmp_path):
    path = write(
        tmp_path,
        "wide.csv",
        "source_key,source_text,reference_severity,plain,cot\n"
        "a,Mild hepatic steatosis.,Mild,Some fat in the liver.,The liver has a little fat.\n"
        "b,No acute fracture.,healthy,No broken bone.,No broken bone.\n",
    )
    call_command("import_study", str(path), "--study", "wide", "--title", "Wide", stdout=StringIO())
    counts = stats("wide")
    assert (counts["sources"], counts["systems"], counts["simplifications"], counts["distinct_texts"]) == (
        2,
        2,
        4,
        3,
    )
    assert Source.objects.get(key="b").reference_severity == "Healthy"
    write(
        tmp_path,
        "wide.csv",
        "source_key,source_text,reference_severity,plain,cot\n"
        "a,Mild hepatic steatosis.,Mild,A little fat in the liver.,The liver has a little fat.\n"
        "c,Small left pleural effusion.,Moderate,A little fluid by the left lung.,"
        "Fluid near the left lung.\n",
    )
    call_command("import_study", str(path), "--study", "wide", stdout=StringIO())
    counts = stats("wide")
    assert (counts["sources"], counts["simplifications"]) == (3, 6)
    assert (
        Simplification.objects.get(source__key="a", system__key="plain").text == "A little fat in the liver."
    )
    assert Study.objects.get(slug="wide").title == "Wide"


def test_long_csv_and_jsonl_imports(tmp_path):
    long_csv = write(
        tmp_path,
        "long.csv",
        "source_key,source_text,system,text\n"
        "a,Mild hepatic steatosis.,plain,Some fat in the liver.\n"
        "a,Mild hepatic steatosis.,human,A bit of fat in the liver.\n",
    )
    call_command("import_study", str(long_csv), "--study", "long", stdout=StringIO())
    assert stats("long")["simplifications"] == 2
    jsonl = write(
        tmp_path,
        "records.jsonl",
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "source_key": "a",
                    "source_text": "Mild hepatic steatosis.",
                    "system": "plain",
                    "text": "Fat in the liver.",
                    "reference_severity": "Mild",
                },
                {
                    "source_key": "b",
                    "source_text": "No acute fracture.",
                    "system": "plain",
                    "text": "No broken bone.",
                },
            ]
        ),
    )
    call_command("import_study", str(jsonl), "--study", "jsonl", stdout=StringIO())
    assert stats("jsonl")["simplifications"] == 2


def test_sources_only_file(tmp_path):
    path = write(tmp_path, "sources.csv", "source_key,source_text\na,Mild hepatic steatosis.\n")
    call_command("import_study", str(path), "--study", "gen-later", stdout=StringIO())
    counts = stats("gen-later")
    assert (counts["sources"], counts["systems"], counts["simplifications"]) == (1, 0, 0)


def test_example_file_in_repo_imports():
    call_command("import_study", str(EXAMPLE), "--study", "example", stdout=StringIO())
    counts = stats("example")
    assert counts["sources"] >= 3 and counts["systems"] >= 2


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("missing.csv", "source_key,plain\na,x\n", "missing required column 'source_text'"),
        ("dup.csv", "source_key,source_text,plain\na,x,y\na,z,w\n", "row 3, column 'source_key'"),
        ("cells.csv", "source_key,source_text,plain\na,x\n", "row 2: 2 cells"),
        (
            "sev.csv",
            "source_key,source_text,reference_severity\na,x,Deadly\n",
            "row 2, column 'reference_severity'",
        ),
        ("emptytext.csv", "source_key,source_text\na,\n", "row 2, column 'source_text'"),
        ("badsys.csv", "source_key,source_text,Plain BS\na,x,y\n", "column 'Plain BS'"),
        (
            "conflict.csv",
            "source_key,source_text,system,text\na,x,p,1\na,y,q,2\n",
            "row 3, column 'source_text'",
        ),
        ("twice.csv", "source_key,source_text,system,text\na,x,p,1\na,x,p,2\n", "row 3, column 'system'"),
        ("bad.jsonl", '{"source_key": "a", "source_text": "x"}\n{oops\n', "bad.jsonl, row 2"),
        ("bad.txt", "hello", "unknown format"),
    ],
)
def test_malformed_study_files_are_refused_and_write_nothing(tmp_path, name, content, expected):
    path = write(tmp_path, name, content)
    with pytest.raises(CommandError) as excinfo:
        call_command("import_study", str(path), "--study", "broken", stdout=StringIO())
    assert expected in str(excinfo.value)
    assert "Nothing was imported" in str(excinfo.value)
    assert not Source.objects.exists()


@pytest.mark.parametrize("copy", [True, False], ids=["copy", "bulk_create"])
def test_study_file_failure_midway_rolls_back(tmp_path, monkeypatch, copy):
    """A database error after the last write leaves nothing behind (all-or-nothing), not even the
    study row, whether the rows went through COPY or bulk_create."""
    from django.db import IntegrityError, connection

    from annotation import bulk_insert
    from studies.importers import write as writer

    if copy and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    path = write(tmp_path, "ok.csv", "source_key,source_text,plain\na,x,y\nb,z,w\n")
    real_insert = writer.rows_insert

    def failing(model, **kwargs):
        ids = real_insert(model, **kwargs)
        if model is Simplification:
            assert Simplification.objects.count() == 2  # written, and then undone
            raise IntegrityError("simulated failure")
        return ids

    monkeypatch.setattr(bulk_insert, "copy_available", lambda: copy)
    monkeypatch.setattr(writer, "rows_insert", failing)
    with pytest.raises(IntegrityError):
        call_command("import_study", str(path), "--study", "atomic", "--title", "New", stdout=StringIO())
    assert not Study.objects.exists()
    assert not Source.objects.exists()
    assert not Simplification.objects.exists()


LONG_CELL = "x" * 131_073


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        (
            "nul.csv",
            "source_key,source_text,plain\na,x\x00y,z\n",
            "row 2, column 'source_text': contains a NUL",
        ),
        ("nul.jsonl", '{"source_key": "a", "source_text": "x\\u0000y"}\n', "row 1, column 'source_text'"),
        ("huge.csv", f"source_key,source_text\na,x\nb,{LONG_CELL}\n", "row 3: a cell is longer than 131,072"),
        (
            "huge.jsonl",
            json.dumps({"source_key": "a", "source_text": LONG_CELL}),
            "row 1, column 'source_text'",
        ),
        (
            "longkey.csv",
            f"source_key,source_text\n{'k' * 101},x\n",
            "row 2, column 'source_key': source_key is 101",
        ),
        (
            "object.jsonl",
            json.dumps({"source_key": "a", "source_text": "x", "system": "p", "text": {"a": 1}}),
            "row 1, column 'text': 'text' must be text, not an object",
        ),
        ("list.jsonl", json.dumps({"source_key": ["a"], "source_text": "x"}), "column 'source_key'"),
        ("latin1.csv", None, "not UTF-8"),
    ],
)
def test_bad_cells_are_refused_with_row_and_column(tmp_path, name, content, expected):
    path = tmp_path / name
    if content is None:
        path.write_bytes("source_key,source_text\na,caf\u00e9\n".encode("latin-1"))
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as excinfo:
        call_command("import_study", str(path), "--study", "broken", stdout=StringIO())
    assert expected in str(excinfo.value)
    assert "Nothing was imported" in str(excinfo.value)
    assert not Study.objects.exists()
    assert not Source.objects.exists()


@pytest.mark.parametrize("slug", ["bad slug!", "", "../../etc", "<script>", "s" * 100, "a/b"])
def test_invalid_study_slugs_are_refused(tmp_path, slug):
    path = write(tmp_path, "ok.csv", "source_key,source_text\na,x\n")
    with pytest.raises(CommandError) as excinfo:
        call_command("import_study", str(path), "--study", slug, stdout=StringIO())
    assert "--study" in str(excinfo.value)
    assert "Nothing was imported" in str(excinfo.value)
    assert not Study.objects.exists()


def test_failed_reimport_renames_nothing(tmp_path):
    good = write(tmp_path, "good.csv", "source_key,source_text,plain\na,x,y\n")
    call_command("import_study", str(good), "--study", "kept", "--title", "Old title", stdout=StringIO())
    bad = write(tmp_path, "bad.csv", "source_key,source_text,plain\nb,z,w\nc,,v\n")
    with pytest.raises(CommandError):
        call_command("import_study", str(bad), "--study", "kept", "--title", "New title", stdout=StringIO())
    study = Study.objects.get(slug="kept")
    assert study.title == "Old title"
    assert list(study.sources.values_list("key", flat=True)) == ["a"]


def test_import_in_batches_matches_the_file(tmp_path, monkeypatch):
    """More rows than one write batch, a source repeated across batches (long format), a text two
    systems share, and a re-import that changes one text: counted against the file itself."""
    from annotation.models import SimplificationText
    from studies.importers import write as writer

    monkeypatch.setattr(writer, "BATCH", 7)
    lines = ["source_key,source_text,system,text,reference_severity"]
    for i in range(30):
        lines.append(f"s{i},Finding {i}.,plain,Plain {i}.,")
        lines.append(f"s{i},Finding {i}.,cot,{'Plain' if i % 3 == 0 else 'Cot'} {i}.,")
    lines.append("s0,Finding 0.,human,Human 0.,Mild")  # s0 again, in a later batch
    path = write(tmp_path, "long.csv", "\n".join(lines) + "\n")
    call_command("import_study", str(path), "--study", "batched", stdout=StringIO())
    study = Study.objects.get(slug="batched")
    assert list(study.sources.order_by("position").values_list("key", flat=True)) == [
        f"s{i}" for i in range(30)
    ]
    assert study.sources.get(key="s0").reference_severity == "Mild"
    assert Simplification.objects.filter(source__study=study).count() == 61
    assert SimplificationText.objects.filter(source__study=study).count() == 61 - 10
    lines[2] = "s0,Finding 0.,cot,A new text.,"
    write(tmp_path, "long.csv", "\n".join(lines) + "\n")
    call_command("import_study", str(path), "--study", "batched", stdout=StringIO())
    assert Simplification.objects.get(source__key="s0", system__key="cot").text == "A new text."
    assert SimplificationText.objects.filter(source__study=study).count() == 61 - 10 + 1
    assert study.sources.count() == 30


# --- the 2024 release ------------------------------------------------------------------------


EXPECTED_RELEASE = {
    "sources": 40,
    "systems": 4,
    "simplifications": 160,
    "distinct_texts": 156,
    "participants": {"radiologist": 1, "layperson": 8},
    "expert_ratings": 160,
    "expert_source_judgements": 40,
    "lay_items": 320,
    "lay_answers": {"original": 320, "assisted": 320},
}


@pytest.mark.release
def test_release_import_counts_and_idempotency(release_dir):
    call_command("import_release", str(release_dir), "--study", "release", stdout=StringIO())
    counts = stats("release")
    for key, value in EXPECTED_RELEASE.items():
        assert counts[key] == value, key
    call_command("import_release", str(release_dir), "--study", "release", stdout=StringIO())
    again = stats("release")
    assert again == counts
    assert [s.key for s in Study.objects.get(slug="release").systems.all()] == [
        "plain_bs",
        "plain_sc",
        "cot_bs",
        "cot_sc",
    ]


@pytest.mark.release
def test_release_content_matches_the_csvs(release_dir):
    """Spot checks against the CSV files read independently with the csv module."""
    import csv

    call_command("import_release", str(release_dir), "--study", "release", stdout=StringIO())
    with open(
        release_dir / "Radiologist_human_evaluation_results.csv", encoding="utf-8-sig", newline=""
    ) as f:
        rows = list(csv.reader(f))[1:]
    first = rows[0]
    text = Simplification.objects.get(
        source__study__slug="release", source__key="s01", system__key="plain_bs"
    ).shown_text_id
    (rating,) = [
        r for r in answers.ratings(study=Study.objects.get(slug="release")) if r.shown_text_id == text
    ]
    assert [
        rating.correctness,
        rating.completeness,
        rating.hallucination,
        rating.structure,
        rating.simplicity,
    ] == [int(x) for x in first[2].split(";")]
    with open(release_dir / "Severity_ratings_by_radiologist.csv", encoding="utf-8-sig", newline="") as f:
        severities = [int(r[1]) for r in list(csv.reader(f))[1:]]
    names = ["Critical", "Serious", "Moderate", "Mild", "Healthy"]
    assert [s.reference_severity for s in Source.objects.filter(study__slug="release")] == [
        names[v - 1] for v in severities
    ]
    # Shared CoT text: the laypeople who saw "CoT_BS;CoT_SC" are credited to one text row.
    shared_items = LayItem.objects.filter(participant__study__slug="release", source__key="s07")
    texts = {i.shown_text_id for i in shared_items if i.shown_text.simplifications.count() == 2}
    assert len(texts) == 1
    # Missing answers stay missing (one Stage-1 urgency cell is empty in the release).
    release = Study.objects.get(slug="release")
    assert sum(1 for a in answers.lay_answers(study=release) if a.urgency_confidence == "") == 2
    with open(release_dir / "proc_laypeople1.csv", encoding="utf-8-sig", newline="") as f:
        lay1 = list(csv.DictReader(f))
    item = LayItem.objects.get(participant__pseudonym="L001", source__key="s01")
    panel1 = answers.lay_answer(item, "original")
    assert panel1.understanding == lay1[0]["Stage1: You understand the meaning of the sentence."]
    least = answers.preference(item).least
    assert sorted(
        Simplification.objects.filter(shown_text_id__in=least).values_list("system__key", flat=True)
    ) == ["plain_bs"]


def copy_release(release_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "release"
    target.mkdir()
    for path in release_dir.glob("*.csv"):
        shutil.copy(path, target / path.name)
    return target


def edit_csv(path: Path, old: str, new: str, count: int = 1) -> None:
    data = path.read_bytes().decode("utf-8")
    assert old in data, old
    path.write_bytes(data.replace(old, new, count).encode("utf-8"))


@pytest.mark.release
@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        (
            "Radiologist_human_evaluation_results.csv",
            "2;2;2;3;1",
            "9;5;5;5;5",
            "Radiologist_human_evaluation_results.csv, row 2, column 'Plain_BS_Rating': rating '9;5;5;5;5'",
        ),
        ("Radiologist_human_evaluation_results.csv", "2;2;2;3;1", "2;2;2;3", "column 'Plain_BS_Rating'"),
        ("proc_laypeople1.csv", ",Dummy_BS,", ",Dummy_XX,", "proc_laypeople1.csv, row 2, column 'Version'"),
        (
            "proc_laypeople2.csv",
            "Stage2: Has the simplified",
            "Stage2: Did the simplified",
            "proc_laypeople2.csv, row 1",
        ),
        ("proc_laypeople3.csv", "Some parts of it", "Some of it", "proc_laypeople3.csv, row"),
        (
            "Severity_ratings_by_radiologist.csv",
            "lesions.,2",
            "lesions.,7",
            "Severity_ratings_by_radiologist.csv, row 2, column 'Severity Level'",
        ),
    ],
)
def test_malformed_release_is_refused_and_database_untouched(release_dir, tmp_path, file, old, new, expected):
    broken = copy_release(release_dir, tmp_path)
    edit_csv(broken / file, old, new)
    with pytest.raises(CommandError) as excinfo:
        call_command("import_release", str(broken), "--study", "release", stdout=StringIO())
    assert expected in str(excinfo.value)
    assert not Study.objects.exists()
    assert not Participant.objects.exists()


@pytest.mark.release
def test_release_with_a_missing_file_is_refused(release_dir, tmp_path):
    broken = copy_release(release_dir, tmp_path)
    (broken / "proc_laypeople8.csv").unlink()
    with pytest.raises(CommandError, match="proc_laypeople8.csv: file not found"):
        call_command("import_release", str(broken), "--study", "release", stdout=StringIO())
    assert not Source.objects.exists()


@pytest.mark.release
def test_release_with_a_missing_column_is_refused(release_dir, tmp_path):
    broken = copy_release(release_dir, tmp_path)
    path = broken / "Severity_ratings_by_radiologist.csv"
    edit_csv(path, "Original Sentence,Severity Level", "Original Sentence")
    with pytest.raises(CommandError, match="missing column 'Severity Level'"):
        call_command("import_release", str(broken), "--study", "release", stdout=StringIO())
    assert not Source.objects.exists()


# --- invite and study_stats -----------------------------------------------------------------------


def test_invite_prints_links_and_creates_participants(tmp_path):
    from tests.annotation.factories import build_study

    build_study(slug="inv", n_sources=1)
    out = StringIO()
    call_command(
        "invite",
        "--study",
        "inv",
        "--role",
        "layperson",
        "--count",
        "3",
        "--base-url",
        "https://radlay.example.org/",
        stdout=out,
    )
    links = out.getvalue().split()
    assert len(links) == 3
    tokens = set(
        Participant.objects.filter(study__slug="inv", role="layperson").values_list("token", flat=True)
    )
    assert {link.rstrip("/").rsplit("/", 1)[1] for link in links} == tokens
    assert all(link.startswith("https://radlay.example.org/s/") for link in links)


def test_invite_and_stats_refuse_unknown_study():
    with pytest.raises(CommandError, match="No study"):
        call_command("invite", "--study", "nope", "--role", "radiologist", stdout=StringIO())
    with pytest.raises(CommandError, match="No study"):
        call_command("study_stats", "--study", "nope", stdout=StringIO())
    with pytest.raises(CommandError):
        call_command("invite", "--study", "nope", "--role", "doctor", stdout=StringIO())
