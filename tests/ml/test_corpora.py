import json

import pytest

from ml.corpora import (
    CorpusFormatError,
    CorpusRecord,
    SimplificationPair,
    pairs_to_records,
    read_corpus,
    read_jsonl,
    read_medlane,
    records_to_pairs,
)

# The shape of MedLane's training split: source line, its simplifications, blank line.
MEDLANE_TRAIN = """\
in the icu initially he was hypertensive to sbp > 210 .
in the intensive care unit initially he was high blood pressure to systolic blood pressure > 210 .
in the intensive care unit initially you were high blood pressure to systolic blood pressure > 210 .

they were described as r arm and leg shaking .
they were described as right arm and leg shaking .
they were described as right arm and leg shaking .


2 days later pt was discharged .
2 days later patient was discharged .
"""

# The shape of its test split: numbered variants, glossed abbreviations, repeated variants.
MEDLANE_TEST = """\
pt was restarted on diuresis .
1 pt[patient] was restarted on medicine that makes body produce more pee .
1 pt[patient] was restarted on medicine that makes body produce more pee .
3 you were restarted on medicine that makes body produce more pee .

gi was called to perform egd in am .
1 gi[gastrointestinal] was called to perform egd[esophagogastroduodenoscopy] in am[before noon] .
2 digestive doctor was called to perform stomach scopy in am[before noon] .
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_medlane_training_split(tmp_path):
    records = read_medlane(write(tmp_path, "train.txt", MEDLANE_TRAIN))
    assert [r.line for r in records] == [1, 5, 10]
    assert records[0].targets == (
        MEDLANE_TRAIN.splitlines()[1],
        MEDLANE_TRAIN.splitlines()[2],
    )
    assert records[1].targets == (
        "they were described as right arm and leg shaking .",
    )  # duplicate kept once
    # Not every target line is numbered, so "2 days later" is text, not a variant number.
    assert records[2].source == "2 days later pt was discharged ."
    assert records[2].targets == ("2 days later patient was discharged .",)


def test_medlane_test_split_strips_variant_numbers_and_expands_glosses(tmp_path):
    path = write(tmp_path, "test.txt", MEDLANE_TEST)
    records = read_medlane(path)
    assert records[0] == CorpusRecord(
        "pt was restarted on diuresis .",
        (
            "patient was restarted on medicine that makes body produce more pee .",
            "you were restarted on medicine that makes body produce more pee .",
        ),
        line=1,
    )
    assert records[1].targets[0] == (
        "gastrointestinal was called to perform esophagogastroduodenoscopy in before noon ."
    )
    kept = read_medlane(path, glosses="keep")
    assert kept[1].targets[1] == "digestive doctor was called to perform stomach scopy in am[before noon] ."


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a source .\na target .\n\nlonely source .\n\nnext .\nnext simple .\n", 4, "no simplification"),
        ("a source .\n1 a[b c .\n", 2, "unbalanced"),
        ("\n\n   \n", None, "empty"),
    ],
)
def test_medlane_errors_name_the_line(tmp_path, text, line, message):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_medlane(path)
    assert error.value.line == line
    if line is not None:
        assert f"bad.txt:{line}:" in str(error.value)


def test_medlane_numbered_targets_can_be_required(tmp_path):
    path = write(tmp_path, "mixed.txt", "src .\n1 simple .\n\nsrc two .\nsimple two .\n")
    with pytest.raises(CorpusFormatError, match="numbered") as error:
        read_medlane(path, numbered_targets=True)
    assert error.value.line == 5


def test_medlane_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("src .\ntarget .\n\ncaf\xe9 .\nsimple .\n".encode("latin-1"))
    with pytest.raises(CorpusFormatError, match="UTF-8") as error:
        read_medlane(path)
    assert error.value.line == 4


def test_jsonl_reads_string_and_list_targets(tmp_path):
    lines = [
        json.dumps({"source": "No pneumothorax.", "target": "No collapsed lung.", "id": 7}),
        "",
        json.dumps(
            {
                "source": " Mild cardiomegaly. ",
                "target": ["The heart is a bit big.", "A slightly large heart."],
            }
        ),
    ]
    records = read_jsonl(write(tmp_path, "pairs.jsonl", "\n".join(lines) + "\n"))
    assert records[0] == CorpusRecord("No pneumothorax.", ("No collapsed lung.",), line=1)
    assert records[0].metadata == {"id": 7}
    assert records[1].source == "Mild cardiomegaly." and records[1].line == 3
    assert len(records[1].targets) == 2


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"source": "x", "target": ', "invalid JSON"),
        ('["source", "target"]', "JSON object"),
        ('{"source": "x"}', "missing key"),
        ('{"source": "", "target": "y"}', "'source'"),
        ('{"source": "x", "target": []}', "'target'"),
        ('{"source": "x", "target": 3}', "'target'"),
    ],
)
def test_jsonl_errors_name_the_line(tmp_path, bad_line, message):
    good = json.dumps({"source": "a", "target": "b"})
    path = write(tmp_path, "bad.jsonl", f"{good}\n{good}\n{bad_line}\n")
    with pytest.raises(CorpusFormatError, match=message) as error:
        read_jsonl(path)
    assert error.value.line == 3 and "bad.jsonl:3:" in str(error.value)


def test_read_corpus_dispatches_on_extension(tmp_path):
    assert read_corpus(write(tmp_path, "c.txt", MEDLANE_TRAIN))[0].line == 1
    assert read_corpus(write(tmp_path, "c.jsonl", '{"source": "a", "target": "b"}\n'))[0].targets == ("b",)
    with pytest.raises(CorpusFormatError, match="unknown corpus format"):
        read_corpus(write(tmp_path, "c.csv", "a,b\n"))
    with pytest.raises(CorpusFormatError, match="not found"):
        read_corpus(tmp_path / "missing.jsonl")


def test_records_and_pairs_round_trip():
    records = [CorpusRecord("s1", ("t1", "t2")), CorpusRecord("s2", ("t3",))]
    pairs = records_to_pairs(records)
    assert pairs == [
        SimplificationPair("s1", "t1"),
        SimplificationPair("s1", "t2"),
        SimplificationPair("s2", "t3"),
    ]
    assert records_to_pairs(records, targets="first") == [
        SimplificationPair("s1", "t1"),
        SimplificationPair("s2", "t3"),
    ]
    assert pairs_to_records([*pairs, ("s1", "t1")]) == records
