"""Every whole number a user can type (a form of any app, a request body of the API) has a lower
and an upper bound, so that a value out of range is an error naming the field, never a database
error or a value stored wrapped (config/postgresql)."""

from __future__ import annotations

import importlib

from django import forms
from drf_spectacular.generators import SchemaGenerator

FORM_MODULES = (
    "evaluation.planning.forms",
    "generation.forms",
    "generation.admin",
    "judging.forms",
    "ml.admin",
    "studies.admin",
)


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def _unbounded(field: forms.Field) -> bool:
    # FloatField and DecimalField are IntegerFields to Django; only whole numbers are meant here.
    whole = isinstance(field, forms.IntegerField) and not isinstance(
        field, forms.FloatField | forms.DecimalField
    )
    return whole and (field.min_value is None or field.max_value is None)


def test_every_whole_number_field_of_radlay_s_forms_is_bounded_on_both_sides():
    for module in FORM_MODULES:
        importlib.import_module(module)
    ours = [
        form
        for form in _subclasses(forms.BaseForm)
        if form.__module__.split(".")[0]
        in {"annotation", "evaluation", "generation", "judging", "ml", "config"}
    ]
    assert {"PlanForm", "GenerationBatchForm", "JudgeRunForm", "TrainingJobForm"} <= {
        f.__name__ for f in ours
    }
    unbounded = [
        f"{form.__module__}.{form.__name__}.{name}"
        for form in ours
        for name, field in form.declared_fields.items()
        if _unbounded(field)
    ]
    assert not unbounded, unbounded


def _integers(schema: dict, components: dict, path: str):
    """(path, schema) of every integer property of a request body schema, references followed."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    if schema.get("type") == "integer":
        yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _integers(sub, components, f"{path}.{name}")
    if "items" in schema:
        yield from _integers(schema["items"], components, f"{path}[]")
    for sub in schema.get("allOf", []) + schema.get("oneOf", []) + schema.get("anyOf", []):
        yield from _integers(sub, components, path)


def test_every_integer_of_an_api_request_body_is_bounded_on_both_sides():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found, unbounded = [], []
    for route, operations in schema["paths"].items():
        for method, operation in operations.items():
            for content in operation.get("requestBody", {}).get("content", {}).values():
                for path, integer in _integers(content["schema"], components, f"{method.upper()} {route}"):
                    found.append(path)
                    if "minimum" not in integer or "maximum" not in integer:
                        unbounded.append(path)
    assert any("concurrency" in path for path in found) and any("simulations" in path for path in found)
    assert not unbounded, unbounded
