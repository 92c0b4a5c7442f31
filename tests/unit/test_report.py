"""The performance report's row lines: what a benchmark prints is what the report reads."""

from __future__ import annotations

import pytest

from akri.sim.report import (
    TARGETS_BEGIN,
    TARGETS_END,
    Row,
    markdown,
    row_line,
    rows_in,
    with_targets,
)


def test_rows_printed_among_other_output_are_read_back_unchanged() -> None:
    rows = [
        Row("Allocate p99", "4.1 ms", "<= 25 ms: met", "bare gRPC 0.5 ms"),
        Row("violations", "0", reference='seed 7, "quoted" | piped'),
    ]
    output = "\n".join(["a table for people", row_line(rows[0]), "report:x", row_line(rows[1])])
    assert rows_in(output) == rows


def test_a_malformed_row_line_is_an_error_not_a_silent_gap() -> None:
    with pytest.raises(ValueError, match="not a report row"):
        rows_in('report: {"value": "1"}')


def test_the_table_names_each_row_by_its_program_and_escapes_cells() -> None:
    table = markdown([("bench_x", [Row("p99", "1 | 2", "t")]), ("soak", [Row("violations", "0")])])
    assert table.splitlines() == [
        "| metric | value | target | reference |",
        "| --- | --- | --- | --- |",
        "| bench_x: p99 | 1 \\| 2 | t |  |",
        "| soak: violations | 0 |  |  |",
    ]


def test_readme_gets_only_the_rows_held_to_a_target() -> None:
    table = markdown(
        [("bench_x", [Row("p99", "9 ms", "<= 25 ms: met", "ref"), Row("runs", "3")])],
        targets_only=True,
    )
    assert table.splitlines() == [
        "| metric | value | target |",
        "| --- | --- | --- |",
        "| bench_x: p99 | 9 ms | <= 25 ms: met |",
    ]


def test_the_targets_block_is_replaced_and_the_rest_of_readme_kept() -> None:
    readme = f"# Title\n\nbefore\n{TARGETS_BEGIN}\nold numbers\n{TARGETS_END}\nafter\n"
    written = with_targets(readme, "| new |\n", "taken today")
    assert (
        written
        == f"# Title\n\nbefore\n{TARGETS_BEGIN}\ntaken today\n\n| new |\n{TARGETS_END}\nafter\n"
    )
    assert with_targets(written, "| new |\n", "taken today") == written


@pytest.mark.parametrize("readme", ["no block", f"{TARGETS_END}\n{TARGETS_BEGIN}"])
def test_a_readme_without_a_targets_block_is_an_error(readme: str) -> None:
    with pytest.raises(ValueError, match=r"README has no .* block"):
        with_targets(readme, "| new |\n", "taken today")
