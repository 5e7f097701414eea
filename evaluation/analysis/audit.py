"""Reproducibility audit: the figures a paper reported next to radlay's, figure by figure.

A reported-figures file (YAML or JSON; evaluation/analysis/reported/seed003.yaml is the example) lists
`figures`, each with an `id`, a `path` into the analysis JSON (dotted string or list of keys) and
the value as `reported`, written as printed ("4.725", "38.4%", "27") so that its rounding is
known. A figure agrees when |radlay − reported| <= half a unit of the reported last digit (a
percentage is compared as a fraction: "38.4%" → 0.384 ± 0.0005); a `tolerance` in the file
overrides that. Nothing is adjusted to make a figure agree: a mismatch is a finding.

Pure computation: no Django.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml

REPORTED_DIR = Path(__file__).resolve().parent / "reported"
AGREES, DIFFERS, NOT_COMPUTED = "agrees", "differs", "not computed"
# Float noise: 4.7245 computed as 4.724499999… must still agree with a printed 4.725.
_EPSILON = 1e-9
_NUMBER = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(%?)\s*$")


class ReportedFileError(ValueError):
    """The reported-figures file is malformed (the message says where)."""


def reported_files() -> dict[str, Path]:
    """The reported-figures files shipped with radlay, by name (file stem)."""
    return {
        path.stem: path for path in sorted(REPORTED_DIR.glob("*.y*ml")) + sorted(REPORTED_DIR.glob("*.json"))
    }


def default_reported_for(systems: Sequence[str]) -> str | None:
    """The shipped reported-figures file a study is compared with by default: the first whose
    `study_systems` (paper label → system key) are all systems of the study, e.g. seed003 for a
    study with plain_bs, plain_sc, cot_bs and cot_sc. None when no file fits."""
    keys = set(systems)
    for name, path in reported_files().items():
        try:
            wanted = set(load_reported(path).get("study_systems", {}).values())
        except ReportedFileError:
            continue
        if wanted and wanted <= keys:
            return name
    return None


def audit_shipped(analysis: Mapping[str, Any], name: str | None) -> dict[str, Any] | None:
    """`audit` against the shipped reported-figures file `name` (see reported_files), with that
    file's name under "reported_file"; None when no shipped file has that name (or no name)."""
    path = reported_files().get(name) if name else None
    if path is None:
        return None
    return audit(analysis, load_reported(path)) | {"reported_file": path.name}


def load_reported(path: str | Path) -> dict[str, Any]:
    """Read and check a reported-figures file (YAML or JSON). Parsed once per process and file
    version: the dashboard audits against a shipped file on every view, and parsing its YAML cost
    more than the rest of the page."""
    path = Path(path)
    return copy.deepcopy(_load_reported(str(path), path.stat().st_mtime_ns))


@functools.lru_cache(maxsize=32)
def _load_reported(name: str, mtime_ns: int) -> dict[str, Any]:
    path = Path(name)
    text = path.read_text(encoding="utf-8")
    try:
        # libyaml's loader where PyYAML was built with it: the same documents, ten times faster.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.load(text, Loader=loader)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ReportedFileError(f"{path.name}: not valid {path.suffix.lstrip('.').upper()}: {exc}") from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("figures"), list):
        raise ReportedFileError(f"{path.name}: expected a mapping with a list under 'figures'.")
    seen = set()
    for number, figure in enumerate(data["figures"], start=1):
        if not isinstance(figure, Mapping):
            raise ReportedFileError(f"{path.name}: figure {number} is not a mapping.")
        for key in ("id", "path", "reported"):
            if key not in figure:
                raise ReportedFileError(f"{path.name}: figure {number} has no {key!r}.")
        if figure["id"] in seen:
            raise ReportedFileError(f"{path.name}: figure id {figure['id']!r} appears twice.")
        seen.add(figure["id"])
        parse_reported(figure["reported"])  # fail early on an unreadable number
    return dict(data)


def parse_reported(reported: Any) -> tuple[float | None, float | None]:
    """(value, tolerance) of a reported figure: "4.725" → (4.725, 0.0005); "38.4%" → (0.384,
    0.0005); "27" → (27, 0.5); "N/A" or empty → (None, None). Numbers given unquoted in the file
    (YAML drops trailing zeros) are read the same way from their shortest form."""
    if reported is None:
        return None, None
    text = str(reported).strip()
    if text.upper() in {"", "N/A", "NA", "-", "—"}:
        return None, None
    match = _NUMBER.match(text)
    if not match:
        raise ReportedFileError(f"reported value {reported!r} is not a number (e.g. 4.725, 38.4%, 27).")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise ReportedFileError(f"reported value {reported!r} is not a number.") from exc
    decimals = max(0, -number.as_tuple().exponent)
    tolerance = Decimal(5) / Decimal(10) ** (decimals + 1)
    if match.group(2) == "%":
        number, tolerance = number / 100, tolerance / 100
    return float(number), float(tolerance)


def lookup(analysis: Mapping[str, Any], path: str | Sequence[str]) -> Any:
    """The value at `path` ("lay.cot_sc.severity_accuracy" or a list of keys); None if absent."""
    keys = path.split(".") if isinstance(path, str) else list(path)
    node: Any = analysis
    for key in keys:
        if isinstance(node, Mapping) and key in node:
            node = node[key]
        elif isinstance(node, list) and str(key).isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def audit(analysis: Mapping[str, Any], reported: Mapping[str, Any]) -> dict[str, Any]:
    """Compare every reported figure with radlay's value. Returns {paper, rows, summary}; each row
    has id, table, row, column, path, reported (as printed), reported_value, value, difference,
    tolerance, status (agrees / differs / not computed) and note."""
    rows = []
    for figure in reported["figures"]:
        reported_value, tolerance = parse_reported(figure["reported"])
        if figure.get("tolerance") is not None:
            tolerance = float(figure["tolerance"])
        raw = lookup(analysis, figure["path"])
        value = float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
        if value is not None and not math.isfinite(value):
            value = None
        difference = None
        if value is None or reported_value is None:
            status = NOT_COMPUTED
        else:
            difference = value - reported_value
            status = AGREES if abs(difference) <= tolerance + _EPSILON else DIFFERS
        path = figure["path"] if isinstance(figure["path"], str) else ".".join(map(str, figure["path"]))
        rows.append(
            {
                "id": figure["id"],
                "table": figure.get("table", ""),
                "row": figure.get("row", ""),
                "column": figure.get("column", ""),
                "path": path,
                "reported": str(figure["reported"]),
                "reported_value": reported_value,
                "value": value,
                "difference": difference,
                "tolerance": tolerance,
                "status": status,
                "note": figure.get("note", ""),
            }
        )
    summary = {
        status: sum(row["status"] == status for row in rows) for status in (AGREES, DIFFERS, NOT_COMPUTED)
    }
    summary["not_computed"] = summary[NOT_COMPUTED]  # the same count under a template-friendly key
    summary["total"] = len(rows)
    return {"paper": reported.get("paper", ""), "rows": rows, "summary": summary}


def audit_text(result: Mapping[str, Any], *, only_mismatches: bool = False) -> str:
    """A fixed-width table of an audit for the terminal."""
    lines = [f"Audit against: {result['paper']}" if result["paper"] else "Audit"]
    header = f"{'figure':34} {'reported':>9} {'radlay':>12} {'diff':>10} {'tol':>8}  status"
    lines += [header, "-" * len(header)]
    for row in result["rows"]:
        if only_mismatches and row["status"] == AGREES:
            continue
        value = "—" if row["value"] is None else f"{row['value']:.6g}"
        diff = "—" if row["difference"] is None else f"{row['difference']:+.4g}"
        tol = "—" if row["tolerance"] is None else f"{row['tolerance']:.2g}"
        lines.append(f"{row['id']:34} {row['reported']:>9} {value:>12} {diff:>10} {tol:>8}  {row['status']}")
    s = result["summary"]
    lines.append(
        f"{s['total']} figures: {s[AGREES]} agree, {s[DIFFERS]} differ, {s[NOT_COMPUTED]} not computed."
    )
    return "\n".join(lines)
