import gzip
import importlib.util
import json
import math
from pathlib import Path

import pytest

import lexicon

SCRIPT = Path(lexicon.__file__).resolve().parent / "data" / "build_common_words.py"


@pytest.fixture(scope="module")
def build_module():
    spec = importlib.util.spec_from_file_location("build_common_words", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(folder: Path, name: str, data) -> None:
    with gzip.open(folder / f"en_{name}.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(data, handle)


def test_build_ranks_lemmas_and_lists_forms(tmp_path, build_module, monkeypatch):
    probabilities = {
        "The": 0.3, "the": 0.2,  # folded together: 0.5; a stop word
        "lungs": 0.1, "lung": 0.05,  # -> lung 0.15
        "went": 0.1,  # irregular -> go
        "walked": 0.04,  # rule -> walk
        "Batman": 0.09, "batman": 0.001,  # mostly capitalised: a name
        "ca": 0.2,  # tokenizer artefact of "can't"
        "x": 0.2,  # one letter
        "3": 0.4,  # not a word
    }  # fmt: skip
    _write(tmp_path, "lexeme_prob", {token: math.log(p) for token, p in probabilities.items()})
    _write(tmp_path, "lemma_exc", {"verb": {"went": ["go"]}, "noun": {}, "adj": {}, "adv": {}})
    _write(
        tmp_path, "lemma_rules", {"noun": [["s", ""]], "verb": [["ed", ""], ["s", ""]], "adj": [], "adv": []}
    )
    _write(
        tmp_path,
        "lemma_index",
        {"noun": ["lung", "batman", "x", "ca"], "verb": ["go", "walk"], "adj": [], "adv": []},
    )
    monkeypatch.setattr(build_module, "LIST_SIZE", 3)
    common, forms = build_module.build(build_module.LookupTables(tmp_path))
    assert common == ["the", "lung", "go"]  # walk (0.04) is fourth
    assert forms == {"lungs": ["lung"], "went": ["go"]}

    build_module.write(common, forms, tmp_path)
    written = (tmp_path / "common_words_3000.txt").read_text(encoding="utf-8").splitlines()
    assert written[0].startswith("#") and [line for line in written if not line.startswith("#")] == common
    assert "lungs\tlung" in (tmp_path / "common_word_forms.txt").read_text(encoding="utf-8")
