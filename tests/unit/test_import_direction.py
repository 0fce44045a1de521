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


def module_of(target: str, known: set[str]) -> str:
    """The module an import names: ``jupyter_pai.errors.NotFound`` → ``jupyter_pai.errors``;
    the version the package re-exports is its ``_version`` module's."""
    if target == "jupyter_pai.__version__":
        return "jupyter_pai._version"
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target


def cycles() -> list[list[str]]:
    """Each set of modules that import one another round (Tarjan's strongly connected
    components of more than one module). Imports under ``TYPE_CHECKING`` count: a circle that
    only the type checker sees still ties the two modules into one."""
    paths = dict(modules())
    graph = {
        module: {
            module_of(target, set(paths))
            for _, target in imported(module, path)
            if target.startswith("jupyter_pai")
        }
        - {module, ""}
        for module, path in paths.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_round() -> None:
    assert cycles() == []


def test_the_check_sees_a_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "jupyter_pai"
    (package / "spec").mkdir(parents=True)
    (package / "spec" / "a.py").write_text("from .b import thing\n")
    (package / "spec" / "b.py").write_text("from . import c\n")
    (package / "spec" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import other\n"
    )
    (package / "spec" / "d.py").write_text("from .a import thing\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["PACKAGE"]), "PACKAGE", package)
    assert cycles() == [["jupyter_pai.spec.a", "jupyter_pai.spec.b", "jupyter_pai.spec.c"]]
