"""The `akri` command line: subcommands, output and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from akri.api import crd_files
from akri.cli import main
from akri.naming import instance_name


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_instance_name_of_a_shared_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "instance-name", "cfg", "foo0") == (0, "cfg-8120fe\n", "")


def test_instance_name_of_a_local_device(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "instance-name", "cfg", "foo0", "--node", "node-a")
    assert code == 0
    assert out == instance_name("cfg", "foo0", "node-a") + "\n"
    assert out != "cfg-8120fe\n"


def test_instance_name_refuses_a_name_the_agent_refuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "instance-name", "c" * 60, "foo0")
    assert (code, out) == (2, "")
    assert "the limit is 63" in err
    assert "the agent refuses this Configuration" in err


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        ((), "required: COMMAND"),
        (("nonsense",), "invalid choice"),
        (("instance-name", "cfg"), "required: device_id"),
        (("instance-name", "", "foo0"), "is not an object name"),
        (("instance-name", "cfg", "foo0", "--node", ""), "is not an object name"),
        (("instance-name", "Bad.Name", "x"), "'Bad.Name' is not an object name"),
        (("instance-name", "cfg", "x", "--node", "Node_A"), "'Node_A' is not an object name"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], complaint: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert complaint in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.startswith("akri-py ")


def test_crds_prints_both_definitions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "crds")
    assert code == 0
    documents = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in documents] == ["CustomResourceDefinition"] * 2
    assert [d["metadata"]["name"] for d in documents] == [
        "configurations.akri.sh",
        "instances.akri.sh",
    ]


def test_crds_write_creates_the_checked_in_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "out"
    assert run(capsys, "crds", "--write", str(target)) == (0, "", "")
    assert {p.name: p.read_text() for p in target.iterdir()} == crd_files()


def test_crds_write_reports_an_unwritable_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, out, err = run(capsys, "crds", "--write", str(blocker))
    assert (code, out) == (1, "")
    assert f"cannot write {blocker}" in err
