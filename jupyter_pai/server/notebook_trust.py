"""Notebooks a storage drive opens and saves, trusted as Jupyter's own contents API trusts
them. JupyterLab runs a code cell's HTML and JavaScript outputs when the cell's
``metadata.trusted`` says so, and a storage holds files anyone with access to it wrote (a
colleague, a job, an image): the file's own word is never taken. Opening marks every code
cell with the Jupyter server's notary's verdict on the notebook's signature; saving writes
no ``trusted`` and signs the notebook when every code cell is trusted, as
``ContentsManager.check_and_sign`` does. Both use nbformat's own reading and signing, so a
notebook signed here is trusted by Jupyter's file browser and the other way round.

The parsing and hashing run in the parser's process (``parsing.in_worker``): a notebook is
megabytes of JSON, walked value by value. Only the signature store is asked on the loop, as
Jupyter asks it (its SQLite connection belongs to the thread that opened it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import nbformat as _nbformat
from nbformat.sign import MemorySignatureStore, NotebookNotary

from ..backends.base import Backend, FileContent, UploadPiece
from ..backends.models import UploadState
from ..errors import BadRequest, FieldError, TooLarge
from .parsing import in_worker

#: How deep a notebook's lists and objects may nest. Cells and outputs take six levels; the
#: rest is for a JSON output's own data. Well inside the recursion that nbformat's copy and
#: signature walk need per level.
MAX_DEPTH = 100
#: The most values (numbers, strings, lists, objects) of a notebook whose signature is
#: worked out: about 1.3 s of the parser's process to open, 2.5 s to save, which every
#: other request to parse waits behind. An image is one value; only huge JSON outputs come
#: near. A notebook with more opens untrusted and is saved unsigned (and unindented: JSON's
#: indenting encoder is Python's, 20 times slower than its plain one).
MAX_SIGNED_VALUES = 1_000_000
#: nbformat has no type hints: its functions are called through Any.
nbformat: Any = _nbformat


# -- what the parser's process runs --------------------------------------------------------


def _refused(message: str, where: str = "body") -> BadRequest:
    return BadRequest(f"not a notebook: {message}", [FieldError(where, message)])


def _json(data: bytes) -> tuple[dict[str, Any], bool]:
    """The file's JSON object, and whether it is small enough to sign
    (:data:`MAX_SIGNED_VALUES`), its nesting checked that far."""
    try:
        doc = json.loads(data)
    except RecursionError:
        raise _refused(f"it nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:  # not UTF-8, not JSON
        raise _refused(f"not JSON ({str(error)[:200]})") from None
    if not isinstance(doc, dict):
        raise _refused("a notebook is a JSON object")
    # Iterative: a recursive walk is what the depth bound protects.
    stack: list[tuple[Any, int]] = [(doc, 0)]
    values = 0
    while stack:
        values += 1
        if values > MAX_SIGNED_VALUES:
            return doc, False
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _refused(f"it nests deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return doc, True


def _check_shape(nb: Any) -> None:
    """What nbformat's notary reads without checking: cells with metadata, code cells with
    outputs. (The rest of the schema is JupyterLab's to judge, as with Jupyter's own API.)"""
    if not isinstance(nb.get("metadata"), dict):
        raise _refused("no metadata object", "metadata")
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise _refused("no list of cells", "cells")
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("metadata"), dict):
            raise _refused("a cell without a metadata object", f"cells[{i}]")
        if cell.get("cell_type") == "code":
            outputs = cell.get("outputs")
            if not isinstance(outputs, list) or not all(
                isinstance(o, dict) and isinstance(o.get("output_type"), str) for o in outputs
            ):
                raise _refused("a code cell's outputs are not a list of outputs", f"cells[{i}]")


def _read(doc: dict[str, Any]) -> Any:
    """The notebook as Jupyter reads it (``nbformat.reads(…, as_version=4)``): version 4,
    multi-line text joined, every cell's ``trusted`` and an old signature dropped. Not
    validated against the schema, which Jupyter only reports on."""
    major, minor = nbformat.reader.get_version(doc)
    if major not in nbformat.versions:
        raise _refused(f"nbformat {major!r} is not a notebook format", "nbformat")
    try:
        nb = nbformat.convert(nbformat.versions[major].to_notebook_json(doc, minor=minor), 4)
    except (AttributeError, KeyError, TypeError, ValueError, nbformat.ValidationError) as e:
        raise _refused(f"it cannot be read as nbformat 4 ({str(e)[:200]})") from None
    _check_shape(nb)
    return nb


def _notary(secret: bytes, algorithm: str) -> Any:
    """nbformat's notary with the server's secret, for its hashing only: the server's own
    signature store stays in the server."""
    notary: Any = NotebookNotary
    return notary(secret=secret, algorithm=algorithm, store_factory=MemorySignatureStore)


def _dumps(value: Any, **options: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=False, **options).encode()
    except RecursionError:  # past the values the depth was checked for
        raise _refused("it nests too deep") from None


def _marked(nb: Any, trusted: bool) -> bytes:
    for cell in nb["cells"]:
        cell["metadata"].pop("trusted", None)
        if cell.get("cell_type") == "code":
            cell["metadata"]["trusted"] = trusted
    return _dumps(nb)


def opened_notebook(data: bytes, secret: bytes, algorithm: str) -> tuple[str, bytes]:
    """A notebook's signature (empty: too big to sign), and the notebook as JSON with every
    code cell untrusted."""
    doc, small = _json(data)
    if not small:
        _check_shape(doc)
        return "", _marked(doc, False)
    nb = _read(doc)
    signature = _notary(secret, algorithm).compute_signature(nb)
    return signature, _marked(nb, False)


def trusted_notebook(data: bytes) -> bytes:
    """The notebook as JSON with every code cell trusted (its signature is known)."""
    return _marked(_read(_json(data)[0]), True)


def saved_notebook(data: bytes, secret: bytes, algorithm: str) -> tuple[bytes, str | None]:
    """What a drive's save writes: the notebook as nbformat writes it (no ``trusted``), and
    its signature if every code cell is trusted (nbformat's ``check_cells``), else None."""
    doc, small = _json(data)
    if nbformat.reader.get_version(doc)[0] != 4:
        raise _refused("JupyterLab saves nbformat 4", "nbformat")
    _check_shape(doc)
    if not small:
        for cell in doc["cells"]:
            cell["metadata"].pop("trusted", None)
        return _dumps(doc) + b"\n", None
    nb = nbformat.from_dict(doc)
    notary = _notary(secret, algorithm)
    trusted = notary.check_cells(nb)  # takes each code cell's trusted out
    for cell in nb.cells:
        cell.metadata.pop("trusted", None)
    text = nbformat.v4.writes_json(nb)
    written = (text if text.endswith("\n") else text + "\n").encode()
    # The signature of the file as it will be read back, so opening it finds this one.
    return written, notary.compute_signature(_read(_json(written)[0])) if trusted else None


# -- what the server runs --------------------------------------------------------------------


async def _whole(found: FileContent, most: int) -> bytes:
    too_large = TooLarge(
        f"{found.name} is over {most} bytes, the most a notebook may have to be opened "
        "here: download it, or open it from Jupyter's own file browser",
        [FieldError("path", f"at most {most} bytes")],
    )
    if found.size is not None and found.size > most:
        await found.chunks.aclose()  # type: ignore[attr-defined]
        raise too_large
    data = bytearray()
    async for chunk in found.chunks:
        data += chunk
        if len(data) > most:
            await found.chunks.aclose()  # type: ignore[attr-defined]
            raise too_large
    return bytes(data)


async def open_notebook(
    found: FileContent, notary: NotebookNotary, most: int, log: logging.Logger
) -> tuple[bytes, bool]:
    """The notebook ``found`` as JSON for JupyterLab, and whether its code cells are
    trusted: only where the notary's store knows its signature."""
    data = await _whole(found, most)
    signature, untrusted = await in_worker(opened_notebook, data, notary.secret, notary.algorithm)
    try:
        known = bool(signature) and bool(notary.store.check_signature(signature, notary.algorithm))
    except Exception:  # a broken store trusts nothing, as a missing one does
        log.warning("jupyter-pai: the notebook signature store cannot be read", exc_info=True)
        known = False
    if not known:
        return untrusted, False
    return await in_worker(trusted_notebook, data), True


async def one_chunk(data: bytes) -> AsyncIterator[bytes]:
    """``data`` as the chunks of a file."""
    yield data


async def save_notebook(
    backend: Backend,
    storage: str,
    path: str,
    body: bytes,
    notary: NotebookNotary,
    log: logging.Logger,
) -> UploadState:
    """Write the notebook a drive sends, without ``trusted``; sign it once it is written if
    the user trusted every code cell."""
    data, signature = await in_worker(saved_notebook, body, notary.secret, notary.algorithm)
    piece = UploadPiece(offset=0, size=len(data), total=len(data), chunks=one_chunk(data))
    state = await backend.write_storage(storage, path, piece)
    if signature is not None:
        try:
            notary.store.store_signature(signature, notary.algorithm)
        except Exception:  # saved, unsigned: it opens untrusted, nothing is lost
            log.warning(
                "jupyter-pai: the notebook signature store cannot be written", exc_info=True
            )
    return state
