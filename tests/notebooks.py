"""Notebooks as a colleague, a job or an image plants them in a storage: cells whose
``metadata.trusted`` says yes, whatever the notebook's signature."""

from __future__ import annotations

from typing import Any


def claiming_trust(
    data: dict[str, Any],
    source: str,
    *,
    markdown: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A code cell with one ``execute_result`` of ``data`` (a mime bundle), then a markdown
    cell of ``markdown`` where given, every cell saying it is trusted."""
    cells: list[dict[str, Any]] = [
        {
            "cell_type": "code",
            "execution_count": 1,
            "id": "c1",
            "metadata": {"trusted": True},
            "outputs": [
                {
                    "data": data,
                    "execution_count": 1,
                    "metadata": {},
                    "output_type": "execute_result",
                }
            ],
            "source": source,
        }
    ]
    if markdown is not None:
        cells.append(
            {"cell_type": "markdown", "id": "m1", "metadata": {"trusted": True}, "source": markdown}
        )
    return {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}
