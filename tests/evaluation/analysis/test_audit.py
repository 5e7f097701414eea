"""The reproducibility audit: rounding-aware comparison of reported and computed figures."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from evaluation.analysis import audit as audit_module
from evaluation.analysis.audit import (
    AGREES,
    DIFFERS,
    NOT_COMPUTED,
    ReportedFileError,
    audit,
    load_reported,
    parse_reported,
)
from tests.annotation.factories import build_study


@pytest.mark.parametrize(
    ("printed", "value", "tolerance"),
    [
        ("4.725", 4.725, 0.0005),
        ("38.4%", 0.384, 0.0005),
        ("27", 27.0, 0.5),
        ("0.93", 0.93, 0.005),
        ("12.3%", 0.123, 0.0005),
        ("-0.5", -0.5, 0.05),
        (1.5, 1.5, 0.05),
    ],
)
def test_parse_reported_reads_the_rounding_from_the_printed_digits(printed, value, tolerance):
    parsed_value, parsed_tolerance = parse_reported(printed)
    assert parsed_value == pytest.approx(value)
    assert parsed_tolerance == pytest.approx(tolerance)


def test_not_applicable_and_garbage():
    assert parse_reported("N/A") == (None, None)
    with pytest.raises(ReportedFileError):
        parse_reported("about 4")


def test_audit_statuses_at_the_rounding_boundary():
    analysis = {
        "lay": {"a": {"acc": 0.3875, "mse": 1.6504}},
        "expert": {"a": {"c": 4.7246}},
        "n": {"x": None},
    }
    reported = {
        "figures": [
            {"id": "acc", "path": "lay.a.acc", "reported": "38.8%"},  # |0.3875 - 0.388| = 0.0005: agrees
            {"id": "acc2", "path": "lay.a.acc", "reported": "38.7%"},  # 0.0005 too: agrees (printed rounding)
            {"id": "acc3", "path": "lay.a.acc", "reported": "38.6%"},  # 0.0015: differs
            {"id": "mse", "path": ["lay", "a", "mse"], "reported": "1.650"},  # 0.0004: agrees
            {"id": "c", "path": "expert.a.c", "reported": "4.725"},  # 0.0004: agrees
            {"id": "c2", "path": "expert.a.c", "reported": "4.72"},  # 0.0046 < 0.005: agrees
            {"id": "c3", "path": "expert.a.c", "reported": "4.72", "tolerance": 0.001},  # explicit: differs
            {"id": "missing", "path": "expert.b.c", "reported": "5.000"},
            {"id": "none", "path": "n.x", "reported": "3"},
        ]
    }
    result = audit(analysis, reported)
    status = {row["id"]: row["status"] for row in result["rows"]}
    assert status == {
        "acc": AGREES,
        "acc2": AGREES,
        "acc3": DIFFERS,
        "mse": AGREES,
        "c": AGREES,
        "c2": AGREES,
        "c3": DIFFERS,
        "missing": NOT_COMPUTED,
        "none": NOT_COMPUTED,
    }
    row = next(r for r in result["rows"] if r["id"] == "acc3")
    assert row["difference"] == pytest.approx(0.3875 - 0.386)
    assert result["summary"] == {AGREES: 5, DIFFERS: 2, NOT_COMPUTED: 2, "not_computed": 2, "total": 9}


def test_load_reported_rejects_duplicates(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "figures": [
                    {"id": "a", "path": "x", "reported": "1"},
                    {"id": "a", "path": "y", "reported": "2"},
                ]
            }
        )
    )
    with pytest.raises(ReportedFileError, match="twice"):
        load_reported(path)


def test_seed003_file_transcribes_the_paper():
    reported = load_reported(audit_module.reported_files()["seed003"])
    figures = {f["id"]: f for f in reported["figures"]}
    # Spot checks against the paper (seed 003 Table 1, 2, 3 and section 6.4).
    assert figures["table1.correctness.plain_bs"]["reported"] == "4.725"
    assert figures["table1.severity_accuracy.original"]["reported"] == "38.4%"
    assert figures["table1.severity_mse.cot_sc"]["reported"] == "1.068"
    assert figures["table2.accuracy.with_high_confidence"]["reported"] == "55.5%"
    assert figures["table3.most.cot_sc"]["reported"] == "27"
    assert figures["agreement.alpha_masi.least"]["reported"] == "0.132"
    # 13 rows × 5 columns of Table 1 minus Q4's N/A, 6 of Table 2, 8 of Table 3, 2 alphas, 5 severities.
    assert len(figures) == 64 + 6 + 8 + 2 + 5


@pytest.mark.django_db
def test_audit_command_on_a_study(tmp_path):
    build_study(slug="audited", n_sources=5)
    path = tmp_path / "reported.json"
    path.write_text(
        json.dumps(
            {
                "paper": "toy",
                "figures": [
                    {"id": "sev.mild", "path": "severity_distribution.Mild", "reported": "1"},
                    {"id": "sev.critical", "path": "severity_distribution.Critical", "reported": "2"},
                ],
            }
        )
    )
    out = StringIO()
    json_out = tmp_path / "audit.json"
    call_command("audit", "--study", "audited", "--reported", str(path), "--json", str(json_out), stdout=out)
    result = json.loads(json_out.read_text())
    # build_study cycles Critical, Serious, Moderate, Mild, Healthy over its 5 sources.
    assert {r["id"]: r["status"] for r in result["rows"]} == {"sev.mild": AGREES, "sev.critical": DIFFERS}
    assert "1 agree, 1 differ" in out.getvalue()


def test_the_default_reported_file_is_the_one_that_fits_the_systems():
    assert (
        audit_module.default_reported_for(["plain_bs", "plain_sc", "cot_bs", "cot_sc", "human"]) == "seed003"
    )
    assert audit_module.default_reported_for(["plain_bs", "cot_sc"]) is None
