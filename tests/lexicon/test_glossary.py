"""radlay's lay glossary and its term finder."""

import csv
import re

import pytest

from lexicon.common_words import is_known_to_laypeople
from lexicon.glossary import (
    CATEGORIES,
    GLOSSARY_PATH,
    explain_by_parts,
    find_terms,
    load_glossary,
    pluralize_phrase,
    read_glossary,
    regular_plural,
)


def _rows():
    with GLOSSARY_PATH.open(encoding="utf-8") as handle:
        lines = [line for line in handle if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE))


def test_glossary_has_at_least_300_entries_over_every_category():
    glossary = load_glossary()
    assert len(glossary) >= 300
    counts = {c: sum(e.category == c for e in glossary) for c in CATEGORIES}
    assert counts["anatomy"] >= 80 and counts["finding"] >= 80
    assert counts["modifier"] >= 40 and counts["abbreviation"] >= 20


def test_no_duplicate_terms_and_no_surface_form_claimed_twice():
    rows = _rows()
    terms = [r["term"].lower() for r in rows]
    assert len(terms) == len(set(terms)), sorted({t for t in terms if terms.count(t) > 1})
    owner: dict[str, str] = {}
    for entry in load_glossary():
        for form, _ in entry.surface_forms():
            key = form.lower().replace("-", " ")
            assert owner.setdefault(key, entry.term) == entry.term, (form, owner[key], entry.term)


def test_every_row_is_complete():
    for row in _rows():
        assert row["term"].strip() and row["plain"].strip(), row
        assert row["category"] in CATEGORIES, row
        assert set(row) == {"term", "plain", "category", "variants", "plain_plural", "paraphrases"}


def test_plain_renderings_are_written_in_common_words():
    # The Patient check trusts no rendering: each word of each one (glosses included) must be a common
    # English word or one of the curated lay words, or the glossary would translate jargon into jargon.
    unknown = {}
    for entry in load_glossary():
        renderings = [entry.plain] + ([entry.rendering(plural=True)] if entry.plural_forms else [])
        for rendering in renderings:
            for word in re.findall(r"[A-Za-z]+", rendering):
                if len(word) > 1 and not word.isupper() and not is_known_to_laypeople(word):
                    unknown.setdefault(word, entry.term)
    assert unknown == {}


def test_paraphrases_are_lay_words_not_jargon():
    # A paraphrase is what a lay rewrite may say instead of the plain rendering; HIT and SCGR accept
    # it, so it must not itself be jargon the glossary would translate.
    glossary = load_glossary()
    jargon_in_paraphrases = {
        (entry.term, paraphrase, match.term)
        for entry in glossary
        for paraphrase in entry.paraphrases
        for match in glossary.find_terms(paraphrase)
        if match.is_jargon
    }
    assert jargon_in_paraphrases == set()
    assert any(entry.paraphrases for entry in glossary)


def _terms(text):
    return [(m.term, m.surface, m.plural) for m in find_terms(text)]


def test_plural_and_irregular_plural_forms_map_to_the_singular_term():
    matches = find_terms("Few hypodensities and two renal calculi; granulomata and diverticula.")
    assert [(m.term, m.plural) for m in matches] == [
        ("hypodensity", True),
        ("renal calculus", True),
        ("granuloma", True),
        ("diverticulum", True),
    ]
    assert matches[0].plain == "darker areas"
    assert matches[1].plain == "kidney stones"


def test_hyphen_and_space_spellings_match_the_same_term():
    assert _terms("hyper-enhancing")[0][0] == "hyperenhancing"
    # A space is not a spelling of a joined prefix: only "enhancing" is a term there.
    assert [m.term for m in find_terms("hyper enhancing")] == ["enhancing"]
    assert _terms("ground glass opacity")[0][0] == "ground-glass opacity"
    assert _terms("groundglass opacities")[0][:1] == ("ground-glass opacity",)
    assert _terms("extra-hepatic")[0][0] == "extrahepatic"
    assert _terms("non-obstructing")[0][0] == "nonobstructing"


def test_longest_match_wins_and_matches_never_overlap():
    text = "Small calcified granulomata in the left hepatic lobe and hepatic segment VI; left renal calculi."
    matches = find_terms(text)
    assert [m.term for m in matches] == [
        "small",
        "calcified",
        "granuloma",
        "left hepatic lobe",
        "hepatic segment VI",
        "renal calculus",
    ]
    for a, b in zip(matches, matches[1:], strict=False):
        assert a.end <= b.start
    for m in matches:
        assert text[m.start : m.end] == m.surface


def test_global_longest_first_beats_leftmost_shorter_overlap():
    # "pancreatic duct" (15 chars) starts first, "main pancreatic duct" is longer and wins.
    assert _terms("the main pancreatic duct")[0][0] == "main pancreatic duct"
    assert [m.term for m in find_terms("pancreatic duct dilatation")] == ["pancreatic duct", "dilatation"]


def test_word_boundaries_and_roman_numerals():
    assert _terms("Liverpool lobectomy colonic") == [("colonic", "colonic", False)]
    assert [m.term for m in find_terms("segment II")] == ["segment II"]
    assert [m.term for m in find_terms("segment I.")] == ["segment I"]
    assert [m.term for m in find_terms("segment VIII")] == ["segment VIII"]


def test_case_insensitive_except_upper_case_abbreviations():
    assert _terms("DIFFUSE HEPATIC STEATOSIS")[0][0] == "diffuse"
    assert _terms("DIFFUSE HEPATIC STEATOSIS")[1][0] == "hepatic steatosis"
    assert _terms("Please send us the results") == []
    assert [m.term for m in find_terms("US of the abdomen")] == ["US", "abdomen"]
    assert [m.term for m in find_terms("opacity in the LLL")] == ["opacity", "LLL"]
    assert _terms("lll") == []


def test_plain_rendering_follows_number_and_explicit_plain_plural():
    glossary = load_glossary()
    hernia = glossary.get("hernia")
    assert hernia.rendering() == "hernia (a bulge through a weak spot)"
    assert hernia.rendering(plural=True) == "hernias (bulges through weak spots)"
    assert glossary.get("lesion").rendering(plural=True) == "abnormal areas"
    assert glossary.get("Secretions").term == "secretions"
    assert glossary.get("no such term") is None


def test_regular_plural_rules():
    assert [regular_plural(w) for w in ("lesion", "artery", "mass", "abscess", "day", "branch")] == [
        "lesions",
        "arteries",
        "masses",
        "abscesses",
        "days",
        "branches",
    ]
    assert pluralize_phrase("CT scan (detailed pictures)") == "CT scans (detailed pictures)"


def test_read_glossary_rejects_unknown_category(tmp_path):
    path = tmp_path / "g.tsv"
    path.write_text("term\tplain\tcategory\tvariants\tplain_plural\nfoo\tbar\tnonsense\t\t\n")
    with pytest.raises(ValueError, match="unknown category"):
        read_glossary(path)


def test_explain_by_parts():
    assert explain_by_parts("splenomegaly") == "spleen + enlargement"
    assert explain_by_parts("cholelithiasis") == "bile + stone + condition"
    assert explain_by_parts("gastroenteritis") == "stomach + intestine + inflammation"
    assert explain_by_parts("parenchyma") is None
    assert explain_by_parts("window") is None


def test_jargon_forms_leave_out_spellings_that_are_lay_renderings():
    glossary = load_glossary()
    # "pelvis" is listed as a spelling of "pelvic" and is its plain rendering.
    assert glossary.get("pelvic").jargon_forms() == ("pelvic",)
    # "hernias (bulges through weak spots)" is the term explained: "hernias" stays jargon.
    assert glossary.get("hernia").jargon_forms() == ("hernia", "hernias")
    assert glossary.get("CT scan").jargon_forms() == (
        "CT scan",
        "computed tomography",
        "CT scans",
        "computed tomographies",
    )


def test_jargon_occurrences_find_every_spelling_inside_longer_terms_too():
    glossary = load_glossary()
    ct = glossary.get("CT")
    text = "A CT scan, then CT again; CTA is another word and 'ct' is lower case."
    assert [text[a:b] for a, b in glossary.jargon_occurrences(ct, text)] == ["CT", "CT"]
    assert [m.term for m in glossary.find_terms("A CT scan.")] == ["CT scan"]  # find_terms: the longest
    hernia = glossary.get("hernia")
    assert glossary.jargon_occurrences(hernia, "Two Hernias and a hernia.") == [(4, 11), (18, 24)]
    assert glossary.jargon_occurrences(glossary.get("pelvic"), "The pelvis.") == []
