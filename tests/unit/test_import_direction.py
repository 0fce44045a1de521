"""The packages depend one way: core (errors, spec, runtime) → backends → the surfaces
(server, notebook, kernels, cli, widgets). Read from the source with ``ast`` (no import
runs), every ``import`` counted, those inside functions too: a lazy import is still a
dependency."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "jupyter_pai"

#: Each part of the package and the parts it may import (besides itself).
MAY_IMPORT: dict[str, set[str]] = {
    "_version": set(),
    "errors": set(),
    "spec": {"errors"},
    "runtime": {"errors", "spec"},
    "backends": {"_version", "errors", "spec", "runtime"},
    "config": {"backends", "errors"},
    "images": {"backends", "errors"},
    "submission": {"_version", "backends", "config", "errors", "images", "spec", "runtime"},
    "kernels": {"backends", "config", "errors", "spec", "runtime", "submission"},
    "server": {
        "_version",
        "backends",
        "config",
        "errors",
        "images",
        "spec",
        "runtime",
        "submission",
    },
    "notebook": {
        "_version",
        "backends",
        "config",
        "errors",
        "images",
        "spec",
        "runtime",
        "submission",
    },
    "widgets": {"backends", "errors", "images", "notebook", "spec"},
    "hub": {"backends", "config", "errors"},
    "cli": {
        "_version",
        "backends",
        "config",
        "errors",
        "images",
        "kernels",
        "notebook",
        "spec",
        "runtime",
        "submission",
    },
}
#: The package's own ``__init__`` wires the surfaces into Jupyter and IPython.
TOP = "__init__"


def part_of(module: str) -> str:
    """``jupyter_pai.backends.kubernetes.rest`` → ``backends``; the package → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else TOP


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def imported(module: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of each import of a jupyter_pai module in ``path``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" for a in node.names] if not node.module else []
            # ``from .. import cli`` imports the module ``jupyter_pai.cli``.
            for name in names or [target]:
                yield node.lineno, name


def wrong_way() -> list[str]:
    found = []
    for module, path in modules():
        part = part_of(module)
        if part == TOP:
            continue
        allowed = MAY_IMPORT.get(part)
        assert allowed is not None, f"{module}: a new part of the package; place it in MAY_IMPORT"
        for line, target in imported(module, path):
            if not target.startswith("jupyter_pai"):
                continue
            to = part_of(target)
            if target == "jupyter_pai.__version__":
                to = "_version"
            if to != part and to not in allowed:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {part} imports {target}")
    return found


def test_packages_depend_one_way() -> None:
    assert wrong_way() == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ..runtime import plugin_errors", "spec imports jupyter_pai.runtime"),
        ("from .. import cli", "spec imports jupyter_pai.cli"),
        ("import jupyter_pai.server.app", "spec imports jupyter_pai.server.app"),
    ],
)
def test_the_check_sees_an_import_the_wrong_way(
    source: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "jupyter_pai"
    (package / "spec").mkdir(parents=True)
    (package / "spec" / "bad.py").write_text(source + "\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert [f.split(": ", 1)[1] for f in wrong_way()] == [expected]
