"""Image references read as Docker reads them: Docker Hub's defaults, hosts with ports,
digests, and invalid references with messages saying what is wrong (golden file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_pai.images import ImageReference
from tests.golden import check_golden

GOLDEN = Path(__file__).parent / "golden" / "image_references.json"
DIGEST = "sha256:" + "0123456789abcdef" * 4

REFERENCES = [
    "python",
    "python:3.11",
    "library/python:3.11-slim",
    "docker.io/python",
    "index.docker.io/pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime",
    "nvcr.io/nvidia/pytorch:24.08-py3",
    "localhost/team/tool",
    "localhost:5000/team/pytorch:2.4",
    "127.0.0.1:5000/team/pytorch",
    "harbor.example.com/team/cv/detector:v1.2.3",
    "registry.example.com:443/a.b/c_d__e-f:T_1.x",
    f"team/pytorch@{DIGEST}",
    f"127.0.0.1:5000/team/pytorch:2.4@{DIGEST}",
    "[::1]:5000/team/pytorch:2.4",
    # invalid
    "",
    " python",
    "python 3",
    "Team/PyTorch:2.4",
    "team//pytorch",
    "team/pytorch/",
    "team/-pytorch",
    "python:",
    "python:-rc",
    "python:" + "x" * 129,
    "python@sha256:abc",
    "python@" + DIGEST[:-1],
    "python@md5",
    "exa_mple.com:port/team/x",
    ":5000/x",
    "a" * 256,
]


def outcome(text: str) -> dict[str, Any]:
    try:
        ref = ImageReference.parse(text)
    except ValueError as error:
        return {"reference": text, "error": str(error)}
    return {
        "reference": text,
        "registry": ref.registry,
        "repository": ref.repository,
        "tag": ref.tag,
        "digest": ref.digest,
        "uri": ref.uri,
    }


def test_references_match_the_golden_file() -> None:
    text = json.dumps([outcome(t) for t in REFERENCES], indent=2) + "\n"
    check_golden(GOLDEN, text, json.loads)


@pytest.mark.parametrize("text", [t for t in REFERENCES if "error" not in outcome(t)])
def test_a_parsed_uri_parses_to_itself(text: str) -> None:
    ref = ImageReference.parse(text)
    assert ImageReference.parse(ref.uri) == ref


def test_every_invalid_reference_names_itself() -> None:
    invalid = [t for t in REFERENCES if "error" in outcome(t)]
    assert len(invalid) == 16
    for text in invalid:
        message = outcome(text)["error"]
        assert message.startswith("invalid image reference"), message
        if text.strip() and len(text) <= 100:
            assert repr(text) in message, message
        assert len(message) < 300, message
