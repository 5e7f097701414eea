"""The job layer's structure, read from the source with ast: judging uses generation only for its
backends and prompts (the job layer comes from work/); work/ imports none of its users; the pieces
that had been copied exist once (the embedded-mode runner, the database retry policy,
researcher_login_required)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
USERS = ("generation", "judging", "evaluation", "ml")


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
    allowed = ("generation.backends", "generation.prompts")
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
    for app in ("annotation", "config", "evaluation", "generation", "judging", "ml", "work"):
        yield from modules(app)


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
