"""The rows of the performance report (`make report`, docs/performance.md), as the benchmarks
and the soak print them and the report reads them back.

A program contributes rows by printing one line per row, `report: ` followed by a JSON object
with the keys `metric`, `value`, `target` and `reference` (strings; the last two may be empty).
Everything else it prints is for people and is ignored here. `row_line` writes such a line,
`rows_in` reads them out of a program's output, and `markdown` renders the table. The rows
held to a target also go into README (`with_targets`), so no number there is typed by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

PREFIX = "report: "


@dataclass(frozen=True)
class Row:
    """One measured number: what it is, its value, the target it is held to, and what it is
    compared with (a reference number, or how it was measured)."""

    metric: str
    value: str
    target: str = ""
    reference: str = ""


def row_line(row: Row) -> str:
    """The line a program prints so that `make report` picks up `row`."""
    return PREFIX + json.dumps(asdict(row), ensure_ascii=False)


def rows_in(output: str) -> list[Row]:
    """Every row line in a program's output; a malformed one is a bug in that program."""
    found = []
    for line in output.splitlines():
        if not line.startswith(PREFIX):
            continue
        fields = json.loads(line[len(PREFIX) :])
        if not isinstance(fields, dict) or not isinstance(fields.get("metric"), str):
            raise ValueError(f"not a report row: {line!r}")
        found.append(
            Row(
                **{
                    key: str(fields.get(key, ""))
                    for key in ("metric", "value", "target", "reference")
                }
            )
        )
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(sections: Iterable[tuple[str, Sequence[Row]]], *, targets_only: bool = False) -> str:
    """One table; every metric is prefixed with the program (section) it comes from.
    `targets_only`: just the rows held to a target, without the reference column."""
    columns = ["metric", "value", "target"] + ([] if targets_only else ["reference"])
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for source, rows in sections:
        for r in rows:
            if targets_only and not r.target:
                continue
            cells = [f"{source}: {r.metric}", r.value, r.target]
            cells += [] if targets_only else [r.reference]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


TARGETS_BEGIN = "<!-- make report: targets begin -->"
TARGETS_END = "<!-- make report: targets end -->"


def with_targets(readme: str, table: str, taken: str) -> str:
    """`readme` with the text between its targets markers replaced by `taken` (when and where
    the numbers were measured) and `table`; a README without both markers is an error."""
    begin, end = readme.find(TARGETS_BEGIN), readme.find(TARGETS_END)
    if begin < 0 or end < begin:
        raise ValueError(f"README has no {TARGETS_BEGIN!r} ... {TARGETS_END!r} block")
    block = f"{TARGETS_BEGIN}\n{taken}\n\n{table}{TARGETS_END}"
    return readme[:begin] + block + readme[end + len(TARGETS_END) :]
