"""Tests of controllers.command_line: duration syntax, log formats, kubeconfig errors, parser."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from datetime import datetime

import pytest

from controllers.command_line import (
    EXIT_USAGE,
    CommandParser,
    JsonFormatter,
    KubeconfigError,
    TextFormatter,
    describe_unsynced,
    load_kubeconfig,
    parse_duration,
    parse_go_duration,
    positive_duration,
    positive_int,
)

SECOND = 1_000_000_000
MILLISECOND = 1_000_000
MICROSECOND = 1_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

# Go src/time/time_test.go parseDurationTests (go1.25), every case, the same expected values.
PARSE_DURATION_TESTS = [
    ("0", 0),
    ("5s", 5 * SECOND),
    ("30s", 30 * SECOND),
    ("1478s", 1478 * SECOND),
    ("-5s", -5 * SECOND),
    ("+5s", 5 * SECOND),
    ("-0", 0),
    ("+0", 0),
    ("5.0s", 5 * SECOND),
    ("5.6s", 5 * SECOND + 600 * MILLISECOND),
    ("5.s", 5 * SECOND),
    (".5s", 500 * MILLISECOND),
    ("1.0s", 1 * SECOND),
    ("1.00s", 1 * SECOND),
    ("1.004s", 1 * SECOND + 4 * MILLISECOND),
    ("1.0040s", 1 * SECOND + 4 * MILLISECOND),
    ("100.00100s", 100 * SECOND + 1 * MILLISECOND),
    ("10ns", 10),
    ("11us", 11 * MICROSECOND),
    ("12µs", 12 * MICROSECOND),  # U+00B5
    ("12μs", 12 * MICROSECOND),  # U+03BC
    ("13ms", 13 * MILLISECOND),
    ("14s", 14 * SECOND),
    ("15m", 15 * MINUTE),
    ("16h", 16 * HOUR),
    ("3h30m", 3 * HOUR + 30 * MINUTE),
    ("10.5s4m", 4 * MINUTE + 10 * SECOND + 500 * MILLISECOND),
    ("-2m3.4s", -(2 * MINUTE + 3 * SECOND + 400 * MILLISECOND)),
    ("1h2m3s4ms5us6ns", 1 * HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND
     + 5 * MICROSECOND + 6),
    ("39h9m14.425s", 39 * HOUR + 9 * MINUTE + 14 * SECOND + 425 * MILLISECOND),
    ("52763797000ns", 52763797000),
    ("0.3333333333333333333h", 20 * MINUTE),
    ("9007199254740993ns", (1 << 53) + 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036854775.807us", (1 << 63) - 1),
    ("9223372036s854ms775us807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -1 << 63),
    ("-9223372036854775.808us", -1 << 63),
    ("-9223372036s854ms775us808ns", -1 << 63),
    ("-2562047h47m16.854775808s", -1 << 63),
    ("0.100000000000000000000h", 6 * MINUTE),
    ("0.830103483285477580700h", 49 * MINUTE + 48 * SECOND + 372539827),
]


@pytest.mark.parametrize(("text", "nanoseconds"), PARSE_DURATION_TESTS)
def test_parse_duration_go(text, nanoseconds):
    """Go TestParseDuration."""
    assert parse_go_duration(text) == nanoseconds


# Go parseDurationErrorTests; the invalid-UTF-8 cases cannot be a Python str and are left out.
PARSE_DURATION_ERROR_TESTS = [
    ("", '""'),
    ("3", '"3"'),
    ("-", '"-"'),
    ("s", '"s"'),
    (".", '"."'),
    ("-.", '"-."'),
    (".s", '".s"'),
    ("+.s", '"+.s"'),
    ("1d", '"1d"'),
    ("\ufffd", '"\ufffd"'),
    ("\ufffd hello \ufffd world", '"\ufffd hello \ufffd world"'),
    ("9223372036854775810ns", '"9223372036854775810ns"'),
    ("9223372036854775808ns", '"9223372036854775808ns"'),
    ("-9223372036854775809ns", '"-9223372036854775809ns"'),
    ("9223372036854776us", '"9223372036854776us"'),
    ("3000000h", '"3000000h"'),
    ("9223372036854775.808us", '"9223372036854775.808us"'),
    ("9223372036854ms775us808ns", '"9223372036854ms775us808ns"'),
]


@pytest.mark.parametrize(("text", "expect"), PARSE_DURATION_ERROR_TESTS)
def test_parse_duration_errors_go(text, expect):
    """Go TestParseDurationErrors: the error quotes the input."""
    with pytest.raises(ValueError) as info:
        parse_go_duration(text)
    assert expect in str(info.value)


def test_parse_duration_error_messages_are_go_s():
    with pytest.raises(ValueError, match=r'^time: missing unit in duration "3"$'):
        parse_go_duration("3")
    with pytest.raises(ValueError, match=r'^time: unknown unit "d" in duration "1d"$'):
        parse_go_duration("1d")
    with pytest.raises(ValueError, match=r'^time: invalid duration "-"$'):
        parse_go_duration("-")


@pytest.mark.parametrize(("text", "seconds"), [
    ("2", 2.0), ("0.5", 0.5), ("0", 0.0), (".5", 0.5), ("15s", 15.0), ("1m30s", 90.0),
    ("500ms", 0.5), ("1h", 3600.0), ("1.5s", 1.5), ("2m0.5s", 120.5), ("100us", 1e-4),
    (" 20s ", 20.0), ("+3", 3.0),
])
def test_parse_duration_flags(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("text", "message"), [
    ("", "invalid duration '': use a Go duration such as 1m30s, 500ms or 2h, or a number of "
         "seconds"),
    ("abc", "invalid duration 'abc': use a Go duration"),
    ("5x", "invalid duration '5x': use a Go duration"),
    ("1m 2s", "invalid duration '1m 2s': use a Go duration"),
    ("nan", "invalid duration 'nan': use a Go duration"),
    ("inf", "invalid duration 'inf': use a Go duration"),
    ("1s-2s", "invalid duration '1s-2s': use a Go duration"),
    ("-1", "invalid duration '-1': must be >= 0"),
    ("-1s", "invalid duration '-1s': must be >= 0"),
])
def test_parse_duration_flags_reject(text, message):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        parse_duration(text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text", ["0", "0s", "-5", "-1ms"])
def test_positive_duration_rejects_zero_and_negative(text):
    with pytest.raises(argparse.ArgumentTypeError) as info:
        positive_duration(text)
    assert str(info.value) == f"invalid duration {text!r}: must be > 0"


def test_positive_int():
    assert positive_int("3") == 3
    for text, message in (("0", "must be >= 1, got 0"), ("x", "invalid number 'x'")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            positive_int(text)


def test_parser_errors_are_one_line_and_exit_2(capsys):
    parser = CommandParser(prog="tool")
    parser.add_argument("--period", type=positive_duration)
    parser.add_argument("--n", type=int, required=True)
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--n", "1", "--period", "0"])
    assert info.value.code == EXIT_USAGE
    assert capsys.readouterr().err == (
        "tool: error: argument --period: invalid duration '0': must be > 0 (see --help)\n")
    with pytest.raises(SystemExit):
        parser.parse_args(["--n", "1", "--peri", "1s"])  # no abbreviations
    assert capsys.readouterr().err == (
        "tool: error: unrecognized arguments: --peri 1s (see --help)\n")


# -- log formats -----------------------------------------------------------------------------------


def _record(msg="listed %d objects", args=(7,), **extra):
    record = logging.LogRecord("informers.reflector", logging.INFO, __file__, 1, msg, args, None)
    record.created = 1_795_000_000.25
    record.__dict__.update(extra)
    return record


def test_text_format_has_an_iso_8601_date_with_offset_and_the_fields():
    line = TextFormatter().format(_record(resource="pods", pages=2, note="two words"))
    stamp, rest = line.split(" ", 1)
    moment = datetime.fromisoformat(stamp)
    assert moment.utcoffset() is not None
    assert moment.timestamp() == 1_795_000_000.25
    assert stamp[:10] == moment.date().isoformat() and stamp[10] == "T"
    assert rest == ('INFO    informers.reflector: listed 7 objects resource=pods pages=2 '
                    'note="two words"')


def test_json_format_has_the_required_keys():
    entry = json.loads(JsonFormatter().format(_record(resource="pods", error=ValueError("x"))))
    assert sorted(entry) == ["fields", "level", "logger", "message", "timestamp"]
    assert datetime.fromisoformat(entry["timestamp"]).timestamp() == 1_795_000_000.25
    assert (entry["level"], entry["logger"], entry["message"]) == (
        "INFO", "informers.reflector", "listed 7 objects")
    assert entry["fields"] == {"resource": "pods", "error": "x"}


def test_json_format_carries_the_traceback():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = _record()
        record.exc_info = sys.exc_info()
    entry = json.loads(JsonFormatter().format(record))
    assert entry["exception"].startswith("Traceback (most recent call last):")
    assert entry["exception"].endswith("RuntimeError: boom")
    assert entry["fields"] == {}


# -- kubeconfig ------------------------------------------------------------------------------------


def test_missing_kubeconfig_names_the_file(tmp_path):
    path = tmp_path / "missing"
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(path))
    assert str(info.value) == f"kubeconfig {path}: no such file or directory"


def test_a_directory_is_no_kubeconfig(tmp_path):
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(tmp_path))
    assert str(info.value) == f"kubeconfig {tmp_path}: is a directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without permission")
def test_an_unreadable_kubeconfig(tmp_path):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\n")
    path.chmod(0)
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(path))
    assert str(info.value) == f"kubeconfig {path}: permission denied"


@pytest.mark.parametrize(("content", "reason"), [
    ("apiVersion: v1\nkind: Config\n",
     "Invalid kube-config file. Expected key current-context in {path}"),
    ("not: [yaml", "not a kubeconfig (ParserError: while parsing a flow sequence"),
    ("hello", "not a kubeconfig (TypeError: 'str' object does not support item assignment)"),
])
def test_a_file_that_is_no_kubeconfig(tmp_path, content, reason):
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(path))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"kubeconfig {path}: " + reason.format(path=path))


def test_an_unknown_context(tmp_path, api_server):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(str(path), context="nope")
    assert str(info.value).startswith(f"kubeconfig {path}: ")
    assert "nope" in str(info.value)


def test_kubeconfig_env_skips_missing_files_as_client_go(tmp_path, api_server):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    missing = tmp_path / "missing"
    configuration = load_kubeconfig(None, environ={"KUBECONFIG": f"{missing}:{path}"})
    assert configuration.host == load_kubeconfig(str(path)).host
    assert configuration.host.startswith("https://127.0.0.1:")
    with pytest.raises(KubeconfigError) as info:
        load_kubeconfig(None, environ={"KUBECONFIG": f"{missing}"})
    assert str(info.value) == f"$KUBECONFIG names no file that exists: {missing}"


def test_describe_unsynced():
    assert describe_unsynced({"services": None, "pods": OSError("refused\n  twice")}) == (
        "pods (last error: refused twice), services (no error yet)")
