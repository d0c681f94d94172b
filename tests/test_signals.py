"""Tests for informers.signals: first signal stops, second forces exit."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

from informers.signals import SHUTDOWN_SIGNALS, SignalHandler, setup_signal_handler


def test_first_signal_sets_the_event_second_exits_with_1():
    exits = []
    handler = SignalHandler(exit_func=exits.append)
    assert not handler.stop_event.is_set()
    handler(signal.SIGTERM, None)
    assert handler.stop_event.is_set()
    assert exits == []
    handler(signal.SIGINT, None)
    assert exits == [1]
    assert handler.received == 2


def test_uses_the_given_event():
    event = threading.Event()
    handler = SignalHandler(event, exit_func=lambda code: None)
    handler(signal.SIGINT, None)
    assert handler.stop_event is event and event.is_set()


def test_log_lines_name_the_signal(caplog):
    caplog.set_level(logging.INFO, logger="informers.signals")
    handler = SignalHandler(exit_func=lambda code: None)
    handler(250, None)
    handler(signal.SIGTERM, None)
    assert [r.getMessage() for r in caplog.records] == [
        "received signal 250, shutting down; send it again to force exit",
        "received SIGTERM again, forcing exit with code 1",
    ]


def test_install_and_uninstall_restore_the_previous_handlers():
    before = {s: signal.getsignal(s) for s in SHUTDOWN_SIGNALS}
    handler = SignalHandler(exit_func=lambda code: None).install()
    try:
        for s in SHUTDOWN_SIGNALS:
            assert signal.getsignal(s) is handler
    finally:
        handler.uninstall()
    assert {s: signal.getsignal(s) for s in SHUTDOWN_SIGNALS} == before


def test_a_real_sigterm_sets_the_event():
    exits = []
    handler = SignalHandler(exit_func=exits.append).install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not handler.stop_event.is_set():  # the handler runs in the main thread
            assert time.monotonic() < deadline
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not exits:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        assert exits == [1]
    finally:
        handler.uninstall()


def test_install_outside_the_main_thread_fails():
    errors = []

    def install():
        try:
            SignalHandler().install()
        except ValueError as err:
            errors.append(err)

    t = threading.Thread(target=install)
    t.start()
    t.join()
    assert len(errors) == 1


def test_setup_signal_handler_returns_the_event():
    previous = {s: signal.getsignal(s) for s in SHUTDOWN_SIGNALS}
    try:
        event = setup_signal_handler(exit_func=lambda code: None)
        handler = signal.getsignal(signal.SIGINT)
        assert isinstance(handler, SignalHandler)
        assert handler.stop_event is event
        handler(signal.SIGINT, None)
        assert event.is_set()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def test_shutdown_signals_are_term_and_int():
    assert SHUTDOWN_SIGNALS == (signal.SIGTERM, signal.SIGINT)
