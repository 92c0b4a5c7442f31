"""The documented commands, read from the Markdown: each is of a kind the suite runs, the helm
install is accepted by the chart, and the `akri` commands work. The kubectl commands run against
the chart installed in the local cluster (`test_chart_in_sim.py`, a slow test)."""

from __future__ import annotations

import subprocess
import sys

from tests.chart.docs_commands import commands, helm_install
from tests.chart.helm_render import render

RUN_BY_THE_SUITE = {"helm", "kubectl", "akri"}


def test_every_documented_command_is_one_the_suite_runs() -> None:
    documented = commands()
    assert documented, "no commands found: the Markdown layout changed"
    assert {words[0] for words in documented} <= RUN_BY_THE_SUITE


def test_the_documented_helm_install_is_accepted_by_the_chart() -> None:
    installs = {tuple(words) for words in commands() if words[:2] == ["helm", "install"]}
    assert installs
    requests = []
    for words in installs:
        install = helm_install(list(words))
        assert install.chart == "./helm/akri"
        requests.append({"release": install.release, "values": install.values})
    for release, result in render(requests).items():
        assert "error" not in result, f"{release}: {result}"


def test_the_documented_akri_commands_run() -> None:
    for words in commands():
        if words[0] == "akri":
            done = subprocess.run(
                [sys.executable, "-m", "akri.cli", *words[1:]], capture_output=True, text=True
            )
            assert done.returncode == 0, f"{words}: {done.stderr}"
