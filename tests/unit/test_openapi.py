"""The OpenAPI file and the server's route table describe the same API."""

from __future__ import annotations

from jupyter_pai.server import openapi
from jupyter_pai.server.routes import ROUTES

VERBS = ("get", "post", "put", "patch", "delete")


def handler_operations() -> set[tuple[str, str]]:
    ops = set()
    for template, handler in ROUTES:
        for verb in VERBS:
            if verb in vars(handler):  # defined by the handler itself, not inherited
                ops.add((f"/{template}", verb))
    return ops


def document_operations() -> set[tuple[str, str]]:
    doc = openapi.load()
    return {(path, verb) for path, item in doc["paths"].items() for verb in VERBS if verb in item}


def test_every_route_is_documented_and_every_documented_route_exists() -> None:
    handlers, documented = handler_operations(), document_operations()
    assert handlers - documented == set(), "routes missing from openapi.yaml"
    assert documented - handlers == set(), "openapi.yaml documents routes the server lacks"
    assert len(handlers) >= 12


def test_component_schemas_match_the_models() -> None:
    doc = openapi.load()
    generated = openapi.component_schemas()
    stale = [
        name
        for name, schema in generated.items()
        if doc["components"]["schemas"].get(name) != schema
    ]
    assert stale == [], f"run `python -m jupyter_pai.server.openapi` to refresh: {stale}"


def test_path_parameters_are_declared() -> None:
    doc = openapi.load()
    for path, item in doc["paths"].items():
        names = {p["name"] for p in item.get("parameters", []) if p["in"] == "path"}
        expected = {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
        assert names == expected, path
