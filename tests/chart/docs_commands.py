"""The commands of the README's quick start and deploy sections and of the user guide, read
from the Markdown itself so the documentation cannot drift from what works."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]
# (file, the heading whose section's ```sh blocks are read ("" for the whole file), how many
# blocks: the local cluster's quick start is its first; the next one runs external handlers
# against real networks and devices, which tests/sim and tests/handlers cover.)
SOURCES = [
    (ROOT / "README.md", "## The local cluster: `akri sim`", 1),
    (ROOT / "README.md", "## Deploy to a cluster", None),
    (ROOT / "docs" / "user-guide.md", "", None),
]
_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


def _section(text: str, heading: str) -> str:
    if not heading:
        return text
    start = text.index(heading + "\n")
    following = re.search(r"^## ", text[start + len(heading) :], re.M)
    return text[start : start + len(heading) + (following.start() if following else len(text))]


def commands() -> list[list[str]]:
    """Every command line of the documented ```sh blocks (comments, `export` and `make` left out:
    the tests set KUBECONFIG themselves and are what `make` runs). A block that needs the shell
    (variables, jobs) is fenced ```bash and tested where it is explained: the metrics one by
    tests/sim/test_pod_access.py."""
    found = []
    for path, heading, count in SOURCES:
        for block in _BLOCK.findall(_section(path.read_text(), heading))[:count]:
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                if words and words[0] not in ("export", "make"):
                    found.append(words)
    return found


@dataclass
class HelmInstall:
    release: str
    chart: str
    namespace: str = "default"
    values: dict[str, Any] = field(default_factory=dict)


def _value(text: str) -> Any:
    return {"true": True, "false": False}.get(text, int(text) if text.isdigit() else text)


def helm_install(words: list[str]) -> HelmInstall:
    """`helm install RELEASE CHART [--namespace NS] [--create-namespace] [--set a.b=v]...`."""
    assert words[:2] == ["helm", "install"], words
    install = HelmInstall(words[2], words[3])
    rest = iter(words[4:])
    for word in rest:
        if word == "--namespace":
            install.namespace = next(rest)
        elif word == "--set":
            path, _, text = next(rest).partition("=")
            *parents, leaf = path.split(".")
            target = install.values
            for part in parents:
                target = target.setdefault(part, {})
            target[leaf] = _value(text)
        elif word != "--create-namespace":
            raise AssertionError(f"the docs use a helm flag the tests do not know: {word}")
    return install
