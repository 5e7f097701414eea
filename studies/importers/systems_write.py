"""The systems an import names, written in bulk: a few queries whatever their number (one
system_upsert per key held a worker for over half an hour on a file of 20,000 system columns).
The rules are source_services.system_upsert's: a new system takes the next free position and its
key as label unless one is given; a given label replaces the stored one."""

from __future__ import annotations

from django.db.models import Max

from annotation.models import Study, System
from studies.importers.import_limits import systems_check


def systems_bulk_upsert(
    *, study: Study, keys: list[str], labels: dict[str, str], file: str
) -> dict[str, int]:
    """{key: system id} for `keys` (in order), creating the missing ones. Refuses (ImportFormatError)
    a study that would pass RADLAY_FILE_LIMITS.import_systems. Call inside the import's transaction."""
    keys = list(dict.fromkeys(keys))
    existing = {s.key: s for s in System.objects.filter(study=study, key__in=keys)}
    new_keys = [k for k in keys if k not in existing]
    if new_keys:
        systems_check(System.objects.filter(study=study).count() + len(new_keys), file=file, study=study.slug)
    relabel = []
    for key, system in existing.items():
        label = labels.get(key, "") or system.label or key
        if label != system.label:
            system.label = label
            relabel.append(system)
    if relabel:
        System.objects.bulk_update(relabel, ["label"])
    last = System.objects.filter(study=study).aggregate(last=Max("position"))["last"]
    start = 0 if last is None else last + 1
    created = System.objects.bulk_create(
        [
            System(study=study, key=key, label=labels.get(key, "") or key, position=start + i)
            for i, key in enumerate(new_keys)
        ],
        batch_size=2000,
    )
    ids = {s.key: s.pk for s in (*existing.values(), *created)}
    return {key: ids[key] for key in keys}
