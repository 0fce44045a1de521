"""What the parser's process does with a notebook a drive opens or saves: nbformat's own
signature (the one Jupyter's contents API checks), every cell's ``trusted`` replaced, and
a notebook too big to sign opened untrusted and saved unsigned, never trusted."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from nbformat.sign import MemorySignatureStore, NotebookNotary

from jupyter_pai.errors import BadRequest
from jupyter_pai.server import notebook_trust
from jupyter_pai.server.notebook_trust import opened_notebook, saved_notebook, trusted_notebook
from tests.notebooks import claiming_trust

SECRET = b"the server's notebook secret"


def notebook(values: int = 3) -> dict[str, Any]:
    return claiming_trust(
        {"application/json": list(range(values))},
        "line one\nline two",
        markdown="#",
        metadata={"signature": "sha256:old"},
    )


def nbformats_signature(data: bytes) -> str:
    """What Jupyter's contents API computes for a file it reads."""
    notary = NotebookNotary(secret=SECRET, store_factory=MemorySignatureStore)
    signature: str = notary.compute_signature(nbformat.reads(data.decode(), as_version=4))
    return signature


def trust(doc: dict[str, Any]) -> list[Any]:
    return [c["metadata"].get("trusted", "absent") for c in doc["cells"]]


def test_signatures_are_nbformats_and_trust_is_the_servers_alone() -> None:
    data = json.dumps(notebook()).encode()
    signature, untrusted = opened_notebook(data, SECRET, "sha256")
    assert signature == nbformats_signature(data)
    assert trust(json.loads(untrusted)) == [False, "absent"]
    assert trust(json.loads(trusted_notebook(data))) == [True, "absent"]

    written, signed = saved_notebook(data, SECRET, "sha256")
    assert b"trusted" not in written and b"signature" not in written
    assert signed == nbformats_signature(written)
    assert json.loads(written)["cells"][0]["source"] == ["line one\n", "line two"]  # nbformat's


def test_an_untrusted_cell_with_output_is_saved_unsigned() -> None:
    doc = notebook()
    doc["cells"][0]["metadata"]["trusted"] = False
    written, signed = saved_notebook(json.dumps(doc).encode(), SECRET, "sha256")
    assert signed is None and b"trusted" not in written


def test_a_notebook_too_big_to_sign_is_never_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notebook_trust, "MAX_SIGNED_VALUES", 50)
    data = json.dumps(notebook(values=100)).encode()
    signature, untrusted = opened_notebook(data, SECRET, "sha256")
    assert signature == "" and trust(json.loads(untrusted)) == [False, "absent"]
    written, signed = saved_notebook(data, SECRET, "sha256")
    assert signed is None and trust(json.loads(written)) == ["absent", "absent"]
    assert json.loads(written)["cells"][0]["outputs"] == notebook(100)["cells"][0]["outputs"]


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b"\xff\xfe\x00",
        b"[" * 150 + b"]" * 150,
        json.dumps({"nbformat": 4, "metadata": {}, "cells": [{"cell_type": "code"}]}).encode(),
        json.dumps({"nbformat": 9, "metadata": {}, "cells": []}).encode(),
        json.dumps({**notebook(), "cells": [{**notebook()["cells"][0], "outputs": [1]}]}).encode(),
    ],
)
def test_what_is_not_a_notebook_is_a_bad_request(data: bytes) -> None:
    with pytest.raises(BadRequest):
        opened_notebook(data, SECRET, "sha256")
    with pytest.raises(BadRequest):
        saved_notebook(data, SECRET, "sha256")
