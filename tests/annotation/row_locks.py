"""Hold a study's row lock from another connection while the test's own connection works, waiting
at most 2 s for any lock (PostgreSQL only): a request that needs the study's row fails with a lock
timeout instead of passing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from annotation.models import Study


@contextmanager
def study_row_held(study: Study) -> Iterator[None]:
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with transaction.atomic():
            Study.objects.select_for_update().get(pk=study.pk)
            held.set()
            release.wait(10)
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        release.set()
        holder.join()
