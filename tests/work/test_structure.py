"""The structure of the apps, read from the source with ast: judging uses generation only for its
backends and prompts (the job layer comes from work/); work/ imports none of its users; the pieces
that had been copied exist once (the embedded-mode runner, the database retry policy,
researcher_login_required); the apps import each other one way only, along the arrows
docs/architecture/index.md writes down (no circle, evaluation imports no judging, config no app);
evaluation's page layer points views → context builders → pure formatter, and its analysis/,
exports/ and planning/ import nothing from pages/; no app re-registers
another's admin; callers use only annotation/prepared_queries.py's documented interface."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USERS = ("generation", "judging", "evaluation", "ml", "studies", "surveys")


def modules(app: str):
    for path in sorted((REPO / app).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path, ast.parse(path.read_text(), filename=str(path))


def imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_judging_imports_only_backends_and_prompts_from_generation():
    # generation.controls: the pure planted-control generator, whose places the planted span
    # suggestions point at (judging/span_assistance.py).
    allowed = ("generation.backends", "generation.prompts", "generation.controls")
    offending = {
        f"{path.relative_to(REPO)}: {name}"
        for path, tree in modules("judging")
        for name in imported(tree)
        if name.split(".")[0] == "generation" and not name.startswith(allowed) and name != "generation"
    }
    assert not offending, sorted(offending)


def test_the_job_layer_imports_none_of_its_users():
    offending = {
        f"{path.relative_to(REPO)}: {name}"
        for path, tree in modules("work")
        for name in imported(tree)
        if name.split(".")[0] in USERS
    }
    assert not offending, sorted(offending)


def _assigned(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        names.update(target.id for target in targets if isinstance(target, ast.Name))
    return names


def _source_files():
    for app in APPS:
        yield from modules(app)


@pytest.mark.heavy
def test_the_copied_pieces_exist_once():
    where: dict[str, list[str]] = {"researcher_login_required": [], "DATABASE_RETRY": [], "_eager": []}
    retry_options, eager_loops = [], []
    for path, tree in _source_files():
        for name in _assigned(tree) & set(where):
            where[name].append(str(path.relative_to(REPO)))
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "autoretry_for":
                retry_options.append(str(path.relative_to(REPO)))
            if isinstance(node, ast.Constant) and node.value == "autoretry_for":
                retry_options.append(str(path.relative_to(REPO)))
            if isinstance(node, ast.Attribute) and node.attr == "task_always_eager":
                eager_loops.append(str(path.relative_to(REPO)))
    assert where["researcher_login_required"] == ["annotation/access.py"]
    assert where["DATABASE_RETRY"] == ["work/runner.py"]
    assert where["_eager"] == ["work/runner.py"]
    assert set(retry_options) == {"work/runner.py"}
    # evaluation's analysis tasks run on a thread in the embedded mode: another runner (a page must
    # not wait for an analysis), not a queue of jobs.
    assert set(eager_loops) <= {"work/runner.py", "evaluation/tasks.py"}


# --- Apps that point one way ----------------------------------------------------------------------
# Every import counts, at module level or inside a function: an import inside a function hides a
# circle from Python's import machinery, not from a reader.

APPS = (
    "annotation",
    "studies",
    "surveys",
    "work",
    "evaluation",
    "generation",
    "judging",
    "ml",
    "console",
    "privacy",
    "signin",
    "qualification",
    "instruments",
    "measures",
    "lexicon",
    "config",
)
# The arrows docs/architecture/index.md writes down ("Which app imports which"); the test below
# holds the docs to this table.
ALLOWED = {
    # annotation: the participants and the one answer store, under every other app.
    "annotation": {"instruments"},
    # studies: study set-up (studies, sources, teams, kinds, importers, the Study admin) composes
    # the participants and the flows' set-up (a rate-each-pair study's instruments and rater groups).
    "studies": {"annotation", "surveys", "instruments", "measures"},
    # surveys: the four flows and their page layer; config: the error page, request limits.
    "surveys": {"annotation", "config", "instruments", "measures"},
    "work": {"annotation"},
    # generation: the preference export names the prompt family a pair was generated with.
    # privacy: the text an export or the API shows; signin: the API token's second factor.
    "evaluation": {
        "annotation",
        "studies",
        "surveys",
        "config",
        "work",
        "ml",
        "instruments",
        "measures",
        "generation",
        "privacy",
        "signin",
        "qualification",
    },
    "measures": {"lexicon"},
    "generation": {"annotation", "studies", "work", "lexicon"},
    # lexicon: the glossary judge's error spans read the glossary and the fact check.
    "judging": {
        "annotation",
        "studies",
        "work",
        "generation",
        "evaluation",
        "instruments",
        "measures",
        "lexicon",
        "privacy",
    },
    # work: training jobs run on the job layer.
    "ml": {"annotation", "studies", "measures", "work", "privacy"},
    "console": {
        "annotation",
        "studies",
        "surveys",
        "work",
        "evaluation",
        "generation",
        "judging",
        "instruments",
        "privacy",
        "qualification",
    },
    # privacy reaches annotation's import writers and shown texts, and generation's backends, through
    # what it registers in PrivacyConfig.ready() (annotation/ and generation/data_policy_hooks.py).
    "privacy": {"annotation", "generation", "lexicon"},
    "signin": {"annotation", "studies"},
    "qualification": {"annotation", "surveys", "instruments", "measures"},
    "instruments": set(),
    "lexicon": set(),
    "config": set(),
}


def node(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in APPS else None


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(REPO).with_suffix("").parts)
    return name.removesuffix(".__init__")


def app_arrows() -> dict[str, dict[str, list[str]]]:
    """{importing node: {imported node: ["file: module", ...]}} over every app's source."""
    arrows: dict[str, dict[str, list[str]]] = {}
    for app in APPS:
        for path, tree in modules(app):
            here = node(module_name(path))
            assert here is not None
            for name in imported(tree):
                there = node(name)
                if there is not None and there != here:
                    arrows.setdefault(here, {}).setdefault(there, []).append(
                        f"{path.relative_to(REPO)}: {name}"
                    )
    return arrows


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph` (a list of nodes that ends where it starts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(here: str, path: list[str]) -> list[str] | None:
        state[here] = 1
        for there in sorted(graph.get(here, ())):
            if state.get(there) == 1:
                return [*path[path.index(there) :], there] if there in path else [here, there]
            if there not in state and (found := visit(there, [*path, there])):
                return found
        state[here] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_the_circle_finder_finds_circles():
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_circle_between_apps():
    arrows = app_arrows()
    graph = {here: set(theirs) for here, theirs in arrows.items()}
    found = circle(graph)
    assert found is None, (
        found,
        {f"{a} → {b}": arrows[a][b] for a, b in zip(found, found[1:], strict=False)},
    )


def test_every_arrow_between_apps_is_an_allowed_one():
    unexpected = {
        f"{here} → {there}": where
        for here, theirs in app_arrows().items()
        for there, where in theirs.items()
        if there not in ALLOWED[here]
    }
    assert not unexpected, unexpected
    assert circle(ALLOWED) is None


def test_evaluation_imports_no_judging_and_config_imports_no_app():
    arrows = app_arrows()
    assert "judging" not in arrows.get("evaluation", {}), arrows["evaluation"]["judging"]
    assert not arrows.get("config"), arrows["config"]


def test_the_architecture_page_writes_down_the_allowed_arrows():
    page = (REPO / "docs" / "architecture" / "index.md").read_text()
    block = page.split("Which app imports which", 1)[1].split("```", 2)[1]
    written: dict[str, set[str]] = {}
    current = ""
    for line in block.splitlines():
        left, arrow, right = line.partition("→")
        if arrow:
            current = left.strip()
        elif not current or not line.strip():
            continue
        else:
            right = line  # a continuation of the arrow above
        targets = re.sub(r"\([^)]*\)", "", right)
        written.setdefault(current, set()).update(
            name.strip() for name in targets.split(",") if name.strip() and name.strip() != "nothing"
        )
    assert written == {app: set(arrows) for app, arrows in ALLOWED.items()}


# --- Evaluation's page layer: views → context builders → pure formatters ----------------------------

PAGE_LAYER = {
    "evaluation.pages.dashboard_views": 0,
    "evaluation.pages.plan_views": 0,
    "evaluation.pages.team_views": 0,
    "evaluation.pages.adjudication_views": 0,
    "evaluation.pages.context": 1,
    "evaluation.pages.report_sections": 1,
    "evaluation.pages.report": 2,
}


def test_the_page_layer_points_one_way():
    trees = {module_name(path): (path, tree) for path, tree in modules("evaluation")}
    assert set(PAGE_LAYER) <= set(trees)
    page_modules = {
        name for name in trees if name.startswith("evaluation.pages.") or name.endswith(("views", "context"))
    }
    assert page_modules <= set(PAGE_LAYER), "a new page module: give it its level in PAGE_LAYER"
    assert all(name.startswith("evaluation.pages.") for name in PAGE_LAYER), "pages live in pages/"
    graph: dict[str, set[str]] = {}
    for name, level in PAGE_LAYER.items():
        path, tree = trees[name]
        used = {other for other in imported(tree) if other in PAGE_LAYER and other != name}
        graph[name] = used
        upward = {other for other in used if PAGE_LAYER[other] < level}
        assert not upward, f"{name} imports {sorted(upward)}: a lower layer imports no higher one"
        hidden = [
            f"{name}: line {inner.lineno}"
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for inner in ast.walk(function)
            if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("evaluation")
        ]
        assert not hidden, f"imports of evaluation inside a function: {hidden}"
    assert circle(graph) is None, circle(graph)


def test_the_formatter_is_pure():
    names = imported(ast.parse((REPO / "evaluation" / "pages" / "report.py").read_text()))
    assert not {name for name in names if name.split(".")[0] in ("django", "rest_framework")}
    assert not {
        name
        for name in names
        if name.startswith(("evaluation.models", "evaluation.selectors", "annotation.models"))
    }


# --- Evaluation's groups: the pages build on the rest, never the other way ------------------------
# analysis/ (the computations, their reads and the document's sections), exports/ (every way a
# study's data leaves: the answer exports, the preference pairs, the study archive) and planning/
# (sample-size plans, adaptive allocation) know nothing of pages/ (the dashboard's HTML pages), nor
# do the app's models, selectors, services, tasks and the progress and adjudication reads.

BELOW_THE_PAGES = tuple(f"evaluation.{group}." for group in ("analysis", "exports", "planning"))
DATA_LAYER = (
    "evaluation.models",
    "evaluation.selectors",
    "evaluation.services",
    "evaluation.tasks",
    "evaluation.progress",
    "evaluation.adjudication_selectors",
    "evaluation.adjudication_services",
)


def test_only_the_pages_and_their_wiring_import_the_pages():
    offending = []
    for path, tree in modules("evaluation"):
        name = module_name(path)
        if name.startswith(BELOW_THE_PAGES) or name in DATA_LAYER:
            offending += [
                f"{name}: {other}"
                for other in imported(tree)
                if other == "evaluation.pages" or other.startswith("evaluation.pages.")
            ]
    assert not offending, offending


# --- The Study admin is composed, not re-registered ------------------------------------------------


def test_no_app_unregisters_an_admin():
    offending = [
        f"{path.relative_to(REPO)}: line {node.lineno}"
        for path, tree in _source_files()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "unregister"
    ]
    assert not offending, offending


# --- annotation/prepared_queries.py: one narrow interface -----------------------------------------

PREPARED_METHODS = {"rows", "values", "run", "columns", "instances"}


@pytest.mark.heavy
def test_callers_use_only_the_prepared_queries_interface():
    source = (REPO / "annotation" / "prepared_queries.py").read_text()
    interface = set(ast.literal_eval(source.split("__all__ = ", 1)[1].split("\n", 1)[0]))
    offending = []
    for app in APPS:
        for path, tree in modules(app):
            if path.name == "prepared_queries.py":
                continue
            prepared: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module == "annotation.prepared_queries":
                    offending += [f"{path.name}: {a.name}" for a in node.names if a.name not in interface]
                # Names bound to a prepared query or a Joined (at module level, or returned by a
                # cached factory) are used through the documented methods only.
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    called = node.value.func
                    if isinstance(called, ast.Name) and called.id in interface:
                        prepared.update(t.id for t in node.targets if isinstance(t, ast.Name))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in prepared
                    and node.attr not in PREPARED_METHODS
                ):
                    offending.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert not offending, offending


# --- The Likert bounds: annotation/scales.py only ---------------------------------------------------


def test_the_likert_bounds_are_written_in_scales_only():
    offending = []
    for name in (
        "annotation/models.py",
        "annotation/answer_writes.py",
        "surveys/radiologist/services.py",
        "surveys/lay/services.py",
    ):
        tree = ast.parse((REPO / name).read_text())
        for node in ast.walk(tree):
            # A range check on a number (`rating__lte=5`, `1 <= number <= 5`) reads scales.LIKERT.
            if (
                isinstance(node, ast.keyword)
                and (node.arg or "").endswith(("__gte", "__lte"))
                and isinstance(node.value, ast.Constant)
                # "at least one" (a count), a share from 0 to 1: not a scale's bound
                and node.value.value not in (0, 1)
            ):
                offending.append(f"{name}: line {node.value.lineno}")
            if isinstance(node, ast.Dict):  # Q(**{f"{field}__lte": 5})
                for key, value in zip(node.keys, node.values, strict=True):
                    tail = key.values[-1] if isinstance(key, ast.JoinedStr) and key.values else key
                    if (
                        isinstance(tail, ast.Constant)
                        and str(tail.value).endswith(("__gte", "__lte"))
                        and isinstance(value, ast.Constant)
                    ):
                        offending.append(f"{name}: line {value.lineno}")
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Constant) and side.value == 5 for side in [node.left, *node.comparators]
            ):
                offending.append(f"{name}: line {node.lineno}")
    assert not offending, offending
