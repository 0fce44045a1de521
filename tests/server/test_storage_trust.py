"""What a storage's files may do on the Jupyter origin. A notebook opened through a drive
(``?notebook=1``) is trusted only where the Jupyter server's own notary knows its signature,
whatever its cells' ``metadata.trusted`` says; saving one (``PUT ?notebook=1``) writes no
``trusted`` and signs what the user trusted, as Jupyter's contents API does (the two agree
on the same file). A file answered as it is runs in a CSP sandbox: no scripts, forms or
refresh on the Jupyter origin."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.notebooks import claiming_trust

from .pai import PAIClient

SCRIPT = "<script>window.__pai_marker = 1</script><b>html output</b>"


@pytest.fixture
def pai_extra_config(jp_root_dir: Path) -> dict[str, Any]:
    # The storage is the server's own root: Jupyter's contents API reads the same files.
    return {
        "PAIConfig": {"storage_piece_bytes": 256 * 1024},
        "LocalBackend": {
            "stop_grace_seconds": 2,
            "storages_config": {"work": {"path": str(jp_root_dir), "mountPath": "/mnt/work"}},
        },
    }


def hostile_notebook() -> dict[str, Any]:
    """What a colleague or a job plants: code cells that say they are trusted, with an
    HTML output whose script JupyterLab runs when it believes them."""
    return claiming_trust(
        {"text/html": SCRIPT, "text/plain": "<HTML>"}, "display(HTML(...))", markdown="# hi"
    )


def code_trust(doc: dict[str, Any]) -> list[Any]:
    return [c["metadata"].get("trusted") for c in doc["cells"] if c["cell_type"] == "code"]


def every_trust(doc: dict[str, Any]) -> list[Any]:
    return [c["metadata"].get("trusted", "absent") for c in doc["cells"]]


def notary(jp_serverapp: Any) -> Any:
    return jp_serverapp.contents_manager.notary


async def open_notebook(pai: PAIClient, *path: str) -> tuple[dict[str, Any], str]:
    r = await pai.request("GET", "storage", "work", *path, params={"notebook": "1"})
    assert r.code == 200, r
    return json.loads(r.body), r.headers.get("X-Notebook-Trusted", "")


async def test_a_planted_notebook_opens_untrusted(pai: PAIClient, jp_root_dir: Path) -> None:
    (jp_root_dir / "hostile.ipynb").write_text(json.dumps(hostile_notebook()))
    doc, said = await open_notebook(pai, "hostile.ipynb")
    assert code_trust(doc) == [False], doc["cells"]
    assert said == "false"
    # Its outputs are still there, shown as untrusted; the markdown cell's claim is gone.
    assert doc["cells"][0]["outputs"][0]["data"]["text/html"] == SCRIPT
    assert every_trust(doc) == [False, "absent"]
    # Without the parameter the file is its bytes (downloads, copies), changed in nothing.
    r = await pai.request("GET", "storage", "work", "hostile.ipynb")
    assert json.loads(r.body) == hostile_notebook()


async def test_a_notebook_the_users_notary_signed_opens_trusted(
    pai: PAIClient, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    nb = nbformat.from_dict(hostile_notebook())
    for cell in nb.cells:
        cell.metadata.pop("trusted")
    notary(jp_serverapp).sign(nb)  # what `jupyter trust` does
    nbformat.write(nb, jp_root_dir / "mine.ipynb")
    doc, said = await open_notebook(pai, "mine.ipynb")
    assert code_trust(doc) == [True] and said == "true"
    # The same file, edited by someone else afterwards: its signature no longer matches.
    changed = copy.deepcopy(nb)
    changed.cells[0].outputs[0].data["text/html"] = "<script>other()</script>"
    nbformat.write(changed, jp_root_dir / "mine.ipynb")
    doc, said = await open_notebook(pai, "mine.ipynb")
    assert code_trust(doc) == [False] and said == "false"


async def test_trust_agrees_with_jupyters_contents_api(
    pai: PAIClient, jp_root_dir: Path, jp_fetch: Any
) -> None:
    # Saved (and signed) through Jupyter's own contents API: trusted through the drive too.
    # As JupyterLab sends it: only code cells carry `trusted` (Jupyter signs the notebook
    # with any other cell's flag still in, then writes it without, so it would never match).
    content = hostile_notebook()
    del content["cells"][1]["metadata"]["trusted"]
    model = {"type": "notebook", "format": "json", "content": content}
    r = await jp_fetch("api", "contents", "viajupyter.ipynb", method="PUT", body=json.dumps(model))
    assert r.code in (200, 201)
    r = await jp_fetch("api", "contents", "viajupyter.ipynb")
    assert code_trust(json.loads(r.body)["content"]) == [True]
    doc, said = await open_notebook(pai, "viajupyter.ipynb")
    assert code_trust(doc) == [True] and said == "true"
    # And a planted file is untrusted by both.
    planted = hostile_notebook()
    planted["cells"][0]["source"] = "not what was signed"
    (jp_root_dir / "planted.ipynb").write_text(json.dumps(planted))
    r = await jp_fetch("api", "contents", "planted.ipynb")
    assert code_trust(json.loads(r.body)["content"]) == [False]
    doc, _ = await open_notebook(pai, "planted.ipynb")
    assert code_trust(doc) == [False]


async def save_notebook(pai: PAIClient, name: str, doc: dict[str, Any]) -> Any:
    return await pai.request(
        "PUT",
        "storage",
        "work",
        name,
        body=json.dumps(doc).encode(),
        headers={"Content-Type": "application/octet-stream"},
        params={"notebook": "1"},
    )


async def test_saving_strips_trust_and_signs_what_the_user_trusted(
    pai: PAIClient, jp_root_dir: Path, jp_serverapp: Any, jp_fetch: Any
) -> None:
    # Every code cell trusted (the user ran it, or said "Trust"): saved without the flag,
    # signed, so it opens trusted again, through the drive and through Jupyter.
    r = await save_notebook(pai, "trusted.ipynb", hostile_notebook())
    assert r.code == 200, r
    assert r.json()["complete"] is True
    on_disk = json.loads((jp_root_dir / "trusted.ipynb").read_text())
    assert every_trust(on_disk) == ["absent", "absent"]
    assert "signature" not in on_disk["metadata"]
    assert notary(jp_serverapp).check_signature(nbformat.read(jp_root_dir / "trusted.ipynb", 4))
    doc, said = await open_notebook(pai, "trusted.ipynb")
    assert code_trust(doc) == [True] and said == "true"
    r = await jp_fetch("api", "contents", "trusted.ipynb")
    assert code_trust(json.loads(r.body)["content"]) == [True]

    # A cell with rich output that is not trusted: saved without the flag, not signed.
    untrusted = hostile_notebook()
    untrusted["cells"][0]["metadata"]["trusted"] = False
    untrusted["cells"][0]["source"] = "another cell"  # not the notebook signed above
    r = await save_notebook(pai, "untrusted.ipynb", untrusted)
    assert r.code == 200, r
    on_disk = json.loads((jp_root_dir / "untrusted.ipynb").read_text())
    assert every_trust(on_disk) == ["absent", "absent"]
    assert on_disk["cells"][0]["outputs"][0]["data"]["text/html"] == [SCRIPT]  # nbformat's
    doc, said = await open_notebook(pai, "untrusted.ipynb")
    assert code_trust(doc) == [False] and said == "false"


async def test_what_is_not_a_notebook_is_refused(pai: PAIClient, jp_root_dir: Path) -> None:
    (jp_root_dir / "broken.ipynb").write_text('{"cells": [')
    (jp_root_dir / "list.ipynb").write_text("[1, 2]")
    (jp_root_dir / "deep.ipynb").write_text("[" * 5000 + "]" * 5000)
    (jp_root_dir / "big.ipynb").write_text(json.dumps(hostile_notebook()) + " " * 300 * 1024)
    for name, status in (
        ("broken.ipynb", 400),
        ("list.ipynb", 400),
        ("deep.ipynb", 400),
        ("big.ipynb", 413),
    ):
        r = await pai.request("GET", "storage", "work", name, params={"notebook": "1"})
        assert r.code == status, (name, r)
        assert r.json()["message"], r
    r = await save_notebook(pai, "new.ipynb", {"cells": "nope"})  # type: ignore[dict-item]
    assert r.code == 400, r
    assert not (jp_root_dir / "new.ipynb").exists()
    # A notebook is saved whole: one piece of a bigger file is refused.
    r = await pai.request(
        "PUT",
        "storage",
        "work",
        "piece.ipynb",
        body=b"{}",
        headers={"Content-Range": "bytes 0-1/10"},
        params={"notebook": "1"},
    )
    assert r.code == 400, r
    # A folder is its listing, notebook or not.
    (jp_root_dir / "folder.ipynb").mkdir()
    r = await pai.request("GET", "storage", "work", "folder.ipynb", params={"notebook": "1"})
    assert r.code == 200 and r.json()["type"] == "directory"


async def test_files_are_answered_in_a_csp_sandbox(pai: PAIClient, jp_root_dir: Path) -> None:
    page = '<meta http-equiv="refresh" content="0;url=https://example.com/"><form></form>'
    (jp_root_dir / "page.html").write_text(page)
    (jp_root_dir / "folder").mkdir()
    for params in ({}, {"download": "1"}):
        r = await pai.request("GET", "storage", "work", "page.html", params=params)
        assert r.code == 200 and r.body == page.encode()
        assert r.headers["Content-Type"].startswith("text/html")
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        directives = [d.strip() for d in r.headers["Content-Security-Policy"].split(";")]
        # A bare sandbox: an opaque origin with no scripts, forms, pop-ups or refresh.
        assert "sandbox" in directives, directives
    r = await pai.request("GET", "storage", "work", "folder", params={"archive": "zip"})
    assert r.code == 200
    assert "sandbox" in [d.strip() for d in r.headers["Content-Security-Policy"].split(";")]
