"""Where the data-policy layer (privacy/) plugs into annotation: privacy builds on annotation's
studies and sources, so annotation imports nothing of it; `PrivacyConfig.ready()` registers here

- the de-identification of sources as an import writes them (`sources_imported`),
- the text a source is shown as to an audience (`shown_source_text`), and
- the `manage.py study policy` action (`study_policy_action`).

A source's shown text has no fallback: with no reader registered it refuses rather than show an
original that should have been de-identified.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from annotation.models import Source, Study

ImportHook = Callable[..., None]
TextReader = Callable[..., str]
PolicyAction = Callable[..., None]

_import_hooks: list[ImportHook] = []
_readers: list[TextReader] = []
_policy_actions: list[PolicyAction] = []


def _register(registry: list, hook: Callable) -> None:
    # ready() may run more than once (tests that reload apps): one registration per hook.
    if hook not in registry:
        registry.append(hook)


def import_hook_register(hook: ImportHook) -> None:
    """`hook(study=..., sources=[...])` runs inside every import's transaction."""
    _register(_import_hooks, hook)


def source_text_reader_register(reader: TextReader) -> None:
    """`reader(source=..., audience=...)` returns the text `audience` sees of `source`."""
    _register(_readers, reader)


def study_policy_action_register(action: PolicyAction) -> None:
    """`action(study, policy, *, endpoint, reason, stdout)` runs `manage.py study policy`."""
    _register(_policy_actions, action)


def _one(registry: list, what: str) -> Callable:
    if not registry:
        raise ImproperlyConfigured(f"No {what} is registered: is `privacy` in INSTALLED_APPS?")
    return registry[-1]


def sources_imported(*, study: Study, sources: list[Source]) -> None:
    for hook in _import_hooks:
        hook(study=study, sources=sources)


def shown_source_text(*, source: Source, audience: str) -> str:
    return _one(_readers, "reader of a source's shown text")(source=source, audience=audience)


def study_policy_action(study: Study, policy: str | None, **options: Any) -> None:
    _one(_policy_actions, "`study policy` action")(study, policy, **options)
