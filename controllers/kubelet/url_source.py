"""Polls a manifest URL for static pods and sends them as SETs of source "http".

The Python counterpart of ``sourceURL`` in ``pkg/kubelet/config/http.go`` (k8s.io/kubernetes
v1.36.3). Every ``period`` seconds (``--http-check-frequency``, default 20 s) the URL is fetched
with ``requests`` and the configured headers (``--manifest-url-header``); the body is one Pod or
a PodList, defaulted and validated as URL pods (:mod:`controllers.kubelet.defaults`).
"""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import requests
import tenacity
import urllib3.exceptions

from controllers.kubelet.defaults import MAX_CONFIG_LENGTH, decode_static_pods
from controllers.kubelet.errors import ManifestError, ManifestFetchError, PodSourceError
from controllers.kubelet.exchange import CuttableAdapter, Exchange, exchange_context
from controllers.kubelet.pod_update import HTTP_SOURCE, SET, PodUpdate, UpdateChannel
from informers.clock import REAL_CLOCK, Clock

__all__ = [
    "DEFAULT_HTTP_CHECK_FREQUENCY",
    "DEFAULT_HTTP_TIMEOUT",
    "DEFAULT_RETRY_ATTEMPTS",
    "DEFAULT_RETRY_INITIAL_DELAY",
    "DEFAULT_RETRY_MAX_DELAY",
    "URLSource",
    "parse_headers",
]

logger = logging.getLogger(__name__)

DEFAULT_HTTP_CHECK_FREQUENCY = 20.0
"""Seconds between polls (kubelet ``--http-check-frequency`` default, 20 s)."""
DEFAULT_HTTP_TIMEOUT = 10.0
"""Deadline of one whole request: connecting, the headers and the body (kubelet http.go
``http.Client{Timeout: 10 * time.Second}``)."""
DEFAULT_RETRY_ATTEMPTS = 3
"""Attempts per poll for transport errors and 5xx answers. The kubelet does not retry within
a poll (it waits for the next period); these quick retries are ours, so a brief outage of the
manifest server does not cost a whole period."""
DEFAULT_RETRY_INITIAL_DELAY = 0.5
"""Delay before the first retry, doubling for each further one (ours, see above)."""
DEFAULT_RETRY_MAX_DELAY = 5.0
"""Largest delay between retries (ours)."""

_FAILURE_LOGS = 3
"""Warnings logged for consecutive failures before dropping to debug (kubelet http.go)."""


def parse_headers(values: Iterable[str]) -> dict[str, str]:
    """``["Key:value", ...]`` (``--manifest-url-header`` values) to a header mapping.

    Repeats of a key are joined with ``, `` (one HTTP header with several values).

    Raises:
        ValueError: an entry without ``:`` or with an empty key.
    """
    headers: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition(":")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"manifest URL header {item!r} is not in the form key:value")
        value = value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    return headers


class _RetryableFetchError(Exception):
    def __init__(self, error: ManifestFetchError) -> None:
        super().__init__(str(error))
        self.error = error


_DEADLINE = "deadline"
_STOPPED = "stopped"


@dataclass
class _Answer:
    """A read answer: status line, content type and (for a 200) the body."""

    status_code: int
    reason: str
    content_type: str
    data: bytes


def _describe(exc: BaseException | None) -> str:
    """A transport error's text, unless it quotes what the server sent (a status line that
    is not HTTP, which ``http.client.BadStatusLine`` holds): then only its kind."""
    seen: set[int] = set()
    pending: list[object] = [exc]
    while pending:
        item = pending.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, http.client.BadStatusLine):
            return "the answer is not HTTP (bad status line)"
        pending.extend([*item.args, item.__cause__, item.__context__])
    return str(exc)


def _looks_like_html(data: bytes, content_type: str) -> bool:
    if "html" in content_type.lower():
        return True
    return data.lstrip().startswith(b"<")


class URLSource:
    """Keeps the "http" source of a PodConfig equal to the pods served at ``url``.

    Behaviour of one poll (:meth:`extract_from_url`, kubelet ``extractFromURL``):

    * GET with the headers. ``timeout`` (:data:`DEFAULT_HTTP_TIMEOUT`) bounds the whole
      exchange of one attempt -- connecting, the headers and the body -- as the kubelet's
      ``http.Client.Timeout`` does: a deadline on the clock cuts the connection
      (:mod:`controllers.kubelet.exchange`), so a server that sends a byte every few seconds
      cannot hold a poll. Transport errors, timeouts and 5xx answers are retried
      (``tenacity``, exponential backoff on the injectable clock); when they persist, or for
      any other non-200 answer, the poll fails with
      :class:`~controllers.kubelet.errors.ManifestFetchError` naming the URL and nothing is
      sent: the pods last sent stay in force. At most ``MAX_CONFIG_LENGTH`` (10 MiB) bytes
      of the body are read (kubelet ``maxConfigLength``).
    * An empty body sends ``SET{[]}`` (the source counts as seen) and fails with
      "zero-length data received".
    * A body byte-identical to the last one read changes nothing (short circuit); the body is
      recorded before it is parsed, so a repeated invalid body is not reported again.
    * Otherwise the body must be one Pod (sends ``SET{[pod]}``) or a PodList (sends
      ``SET{pods}``); an invalid pod or list item fails the poll with a
      :class:`~controllers.kubelet.errors.ManifestError` naming the URL, and nothing is sent.
      An HTML page fails with an error saying so. Errors never quote the body (the kubelet's
      quotes it; a URL may serve something that is not meant for logs).

    Failures are logged as warnings three times in a row, then at debug level until a poll
    succeeds again (kubelet http.go). Deliberate difference: after an empty body the recorded
    body is cleared, so the same manifest served again is sent again (the kubelet would keep
    the empty state).

    Threads: :meth:`start` polls on a daemon thread ``kubelet-url-source`` -- at once, then
    every ``period`` -- until ``stop`` is set; :meth:`join` waits for it. Setting ``stop`` cuts
    a request in flight at once (a thread ``kubelet-url-source-stopper`` waits for it), so the
    thread ends promptly. Each attempt also runs a thread ``kubelet-url-source-deadline``
    that waits on the clock for the deadline; it is joined when the attempt ends.
    :meth:`extract_from_url` may be called directly instead (not while the source runs).

    Args:
        url: the manifest URL.
        headers: request headers (a mapping; see :func:`parse_headers` for flag values).
        node_name: the node's name.
        period: seconds between polls.
        channel: receives the SETs.
        clock: measures the period and the retry delays.
        timeout: deadline of one whole request, in seconds (also each socket operation's
            timeout).
        retry_attempts: attempts per poll (1 disables retries).
        session: a ``requests.Session`` to use (default: a new one, closed on stop). The
            source mounts its :class:`~controllers.kubelet.exchange.CuttableAdapter` on it for
            ``url`` (and URLs under it) only.
    """

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str] | None,
        node_name: str,
        period: float,
        channel: UpdateChannel,
        *,
        clock: Clock = REAL_CLOCK,
        timeout: float = DEFAULT_HTTP_TIMEOUT,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        retry_initial_delay: float = DEFAULT_RETRY_INITIAL_DELAY,
        retry_max_delay: float = DEFAULT_RETRY_MAX_DELAY,
        session: requests.Session | None = None,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.node_name = node_name
        self.period = period
        self.channel = channel
        self.timeout = timeout
        self.retry_attempts = max(1, retry_attempts)
        self.retry_initial_delay = retry_initial_delay
        self.retry_max_delay = retry_max_delay
        self._clock = clock
        self._own_session = session is None
        self._session = session if session is not None else requests.Session()
        self._session.mount(url, CuttableAdapter())
        self._data: bytes | None = None
        self._exchange_lock = threading.Lock()
        self._exchange: Exchange | None = None
        self._failure_logs = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.last_error: PodSourceError | None = None

    # -- one poll ------------------------------------------------------------------------------

    def _get_once(self) -> _Answer:
        """One attempt: GET and read the body within the deadline, cut on stop."""
        exchange = Exchange()
        with self._exchange_lock:
            if self._stop.is_set():
                raise ManifestFetchError(f"{self.url}: source stopped", self.url)
            self._exchange = exchange
        watchdog = threading.Thread(target=self._watch_deadline, args=(exchange,),
                                    name="kubelet-url-source-deadline", daemon=True)
        watchdog.start()
        try:
            with exchange_context(exchange):
                return self._exchange_once(exchange)
        finally:
            exchange.done.set()
            with self._exchange_lock:
                self._exchange = None
            watchdog.join()

    def _watch_deadline(self, exchange: Exchange) -> None:
        if not self._clock.wait_event(exchange.done, self.timeout):
            exchange.abort(_DEADLINE)

    def _exchange_once(self, exchange: Exchange) -> _Answer:
        try:
            resp = self._session.get(self.url, headers=self.headers, timeout=self.timeout,
                                     stream=True)
        except requests.RequestException as exc:
            raise self._transport_error(exchange, exc, "") from exc
        try:
            status = f"{resp.status_code} {resp.reason or ''}".strip()
            if resp.status_code >= 500:
                raise _RetryableFetchError(
                    ManifestFetchError(f"{self.url}: {status}", self.url, resp.status_code))
            data = b""
            if resp.status_code == 200:
                data = resp.raw.read(MAX_CONFIG_LENGTH + 1, decode_content=True)
            answer = _Answer(resp.status_code, resp.reason or "",
                             resp.headers.get("Content-Type", ""), data)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            raise self._transport_error(exchange, exc, "reading the body failed: ") from exc
        finally:
            resp.close()
        if exchange.aborted is not None:  # a body read to the end of a cut connection
            raise self._transport_error(exchange, None, "")
        return answer

    def _transport_error(self, exchange: Exchange, exc: Exception | None,
                         step: str) -> Exception:
        """The error of a failed attempt: not retried when stopped, else retryable."""
        if exchange.aborted == _STOPPED:
            return ManifestFetchError(f"{self.url}: source stopped", self.url)
        if exchange.aborted == _DEADLINE or isinstance(exc, requests.Timeout):
            return _RetryableFetchError(ManifestFetchError(
                f"{self.url}: timed out after {self.timeout:g}s", self.url))
        return _RetryableFetchError(
            ManifestFetchError(f"{self.url}: {step}{_describe(exc)}", self.url))

    def _cut_on_stop(self, stop: threading.Event) -> None:
        self._clock.wait_event(stop, None)
        with self._exchange_lock:
            exchange = self._exchange
        if exchange is not None:
            exchange.abort(_STOPPED)

    def _fetch(self) -> _Answer:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retry_attempts),
            wait=tenacity.wait_exponential(multiplier=self.retry_initial_delay,
                                           max=self.retry_max_delay),
            retry=tenacity.retry_if_exception_type(_RetryableFetchError),
            sleep=self._sleep,
            before_sleep=self._before_retry,
            reraise=True,
        )
        try:
            return retrying(self._get_once)
        except _RetryableFetchError as exc:
            raise exc.error from exc.__cause__

    def _sleep(self, seconds: float) -> None:
        if self._clock.sleep(seconds, self._stop):
            raise _RetryableFetchError(ManifestFetchError(
                f"{self.url}: source stopped while waiting to retry", self.url))

    def _before_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        logger.debug("url source: attempt %d for %s failed (%s); retrying in %.3gs",
                     state.attempt_number, self.url, exc, delay)

    def extract_from_url(self) -> None:
        """Poll once and send what changed.

        Raises:
            ManifestFetchError: transport error, timeout or non-200 answer (nothing sent).
            ManifestError: empty body (``SET{[]}`` was sent), HTML, or invalid pods (nothing
                sent).
        """
        answer = self._fetch()
        if answer.status_code != 200:
            status = f"{answer.status_code} {answer.reason}".strip()
            raise ManifestFetchError(f"{self.url}: {status}", self.url, answer.status_code)
        data, content_type = answer.data, answer.content_type
        if not data:
            self._data = None
            self.channel.put(PodUpdate([], SET, HTTP_SOURCE))
            raise ManifestError("zero-length data received", self.url)
        if data == self._data:
            return
        self._data = data
        if _looks_like_html(data, content_type):
            try:
                pods = decode_static_pods(data, source=self.url, node_name=self.node_name,
                                          is_file=False)
            except ManifestError:
                raise ManifestError(
                    "received an HTML page, not a Pod or PodList manifest; check the manifest "
                    "URL", self.url,
                ) from None
        else:
            pods = decode_static_pods(data, source=self.url, node_name=self.node_name,
                                      is_file=False)
        self.channel.put(PodUpdate(pods, SET, HTTP_SOURCE))

    def poll(self) -> bool:
        """:meth:`extract_from_url` with the kubelet's throttled logging; True on success."""
        try:
            self.extract_from_url()
        except PodSourceError as exc:
            self.last_error = exc
            if self._stop.is_set():
                logger.debug("url source: poll of %s ended by stop: %s", self.url, exc)
                return False
            if self._failure_logs < _FAILURE_LOGS:
                logger.warning("url source: failed to read pods from URL: %s", exc)
            elif self._failure_logs == _FAILURE_LOGS:
                logger.warning("url source: failed to read pods from URL (further failures are "
                               "logged at debug level): %s", exc)
            else:
                logger.debug("url source: failed to read pods from URL: %s", exc)
            self._failure_logs += 1
            return False
        except Exception as exc:  # a bug; keep polling
            self.last_error = None
            logger.exception("url source: unexpected error reading %s: %s", self.url, exc)
            return False
        self.last_error = None
        if self._failure_logs:
            logger.info("url source: successfully read pods from URL %s", self.url)
            self._failure_logs = 0
        return True

    # -- running -------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Poll on a daemon thread until ``stop`` is set."""
        self._stop = stop
        self._thread = threading.Thread(target=self.run, args=(stop,), name="kubelet-url-source",
                                        daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread started by :meth:`start` (after ``stop`` was set)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def run(self, stop: threading.Event) -> None:
        """Poll at once and then every ``period`` until ``stop`` is set. Never raises."""
        self._stop = stop
        logger.info("url source: watching URL %s (every %gs)", self.url, self.period)
        stopper = threading.Thread(target=self._cut_on_stop, args=(stop,),
                                   name="kubelet-url-source-stopper", daemon=True)
        stopper.start()
        try:
            while not stop.is_set():
                self.poll()
                if self._clock.sleep(self.period, stop):
                    break
        finally:
            stopper.join()
            if self._own_session:
                self._session.close()
            logger.info("url source: stopped watching %s", self.url)
