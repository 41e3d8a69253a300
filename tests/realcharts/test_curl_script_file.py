"""grafana's download-dashboards init container runs ``sh -c "mkdir … && /bin/sh -x
/etc/grafana/download_dashboards.sh"``, whose ``curl -skf \\`` continues over lines. The mounted
script was read only when it was the whole command, and statements were split before
backslash-newlines were joined, so the fetch was not seen: Ready under cilium-always, where DNS
and egress are dropped and the init container crash-loops."""

from __future__ import annotations

import pytest
from realcharts_helpers import simulate_chart

CHART = "curl-script-file"


@pytest.mark.parametrize("mode", ["inline", "inline-cont", "file-direct", "file"])
def test_the_download_is_a_need_wherever_the_curl_is_written(mode: str) -> None:
    assert simulate_chart(CHART, "cilium-always", sets=(f"mode={mode}",)).releases[0].outcome == "Stalled"
    assert simulate_chart(CHART, "kind", sets=(f"mode={mode}",)).releases[0].outcome == "Ready"
