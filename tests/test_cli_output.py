"""Output helpers of the command line (``dpacct._cli_output``): numbers, plurals, plain
messages, tables and JSON, each checked against text written out by hand."""

from __future__ import annotations

import json
import math

import numpy as np

from dpacct._cli_output import emit_json, fmt, json_float, plain_numbers, plural, table
from dpacct.cli import main


def test_fmt_keeps_significant_digits():
    assert fmt(1 / 3) == "0.33333"
    assert fmt(1 / 3, digits=2) == "0.33"
    assert fmt(2.0e-12) == "2e-12"
    assert fmt(float("inf")) == "inf" and fmt(None) == "-"


def test_plural_and_plain_numbers():
    assert [plural(n, "record") for n in (0, 1, 2)] == ["0 records", "1 record", "2 records"]
    assert plural(1, "entry", "entries") == "1 entry"
    assert plain_numbers("got np.float64(-2.5e-07), np.int32(4), np.bool_(True)") == (
        "got -2.5e-07, 4, True"
    )
    assert plain_numbers("np.linalg stays") == "np.linalg stays"


def test_table_aligns_columns():
    text = table(["mechanism", "epsilon"], [["gaussian", "1.5"], ["rr", "12.25"]])
    assert text.splitlines() == [
        "mechanism  epsilon",
        "---------  -------",
        "gaussian       1.5",
        "rr           12.25",
    ]


def test_json_helpers_write_plain_numbers_and_named_infinities(capsys):
    emit_json({"x": np.float64(0.5), "v": np.arange(3), "n": np.int64(7)})
    assert json.loads(capsys.readouterr().out) == {"x": 0.5, "v": [0, 1, 2], "n": 7}
    assert json_float(math.inf) == "inf" and json_float(-math.inf) == "-inf"
    assert json_float(0.25) == 0.25


def test_error_messages_print_plain_numbers(capsys):
    # the library formats the bad order as np.float64(1.0); the CLI prints 1.0
    assert main(["compare", "-m", "gaussian:sigma=1", "--alpha", "1"]) == 1
    err = capsys.readouterr().err
    assert "got 1.0" in err and "np." not in err
