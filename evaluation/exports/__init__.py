"""Exports of a study's raw answers, one module per format, registered here."""

from __future__ import annotations

from types import ModuleType

from evaluation.exports import csv, json, xlsx

FORMATS: dict[str, ModuleType] = {"csv": csv, "xlsx": xlsx, "json": json}
