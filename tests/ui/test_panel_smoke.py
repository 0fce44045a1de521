"""The side panel is there and talks to the server: what a first-time user sees."""

from __future__ import annotations

import json

from .conftest import Lab, shot


def test_side_panel_shows_the_local_backend(page, lab: Lab) -> None:
    info = json.loads(lab.api("info"))
    assert info["backend"] == "local"
    page.click('[data-id="jupyter-pai-panel"]')
    backend = page.locator(".jp-PAI-info-backend")
    backend.wait_for()
    assert "local" in backend.inner_text()
    shot(page, "panel-smoke")
