"""The cluster view shows the VC's GPU usage, and the status bar item the
user's running and waiting jobs."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from .conftest import Lab, open_panel, shot


def test_cluster_usage_and_status_bar(page, jobs: Lab) -> None:
    stamp = int(time.time())
    status = page.locator(".jp-PAI-status")
    expect(status).to_have_text("0 running · 0 waiting")

    running = jobs.submit(f"ui-usage-{stamp}", "sleep 300", gpu=1, instances=3)
    jobs.wait_state(running["id"], "RUNNING", timeout=30)
    waiting = jobs.submit(f"ui-queued-{stamp}", "sleep 300", gpu=2)
    assert jobs.job(waiting["id"])["state"] == "WAITING"

    open_panel(page, "cluster")
    # With the Jobs tab's badge, the four tabs still fit: the panel does not scroll
    # sideways to show the Cluster tab (which would cut off its left edge).
    expect(page.locator("#jp-PAI-tab-jobs .jp-PAI-badge")).to_have_text("2")
    geometry = page.evaluate(
        """() => {
          const panel = document.querySelector('#jupyter-pai-panel');
          const tab = document.querySelector('#jp-PAI-tab-cluster');
          return {scrollLeft: panel.scrollLeft, scrollWidth: panel.scrollWidth,
                  clientWidth: panel.clientWidth,
                  tabRight: tab.getBoundingClientRect().right,
                  panelRight: panel.getBoundingClientRect().right,
                  clipped: tab.scrollWidth > tab.clientWidth};
        }"""
    )
    assert geometry["scrollLeft"] == 0, geometry
    assert geometry["scrollWidth"] <= geometry["clientWidth"], geometry
    assert geometry["tabRight"] <= geometry["panelRight"], geometry
    assert not geometry["clipped"], geometry
    vc = page.locator(".jp-PAI-vc[data-vc='default']")
    meter = vc.get_by_role("meter")
    expect(meter).to_have_attribute("aria-valuenow", "3")
    expect(meter).to_have_attribute("aria-valuemax", "4")
    expect(meter).to_have_attribute(
        "aria-label", "default: 3 of 4 GPUs used, 1 free, 2 asked for by 1 waiting job"
    )
    expect(vc.locator(".jp-PAI-vc-head")).to_contain_text("1/4 GPUs free")
    expect(vc.locator(".jp-PAI-vc-stats")).to_contain_text("queued 2 GPUs (1 job)")
    expect(vc.locator(".jp-PAI-vc-stats")).to_contain_text("running 1")
    width = vc.locator(".jp-PAI-bar-used").evaluate("e => e.style.width")
    assert width == "75%", width
    summary = page.locator(".jp-PAI-cluster > .jp-PAI-hint", has_text="GPUs in use")
    expect(summary).to_contain_text("3 of 4 GPUs in use across 1 virtual cluster; 1 job waiting")
    expect(status).to_have_text("1 running · 1 waiting")
    expect(status.locator("button")).to_have_attribute(
        "title", "1 running, 1 waiting job (click to show the PAI panel)"
    )
    shot(page, "cluster-status-1-busy")

    # Free the GPUs: the waiting job runs, then nothing is used once both are stopped.
    jobs.stop(running["id"])
    expect(status).to_have_text("1 running · 0 waiting", timeout=20_000)
    expect(meter).to_have_attribute("aria-valuenow", "2")
    jobs.stop(waiting["id"])
    expect(status).to_have_text("0 running · 0 waiting", timeout=20_000)
    expect(meter).to_have_attribute("aria-valuenow", "0")

    # The status bar item opens the job list.
    status.locator("button").click()
    expect(page.locator("#jp-PAI-tab-jobs")).to_have_attribute("aria-selected", "true")
    shot(page, "cluster-status-2-idle")
