"""The performance report's row lines: what a benchmark prints is what the report reads."""

from __future__ import annotations

import pytest

from akri.sim.report import Row, markdown, row_line, rows_in


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
