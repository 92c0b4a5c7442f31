"""`--help` of every program: usage, the environment variables with their defaults, exit 0.

The four programs run as real console scripts, given all they need to start for real (a node
name, directories, a kubeconfig of an API server nobody serves): one that started anyway would
create its directories, or run until the timeout instead of exiting 0. They start together,
as each takes a second or more to import. Other subcommands go through the same parser
in-process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from akri import cli
from akri.discovery_handlers import main as handler_main

BIN = Path(sys.executable).parent
TIMEOUT_S = 60.0
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""

PROCESSES = {
    "akri-agent": ([], ["AGENT_NODE_NAME", "(default: required)", "(default: 5m)"]),
    # Issue 27: a year showed as "3.1536e+07s".
    "akri-controller": (
        [],
        ["NODE_GRACE", "LEADER_ELECTION", "(default: true)", "(default: 8760h)"],
    ),
    "akri-discovery-handler": (["debugEcho"], ["DEBUG_ECHO_AVAILABILITY_FILE", "POD_IP"]),
    "akri": (["sim"], ["--nodes", "--offline-grace"]),
}


@pytest.fixture(scope="module")
def finished(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Every program of PROCESSES run with `--help`, each in its own empty directory."""
    started = {}
    for program, (args, _) in PROCESSES.items():
        home = tmp_path_factory.mktemp(program)
        (home / "kubeconfig").write_text(KUBECONFIG)
        env = os.environ | {
            "AGENT_NODE_NAME": "node-9",
            "KUBECONFIG": str(home / "kubeconfig"),
            "DEVICE_PLUGINS_DIR": str(home / "device-plugins"),
            "DISCOVERY_HANDLERS_DIRECTORY": str(home / "akri"),
            "METRICS_PORT": "0",
            "LEADER_ELECTION": "false",
            "COLUMNS": "80",
        }
        argv = [str(BIN / program), *args, "--help"]
        process = subprocess.Popen(
            argv, env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        started[program] = (process, argv, home)
    done = {}
    for program, (process, argv, home) in started.items():
        try:
            out, err = process.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        done[program] = (subprocess.CompletedProcess(argv, process.returncode, out, err), home)
    return done


@pytest.mark.parametrize("program", sorted(PROCESSES))
def test_help_prints_usage_and_starts_nothing(
    program: str, finished: dict[str, tuple[subprocess.CompletedProcess[str], Path]]
) -> None:
    args, expected = PROCESSES[program]
    done, home = finished[program]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(" ".join(["usage:", program, *args]))
    for text in expected:
        assert text in done.stdout
    assert [p.name for p in home.iterdir()] == ["kubeconfig"]
    # Issue 27: each variable's text was one long line, which the terminal continued at
    # column 0; it is wrapped to the terminal's width with continuation lines indented.
    _, _, environment = done.stdout.partition("environment variables:\n")
    for line in environment.splitlines():
        assert line.startswith("  "), line
        assert len(line) <= 80, line


Main = Callable[[Sequence[str]], int]

SUBCOMMANDS: dict[str, tuple[Main, list[str], list[str]]] = {
    "handlers": (handler_main.main, [], ["HANDLER", "DISCOVERY_HANDLERS_DIRECTORY"]),
    "mdns": (handler_main.main, ["mdns"], ["MDNS_INTERFACES", "(default: all interfaces)"]),
    "onvif": (handler_main.main, ["onvif"], ["ONVIF_INTERFACE_ADDRESS", "ONVIF_IPV6_INTERFACE"]),
    "udev": (handler_main.main, ["udev"], ["--registration-dir", "POD_IP"]),
    "akri": (cli.main, [], ["instance-name", "sim"]),
    "akri crds": (cli.main, ["crds"], ["--write"]),
    "akri instance-name": (cli.main, ["instance-name"], ["device_id", "--node"]),
}


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_help_of_each_subcommand(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    main, args, expected = SUBCOMMANDS[command]
    with pytest.raises(SystemExit) as exit:
        main([*args, "--help"])
    out, err = capsys.readouterr()
    assert (exit.value.code, err) == (0, "")
    assert out.startswith("usage:")
    for text in expected:
        assert text in out
