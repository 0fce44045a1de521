"""What :meth:`jupyter_pai.Client.submit` accepts as a job, read into a document."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import FieldError, SpecError
from ..spec.protocol import JobProtocol
from ..submission.jobs import JobSource

#: What :meth:`Client.submit` takes: a job file's path, YAML/JSON text, the document as a
#: dict, or a validated :class:`~jupyter_pai.spec.protocol.JobProtocol`.
Spec = str | os.PathLike[str] | bytes | Mapping[str, Any] | JobProtocol


def job_source(spec: Spec) -> JobSource:
    """The job document from what the caller gave: a path is read, text and mappings are
    the document itself."""
    if isinstance(spec, JobProtocol):
        return spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and _looks_like_path(spec)):
        path = Path(os.fspath(spec)).expanduser()
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SpecError([FieldError("file", f"cannot read {path}: {exc.strerror}")]) from None
    return spec


def _looks_like_path(text: str) -> bool:
    """A one-line string naming a job file (``train.yaml``) rather than a YAML document."""
    if "\n" in text or ": " in text or text.lstrip().startswith(("{", "[")):
        return False
    return text.endswith((".yaml", ".yml", ".json")) or os.path.isfile(text)
