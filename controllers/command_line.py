"""What the bundled commands share: flag syntax, logging, kubeconfig loading and exit codes.

``endpoint-controller`` and ``kubelet-pod-source`` take durations, log levels and log formats
the same way, fail on a bad flag or a bad kubeconfig with one line and no traceback, and end
with the same exit codes:

* :data:`EXIT_OK` (0): a clean stop;
* :data:`EXIT_FAILURE` (1): something failed while running (caches that never synced, a lost
  lease, an address that cannot be bound);
* :data:`EXIT_USAGE` (2): bad input before anything ran (a flag, the kubeconfig).

Only the commands call :func:`configure_logging`; the library never configures logging.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import IO, Any, NoReturn

__all__ = [
    "DURATION_HELP",
    "EXIT_FAILURE",
    "EXIT_OK",
    "EXIT_USAGE",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "CommandParser",
    "JsonFormatter",
    "KubeconfigError",
    "TextFormatter",
    "add_logging_flags",
    "configure_logging",
    "describe_unsynced",
    "formatter_for",
    "load_kubeconfig",
    "parse_duration",
    "parse_go_duration",
    "positive_duration",
    "positive_int",
]

EXIT_OK = 0
"""A clean stop (after a signal, ``--duration`` or the end of a demo)."""

EXIT_FAILURE = 1
"""A failure while running: caches that never synced, a lost lease, an unbindable address."""

EXIT_USAGE = 2
"""Bad input before anything ran: a flag, or a kubeconfig that cannot be loaded (argparse's
and Go's ``flag`` package's exit code for usage errors)."""

LOG_LEVELS = ("debug", "info", "warning", "error")
"""``--log-level`` values (any case); ``info`` shows the library's list progress lines."""

LOG_FORMATS = ("text", "json")
"""``--log-format`` values: ``text`` lines for people, ``json`` lines for log collectors."""


DURATION_HELP = ("DURATION is a Go duration (1m30s, 500ms, 2h, as the Kubernetes components "
                 "take them) or a number of seconds (2.5).")
"""The help text's note on the syntax of every ``DURATION`` flag."""


# -- command-line parsing --------------------------------------------------------------------------


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line on stderr and exit :data:`EXIT_USAGE`.

    argparse prints the whole usage before the error; a command with twenty flags then buries
    the one line that matters. This prints ``<prog>: error: <message> (see --help)`` only.
    Parsing is not abbreviated (``allow_abbrev=False``), so a flag added later never changes
    what an existing command line means.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        one_line = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line} (see --help)\n")


# Go's time.ParseDuration (src/time/format.go): units and their length in nanoseconds.
_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_INT64 = (1 << 63) - 1
_SECONDS = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")


def _leading_int(s: str) -> tuple[int, str]:
    """Go ``leadingInt``: the leading digits of ``s`` and the rest; ValueError on overflow."""
    i = 0
    x = 0
    while i < len(s) and "0" <= s[i] <= "9":
        x = x * 10 + ord(s[i]) - ord("0")
        if x > 1 << 63:
            raise ValueError("overflow")
        i += 1
    return x, s[i:]


def _leading_fraction(s: str) -> tuple[int, float, str]:
    """Go ``leadingFraction``: digits after the point as ``(value, scale, rest)``; digits
    past int64 precision are consumed and ignored, as Go does."""
    i = 0
    x = 0
    scale = 1.0
    overflow = False
    while i < len(s) and "0" <= s[i] <= "9":
        if not overflow:
            if x > _MAX_INT64 // 10:
                overflow = True
            else:
                y = x * 10 + ord(s[i]) - ord("0")
                if y > 1 << 63:
                    overflow = True
                else:
                    x = y
                    scale *= 10
        i += 1
    return x, scale, s[i:]


def parse_go_duration(text: str) -> int:
    """Nanoseconds in a Go duration string, exactly as Go's ``time.ParseDuration``.

    A sequence of decimal numbers, each with an optional fraction and a unit (``ns``, ``us``
    or ``µs``, ``ms``, ``s``, ``m``, ``h``), with an optional sign: ``"300ms"``, ``"-1.5h"``,
    ``"2h45m"``; ``"0"`` alone needs no unit. The value must fit an int64 of nanoseconds.

    Raises:
        ValueError: with Go's message (``time: invalid duration "1x"``, ``time: missing unit
            in duration "3"``, ``time: unknown unit "d" in duration "1d"``).
    """
    orig = text
    quoted = json.dumps(orig, ensure_ascii=False)
    invalid = ValueError(f"time: invalid duration {quoted}")
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise invalid
    d = 0
    while s:
        if not (s[0] == "." or "0" <= s[0] <= "9"):
            raise invalid
        pl = len(s)
        try:
            v, s = _leading_int(s)
        except ValueError:
            raise invalid from None
        pre = pl != len(s)
        f, scale, post = 0, 1.0, False
        if s and s[0] == ".":
            s = s[1:]
            pl = len(s)
            f, scale, s = _leading_fraction(s)
            post = pl != len(s)
        if not pre and not post:
            raise invalid
        i = 0
        while i < len(s) and s[i] != "." and not "0" <= s[i] <= "9":
            i += 1
        if i == 0:
            raise ValueError(f"time: missing unit in duration {quoted}")
        unit_name, s = s[:i], s[i:]
        unit = _UNIT_NANOSECONDS.get(unit_name)
        if unit is None:
            raise ValueError(f"time: unknown unit {json.dumps(unit_name, ensure_ascii=False)} "
                             f"in duration {quoted}")
        if v > (1 << 63) // unit:
            raise invalid
        v *= unit
        if f > 0:
            # Go: v += uint64(float64(f) * (float64(unit) / scale)), in float64 on purpose.
            v += int(float(f) * (float(unit) / scale))
            if v > 1 << 63:
                raise invalid
        d += v
        if d > 1 << 63:
            raise invalid
    if neg:
        return -d
    if d > _MAX_INT64:
        raise invalid
    return d


def _seconds(text: str) -> float:
    """Signed seconds of a Go duration or a bare number; ArgumentTypeError otherwise."""
    value = text.strip()
    if _SECONDS.fullmatch(value):
        return float(value)
    try:
        return parse_go_duration(value) / 1e9
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: use a Go duration such as 1m30s, 500ms or 2h, "
            "or a number of seconds"
        ) from None


def parse_duration(text: str) -> float:
    """Seconds from a Go duration (``"1m30s"``, ``"500ms"``, ``"2h"``, as the Kubernetes
    components' duration flags take them) or from a bare number of seconds (``"2.5"``, which
    Go would refuse for a missing unit).

    Raises:
        argparse.ArgumentTypeError: neither, or negative.
    """
    seconds = _seconds(text)
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must be >= 0")
    return seconds


def positive_duration(text: str) -> float:
    """:func:`parse_duration`, and more than zero (a period that must not busy-loop)."""
    seconds = _seconds(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: must be > 0")
    return seconds


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


# -- logging ---------------------------------------------------------------------------------------


def _one_of(kind: str, values: tuple[str, ...]) -> Callable[[str], str]:
    """An argparse type: ``values`` in any case, with one stable message otherwise (argparse's
    own ``choices`` message differs between Python versions)."""
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in values:
            raise argparse.ArgumentTypeError(
                f"invalid {kind} {text!r}: use {', '.join(values[:-1])} or {values[-1]}")
        return value
    return parse


def add_logging_flags(parser: argparse.ArgumentParser, default_level: str = "info") -> None:
    """``--log-level`` (:data:`LOG_LEVELS`) and ``--log-format`` (:data:`LOG_FORMATS`)."""
    parser.add_argument("--log-level", type=_one_of("log level", LOG_LEVELS),
                        default=default_level, metavar="LEVEL",
                        help="debug, info, warning or error (default %(default)s; info shows "
                             "the progress of long lists)")
    parser.add_argument("--log-format", type=_one_of("log format", LOG_FORMATS), default="text",
                        metavar="FORMAT",
                        help="text: one line per record for people; json: one JSON object per "
                             "line with timestamp, level, logger, message and fields "
                             "(default %(default)s)")


# The attributes every LogRecord has; anything else was passed with ``extra=`` (a field).
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName",
}


def _timestamp(record: logging.LogRecord) -> str:
    """ISO 8601 with the date, milliseconds and the local UTC offset."""
    moment = datetime.fromtimestamp(record.created, tz=timezone.utc).astimezone()
    return moment.isoformat(timespec="milliseconds")


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items()
            if k not in _RECORD_ATTRIBUTES and not k.startswith("_")}


class TextFormatter(logging.Formatter):
    """``2026-11-25T04:35:12.345+00:00 INFO    informers.reflector: message key=value``.

    Fields passed with ``extra=`` follow the message as ``key=value`` (values with spaces or
    quotes JSON-quoted); a traceback follows on the next lines.
    """

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        for key, value in _fields(record).items():
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            if not text or any(c.isspace() or c in "\"=" for c in text):
                text = json.dumps(text)
            line += f" {key}={text}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``timestamp`` (ISO 8601 with offset), ``level``,
    ``logger``, ``message``, ``fields`` (what was passed with ``extra=``; values that are not
    JSON become their ``str``) and, with a traceback, ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "timestamp": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "fields": _fields(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


def formatter_for(log_format: str) -> logging.Formatter:
    """The formatter of a ``--log-format`` value."""
    return JsonFormatter() if log_format == "json" else TextFormatter()


def configure_logging(level: str, log_format: str = "text", stream: IO[str] | None = None) -> None:
    """Send every logger's records at ``level`` and above to ``stream`` (default stderr) in
    ``log_format``: what the commands do first. Process-wide, so the library never calls it.

    Like ``logging.basicConfig`` it changes nothing when the root logger already has a
    handler (an application that embeds a command configured logging itself).
    """
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter_for(log_format))
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper()))


# -- kubeconfig ------------------------------------------------------------------------------------


class KubeconfigError(Exception):
    """A kubeconfig cannot be used; the message names the file and why, on one line."""


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _check_readable(path: str) -> None:
    try:
        with open(path, "rb") as fh:
            fh.read(1)
    except OSError as err:
        reason = (err.strerror or type(err).__name__).lower()
        raise KubeconfigError(f"kubeconfig {path}: {reason}") from None


def load_kubeconfig(path: str | None, context: str | None = None, *,
                    environ: Mapping[str, str] | None = None) -> Any:
    """A ``kubernetes.client.Configuration`` from ``path``, else from ``$KUBECONFIG``.

    As client-go's loading rules (``clientcmd.ClientConfigLoadingRules``): a file named with
    ``--kubeconfig`` must exist; ``$KUBECONFIG`` is a list (``:``-separated) whose missing
    files are skipped and whose others are merged, the first file to set a value winning.

    Raises:
        KubeconfigError: a file is missing, unreadable or not a usable kubeconfig (no current
            context, an unknown ``context``, not YAML...); the message names the file.
    """
    from kubernetes import client, config

    env = os.environ if environ is None else environ
    if path:
        files = [os.path.expanduser(path)]
        label = files[0]
    else:
        listed = [os.path.expanduser(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
        files = [p for p in listed if os.path.exists(p)]
        label = os.pathsep.join(files)
        if not files:
            raise KubeconfigError(
                f"$KUBECONFIG names no file that exists: {os.pathsep.join(listed) or '(empty)'}"
            )
    for name in files:
        _check_readable(name)
    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=os.pathsep.join(files), context=context,
                                client_configuration=configuration, persist_config=False)
    except config.ConfigException as err:
        raise KubeconfigError(f"kubeconfig {label}: {_one_line(err)}") from None
    except Exception as err:  # the kubernetes loader fails with what the YAML made it trip on
        raise KubeconfigError(
            f"kubeconfig {label}: not a kubeconfig ({type(err).__name__}: {_one_line(err)})"
        ) from None
    return configuration


# -- sync failures ---------------------------------------------------------------------------------


def describe_unsynced(last_errors: Mapping[str, BaseException | str | None]) -> str:
    """One line naming what did not sync and the last error of each, e.g.
    ``pods (last error: connection refused), services (no error yet)``."""
    parts = []
    for name, error in sorted(last_errors.items()):
        if error is None:
            parts.append(f"{name} (no error yet)")
        else:
            text = error if isinstance(error, str) else _one_line(error)
            parts.append(f"{name} (last error: {' '.join(text.split())})")
    return ", ".join(parts)
