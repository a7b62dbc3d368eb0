"""The tests need nothing a `pip install -e '.[dev]'` does not ask for by name: every package
they import is declared, in the dependencies or the dev extra, not merely pulled in by
another package (which may drop it in any release)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_FIRST_PARTY = {"actors", "bench", "eventstore", "graphmem", "projections", "tests"}


def _imported_modules(folder: Path) -> set[str]:
    """The top-level names every module under `folder` imports, wherever the import sits."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - _FIRST_PARTY - set(sys.stdlib_module_names)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(*extras: str) -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    optional = project["optional-dependencies"]
    requirements = [*project["dependencies"], *(r for extra in extras for r in optional[extra])]
    return {_normalized(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0]) for r in requirements}


def _undeclared(folders: list[Path], declared: set[str]) -> dict[str, list[str] | None]:
    distributions = packages_distributions()
    modules = set().union(*(_imported_modules(folder) for folder in folders))
    return {
        module: distributions.get(module)
        for module in sorted(modules)
        if not {_normalized(d) for d in distributions.get(module, [module])} & declared
    }


def test_every_package_the_tests_import_is_declared_for_a_dev_install() -> None:
    # The replication tests import nats-py, from the replication extra CI installs.
    assert _undeclared([REPO / "tests"], _declared("dev", "replication")) == {}


def test_every_package_graphmem_imports_is_a_declared_dependency() -> None:
    packages = [REPO / name for name in ("graphmem", "actors", "projections", "eventstore")]
    # nats-py only in graphmem.replication, imported when replication is on (an extra).
    assert _undeclared(packages, _declared("replication")) == {}
