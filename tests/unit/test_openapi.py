"""The OpenAPI file and the server's route table describe the same API."""

from __future__ import annotations

from typing import Any

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


def json_responses() -> list[tuple[str, str, dict[str, Any]]]:
    """(path, verb, schema) of every 2xx JSON answer the document describes."""
    found = []
    for path, item in openapi.load()["paths"].items():
        for verb in VERBS:
            for status, response in item.get(verb, {}).get("responses", {}).items():
                schema = response.get("content", {}).get("application/json", {}).get("schema")
                if status.startswith("2") and schema is not None:
                    found.append((path, verb, schema))
    return found


def test_every_answer_is_a_named_model_and_every_list_one_envelope() -> None:
    components = openapi.load()["components"]["schemas"]
    answers = json_responses()
    # /schema answers the job protocol's JSON Schema, a document that is not ours to name.
    unnamed = [(p, v) for p, v, s in answers if "$ref" not in s and p != "/schema"]
    assert unnamed == [], "answer with a named model from backends/models.py"
    lists = {
        p: s["$ref"].rsplit("/", 1)[1]
        for p, v, s in answers
        if v == "get" and "$ref" in s and s["$ref"].endswith("List")
    }
    assert set(lists) == {
        "/jobs",
        "/jobs/{job_id}/events",
        "/virtual-clusters",
        "/storage",
        "/abnormal-jobs",
        "/nodes",
    }
    for name in lists.values():
        # One envelope: items first; a paged list adds its total and next page's token.
        paged = ["items", "total", "continue"] if name == "JobList" else ["items"]
        assert list(components[name]["properties"]) == paged, name
        assert components[name]["properties"]["items"]["type"] == "array", name
    submit = next(s for p, v, s in answers if (p, v) == ("/jobs", "post"))
    assert submit["$ref"].endswith("/SubmitResult")
    assert set(components["SubmitResult"]["properties"]) == {"job", "warnings"}
