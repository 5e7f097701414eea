"""The data-policy gate: whether a study's text may go to an external backend now.

`external_call_check` is the `permit` of every `GatedBackend` (generation/backends/gate.py) that
`generation.backends.configured.cached_backend` builds, for generation, judges and anything later
built there; `external_call_problem` lets a launch form refuse early with the same words. A refused
call is logged in the study's activity log and never sent.
"""

from __future__ import annotations

from django.conf import settings

from annotation.activity_services import activity_record
from annotation.models import Study
from generation.backends.base import BackendError
from generation.backends.registry import EXTERNAL_BACKENDS
from privacy.models import DataPolicy
from privacy.selectors import data_policy_of

Policy = DataPolicy.Policy
OPENAI_DEFAULT_ENDPOINT = "https://api.openai.com/v1"


class ExternalCallRefused(BackendError):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """A call the study's data policy does not allow; never worth retrying as it stands."""

    def __init__(self, message: str):
        super().__init__(message, transient=False)


def backend_endpoint(backend: str) -> str:
    """Where the backend `backend` sends text: the configured server's URL ("" for local ones)."""
    if backend != "openai":
        return ""
    return (settings.OPENAI_BASE_URL or OPENAI_DEFAULT_ENDPOINT).rstrip("/")


def external_call_problem(*, study: Study, backend: str) -> str:
    """Why the study's text may not go to `backend` now, or "" when it may (always for a local one)."""
    if backend not in EXTERNAL_BACKENDS:
        return ""
    policy = data_policy_of(study=study)
    endpoint = backend_endpoint(backend)
    slug = study.slug
    if policy.policy == Policy.LOCAL_ONLY:
        return (
            f"Study {slug}'s data policy is local-only: no text of it may go to the external backend "
            f"{backend!r} ({endpoint}). Use a local model (transformers) or the glossary backend, or "
            f"have an owner change the policy (`manage.py study policy {slug} deidentified --reason ...`)."
        )
    if policy.policy == Policy.DEIDENTIFIED and not policy.is_approved:
        return (
            f"Study {slug}'s data policy is deidentified and its de-identification is not approved: "
            f"nothing goes to the external backend {backend!r} ({endpoint}) before an owner reviews and "
            f"approves it (the console's de-identification page, or `manage.py deidentify --study {slug} "
            "--approve`)."
        )
    if policy.policy == Policy.EXTERNAL_APPROVED and endpoint != policy.endpoint.rstrip("/"):
        return (
            f"Study {slug}'s data policy approves the endpoint {policy.endpoint} only, but the "
            f"{backend!r} backend is configured for {endpoint}: set OPENAI_BASE_URL to the approved "
            "endpoint, or have an owner record the new one (`manage.py study policy ... "
            "external-approved --endpoint URL --reason ...`)."
        )
    return ""


def external_call_check(*, study: Study, backend: str, purpose: str) -> None:
    """Refuse (ExternalCallRefused) and log a call the study's policy does not allow."""
    problem = external_call_problem(study=study, backend=backend)
    if problem:
        activity_record(
            study=study,
            actor="data-policy gate",
            verb="external_call.refused",
            details={
                "backend": backend,
                "endpoint": backend_endpoint(backend),
                "purpose": purpose,
                "policy": data_policy_of(study=study).policy,
            },
        )
        raise ExternalCallRefused(problem)


def provenance_policy(*, study: Study, backend: str) -> dict[str, str | bool]:
    """What a generated text's provenance records of the policy it was made under."""
    policy = data_policy_of(study=study)
    return {
        "policy": policy.policy,
        "endpoint": backend_endpoint(backend) if backend in EXTERNAL_BACKENDS else "local",
        "deidentification_approved": policy.is_approved,
    }
