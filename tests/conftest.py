import os
import uuid
from pathlib import Path

import pytest
from django.conf import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_configure(config: pytest.Config) -> None:
    from tests import flush_after_requests

    flush_after_requests.install()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--pg-restart",
        choices=("include", "exclude", "only"),
        default="include",
        help="the tests that restart the test PostgreSQL (marker pg_restart): run them with the others "
        "(include, the default), leave them out (exclude) or run only them (only). .ci/test.sh runs the "
        "suite in parallel with exclude, then these alone with only.",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --pg-restart=only, a test file that does not name the marker is not imported: the run
    after the parallel one then collects three files, not the whole suite (a minute of CPU). A
    file with such tests names `pg_restart` in its text (the marker is never added elsewhere)."""
    if config.getoption("--pg-restart") != "only" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return "pg_restart" not in collection_path.read_text(encoding="utf-8")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    choice = config.getoption("--pg-restart")
    if choice == "include":
        return
    keep = choice == "only"
    selected = [item for item in items if (item.get_closest_marker("pg_restart") is not None) == keep]
    deselected = [item for item in items if (item.get_closest_marker("pg_restart") is not None) != keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A restart of the shared test PostgreSQL breaks every other worker's connections mid-test.
    if item.get_closest_marker("pg_restart") and int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        pytest.skip("restarts the test PostgreSQL under the other workers' tests: run it without -n")


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix,
    django_db_use_migrations,
    django_db_createdb,
    django_db_blocker,
) -> None:
    """Each test database (one per pytest-xdist worker) is a fresh copy of a template database
    migrated once per set of migrations (tests/database_template.py); --create-db rebuilds it."""
    if not django_db_use_migrations:
        return
    from django.db import connections

    from tests.database_template import use_template

    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID") or uuid.uuid4().hex
    with django_db_blocker.unblock():
        for alias in settings.DATABASES:
            use_template(connections[alias], rebuild=django_db_createdb, run_id=run_id)


@pytest.fixture(scope="session")
def django_db_keepdb(request, django_db_modify_db_settings) -> bool:
    """A copy of the template is made fresh on every run, --reuse-db or not (it costs less than
    telling whether a kept one is still right); elsewhere (SQLite) --reuse-db keeps its meaning."""
    from django.db import connections

    if any(connections[alias].settings_dict.get("TEST", {}).get("TEMPLATE") for alias in settings.DATABASES):
        return False
    return bool(request.config.getvalue("reuse_db"))


@pytest.fixture(scope="session")
def release_dir() -> Path:
    """The authors' 2024 release, read in place from ../shared (never copied into the repo).
    Tests that need it skip cleanly when it is absent (RADLAY_RELEASE_DIR to point elsewhere)."""
    path = Path(settings.RADLAY_RELEASE_DIR)
    if not (path / "Original_setences_with_generated_simplifications.csv").is_file():
        pytest.skip(f"the 2024 release is not available at {path} (set RADLAY_RELEASE_DIR)")
    return path


# Tiny Hugging Face models (tests/ml/tiny_models.py), built once per session (per pytest-xdist
# worker) and shared by every test module: ml.inference.load_model caches a loaded model by its
# directory, so the modules also share one loaded model. Tests that change a loaded model use
# tests/ml/conftest.py's fresh_model_cache.
@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    tiny_models = pytest.importorskip("tests.ml.tiny_models")
    return tiny_models.build_tiny_t5(tmp_path_factory.mktemp("models") / "tiny-t5")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    tiny_models = pytest.importorskip("tests.ml.tiny_models")
    return tiny_models.build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-llama", arch="llama")


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    tiny_models = pytest.importorskip("tests.ml.tiny_models")
    return tiny_models.build_tiny_causal_lm(tmp_path_factory.mktemp("models") / "tiny-gpt2", arch="gpt2")


@pytest.fixture
def external_calls_approved(settings, monkeypatch):
    """Studies without a data policy of their own are treated, by the real gate, as if an owner
    had approved the configured OpenAI-compatible server (external-approved with the current
    OPENAI_BASE_URL), so that tests about something else than the data policy reach their
    scripted server. Studies with a policy row keep theirs."""
    from privacy import gate
    from privacy.models import DataPolicy

    stored = gate.data_policy_of

    def policy_of(*, study):
        row = DataPolicy.objects.filter(study=study).first()
        if row is not None:
            return stored(study=study)
        return DataPolicy(
            study=study, policy="external-approved", endpoint=(settings.OPENAI_BASE_URL or "").rstrip("/")
        )

    monkeypatch.setattr(gate, "data_policy_of", policy_of)
