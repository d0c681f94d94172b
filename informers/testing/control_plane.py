"""``ControlPlane``: a real etcd and kube-apiserver (and kube-controller-manager) on loopback.

For tests that must hold against the real thing rather than the embedded
:class:`~informers.testing.ApiServer`. This module supervises the processes: it picks ports,
starts each binary with its flags and log file, waits for its health endpoint, and stops,
restarts or kills it. The binaries come from :func:`find_binaries`
(:mod:`informers.testing.binaries`), the certificates from :mod:`informers.testing.pki` (a
throwaway CA, a serving certificate for ``127.0.0.1``, ``::1`` and ``localhost``, and a
service-account signing key). Clients authenticate with a static bearer token of a user in
``system:masters``.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.testing import client_config
from informers.testing.binaries import BINARIES_ENV, ControlPlaneBinaries, find_binaries
from informers.testing.errors import ControlPlaneError, GoMissingError
from informers.testing.pki import make_certificates

__all__ = [
    "BINARIES_ENV",
    "ControlPlane",
    "ControlPlaneBinaries",
    "ControlPlaneError",
    "GoMissingError",
    "find_binaries",
]

_SERVICE_CIDR = "10.0.0.0/24"  # kube-apiserver's default --service-cluster-ip-range
_POLL = 0.2  # seconds between readiness probes
_LOG_TAIL = 40  # log lines quoted in an error
_START_ATTEMPTS = 3  # tries when a chosen port was taken meanwhile

logger = logging.getLogger(__name__)


def _free_ports(count: int) -> list[int]:
    """``count`` distinct loopback ports that were free a moment ago (another process may
    still take one before our child binds it: :meth:`ControlPlane.start` retries then)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class _Process:
    """One child process with its log file; started, probed and stopped by ControlPlane."""

    def __init__(self, name: str, log_path: str) -> None:
        self.name = name
        self.log_path = log_path
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self, argv: Sequence[str]) -> None:
        command = list(argv)
        # Die with the test process if it is killed outright (the death signal follows the
        # thread that forked, so only from the main thread).
        if threading.current_thread() is threading.main_thread() and shutil.which("setpriv"):
            command = ["setpriv", "--pdeathsig", "KILL", "--", *command]
        with open(self.log_path, "ab") as log:
            log.write(f"--- {' '.join(argv)}\n".encode())
            log.flush()
            self.popen = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, timeout: float, kill: bool = False) -> None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL (at once if ``kill``)."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
            if kill:
                self.popen.kill()
            else:
                self.popen.terminate()
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.popen = None

    def tail(self, lines: int = _LOG_TAIL) -> str:
        try:
            with open(self.log_path, errors="replace") as handle:
                return "".join(handle.readlines()[-lines:])
        except OSError:
            return ""


class ControlPlane:
    """etcd and kube-apiserver on random loopback ports, and on demand kube-controller-manager.

    Offers the client side of :class:`~informers.testing.ApiServer` (:attr:`url`,
    :attr:`token`, :meth:`api_client`, :meth:`kubeconfig`, :meth:`write_kubeconfig`) so a test
    can be parametrised by server. The API server only speaks HTTPS; :attr:`url` and
    :attr:`https_url` are the same.

    kube-apiserver runs with ``--authorization-mode=RBAC``, a static token file (the token is
    in ``system:masters``), ``--endpoint-reconciler-type=none`` (Endpoints reject loopback
    addresses) and without the ``ServiceAccount`` admission plugin (no controller manager
    creates the ``default`` service accounts; pods are admitted as by the embedded server).
    etcd runs with ``--unsafe-no-fsync``: durability does not matter in tests.

    Not thread-safe: start, stop and restart from one thread (the clients it hands out are
    independent). :meth:`stop` leaves the logs and certificates in :attr:`work_dir`; it removes
    the directory only when this object created it, ``keep_work_dir`` is false and
    :meth:`start` did not fail. :meth:`logs` gives the last lines of each log.

    Args:
        binaries: what to run (see :func:`find_binaries`).
        work_dir: certificates, token file, kubeconfig, etcd data and logs (default: a new
            temporary directory).
        keep_work_dir: keep a temporary ``work_dir`` on :meth:`stop`.
        apiserver_args: extra kube-apiserver flags (``--flag=value``), after ours (so they win
            for single-valued flags).
        feature_gates: kube-apiserver feature gates by name, passed as one
            ``--feature-gates=A=true,B=false`` flag before ``apiserver_args`` (e.g.
            ``{"ShardedListAndWatch": True}``, alpha and off by default in v1.36).
        etcd_args: extra etcd flags, after ours.
        startup_timeout: seconds to wait for each component's health endpoint.
        clock: time for the readiness polls.
    """

    def __init__(
        self, binaries: ControlPlaneBinaries, *, work_dir: str | os.PathLike[str] | None = None,
        keep_work_dir: bool = False, apiserver_args: Iterable[str] = (),
        etcd_args: Iterable[str] = (), startup_timeout: float = 180.0,
        clock: Clock = REAL_CLOCK, feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        self.binaries = binaries
        self._own_dir = work_dir is None
        self.work_dir = (tempfile.mkdtemp(prefix="kube-informers-control-plane-")
                         if work_dir is None else os.fspath(work_dir))
        self.keep_work_dir = keep_work_dir
        self.apiserver_args = list(apiserver_args)
        self.feature_gates = dict(feature_gates or {})
        self.etcd_args = list(etcd_args)
        self.startup_timeout = startup_timeout
        self.clock = clock
        self.token = secrets.token_urlsafe(24)
        self.host = "127.0.0.1"
        self.port = 0
        self.etcd_client_port = 0
        self.etcd_peer_port = 0
        self.controller_manager_port = 0
        self._etcd = _Process("etcd", self._path("etcd.log"))
        self._apiserver = _Process("kube-apiserver", self._path("kube-apiserver.log"))
        self._controller_manager = _Process(
            "kube-controller-manager", self._path("kube-controller-manager.log"))
        self._started = False

    # -- addresses and files -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``https://127.0.0.1:<port>`` of kube-apiserver (valid after :meth:`start`)."""
        return f"https://{self.host}:{self.port}"

    @property
    def https_url(self) -> str:
        """The same as :attr:`url` (the embedded server's name for its TLS listener)."""
        return self.url

    @property
    def etcd_url(self) -> str:
        return f"http://{self.host}:{self.etcd_client_port}"

    @property
    def ca_file(self) -> str:
        """The CA certificate that signed kube-apiserver's serving certificate."""
        return self._path("ca.crt")

    @property
    def kubeconfig_path(self) -> str:
        """A kubeconfig for the admin token, written by :meth:`start`."""
        return self._path("kubeconfig")

    @property
    def log_dir(self) -> str:
        return self.work_dir

    def _path(self, name: str) -> str:
        return os.path.join(self.work_dir, name)

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> ControlPlane:
        """Make the certificates, start etcd, then kube-apiserver, and wait until
        ``/readyz`` answers ``ok``. Idempotent.

        Raises:
            ControlPlaneError: a component exited or was not healthy within
                ``startup_timeout``; the message quotes its log.
        """
        if self._started:
            return self
        os.makedirs(self.work_dir, exist_ok=True)
        self._write_credentials()
        atexit.register(self.stop)
        self._started = True
        try:
            for attempt in range(1, _START_ATTEMPTS + 1):
                try:
                    self._start_processes()
                    break
                except ControlPlaneError as exc:
                    if "address already in use" not in str(exc) or attempt == _START_ATTEMPTS:
                        raise
                    logger.warning("control plane: a port was taken, starting again: %s", exc)
                    for process in (self._apiserver, self._etcd):
                        process.stop(5.0, kill=True)
                    shutil.rmtree(self._path("etcd-data"), ignore_errors=True)
        except BaseException:
            self.keep_work_dir = True  # the error names the logs in it
            self.stop()
            raise
        logger.info("control plane serving at %s (logs in %s)", self.url, self.work_dir)
        return self

    def _start_processes(self) -> None:
        self.etcd_client_port, self.etcd_peer_port, self.port = _free_ports(3)
        self._start_etcd()
        self._apiserver.start([self.binaries.kube_apiserver, *self._apiserver_argv()])
        self._wait_healthy(self._apiserver, f"{self.url}/readyz", self._ssl_context(), self.token)
        self.write_kubeconfig(self.kubeconfig_path)

    def stop(self, timeout: float = 15.0) -> None:
        """Stop kube-controller-manager, kube-apiserver, then etcd (SIGTERM, then SIGKILL
        after ``timeout``); remove etcd's data. Idempotent."""
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        for process in (self._controller_manager, self._apiserver, self._etcd):
            process.stop(timeout)
        shutil.rmtree(self._path("etcd-data"), ignore_errors=True)
        if self._own_dir and not self.keep_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def stop_etcd(self, timeout: float = 15.0, *, kill: bool = False) -> None:
        """Stop etcd only; kube-apiserver stays up and answers 5xx meanwhile. A graceful stop
        takes several seconds while kube-apiserver holds watches; ``kill`` (SIGKILL, a crash)
        is immediate and loses nothing written (the page cache survives a process crash)."""
        self._etcd.stop(timeout, kill)

    def start_etcd(self) -> None:
        """Start etcd again on the same ports and data directory, and wait for its health."""
        if not self._etcd.alive():
            self._start_etcd()

    def restart_etcd(self, timeout: float = 15.0, *, kill: bool = False) -> None:
        """Stop (see :meth:`stop_etcd`) and start etcd, keeping its data; kube-apiserver
        reconnects by itself."""
        self.stop_etcd(timeout, kill=kill)
        self.start_etcd()

    def logs(self) -> dict[str, str]:
        """The last lines of each component's log, by component name."""
        return {p.name: p.tail() for p in (self._etcd, self._apiserver, self._controller_manager)}

    # -- kube-controller-manager ---------------------------------------------------------------

    def start_controller_manager(
        self, controllers: Sequence[str] = ("endpoints-controller",),
        extra_args: Iterable[str] = (),
    ) -> None:
        """Start kube-controller-manager running only ``controllers`` (default: the endpoints
        controller, whose alias is ``endpoint``), without leader election, with the admin
        kubeconfig; wait for its ``/healthz``. Stop it with :meth:`stop_controller_manager`."""
        if not self._started:
            raise ControlPlaneError("start the control plane before kube-controller-manager")
        if self._controller_manager.alive():
            raise ControlPlaneError("kube-controller-manager is already running")
        (self.controller_manager_port,) = _free_ports(1)
        cert_dir = self._path("kube-controller-manager-certs")
        self._controller_manager.start([
            self.binaries.kube_controller_manager,
            f"--kubeconfig={self.kubeconfig_path}",
            f"--controllers={','.join(controllers)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={self._path('sa.key')}",
            f"--bind-address={self.host}",
            f"--secure-port={self.controller_manager_port}",
            f"--cert-dir={cert_dir}",  # a self-signed serving certificate
            # No --authentication/authorization-kubeconfig: its server then only answers the
            # always-allowed paths (/healthz, /readyz, /livez), all we probe.
            "--profiling=false",
            *extra_args,
        ])
        self._wait_healthy(self._controller_manager,
                           f"https://{self.host}:{self.controller_manager_port}/healthz",
                           _insecure_context(), None)

    def stop_controller_manager(self, timeout: float = 15.0) -> None:
        self._controller_manager.stop(timeout)

    # -- clients -------------------------------------------------------------------------------

    def api_client(self, *, secure: bool = True) -> Any:
        """A new ``kubernetes.client.ApiClient`` (HTTPS verifying :attr:`ca_file`, admin
        token). ``secure`` exists for signature parity with ``ApiServer``: always TLS."""
        del secure
        return client_config.api_client(self.url, self.token, self.ca_file)

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig (as a dict) with the admin token, trusting :attr:`ca_file`."""
        with open(self.ca_file, "rb") as handle:
            ca_pem = handle.read()
        return client_config.kubeconfig(
            "kube-informers-control-plane", self.url, ca_pem, self.token, namespace)

    def write_kubeconfig(self, path: str | os.PathLike[str], namespace: str = "default") -> str:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600)."""
        return client_config.write_kubeconfig(path, self.kubeconfig(namespace))

    # -- internals -----------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        client_url = self.etcd_url
        peer_url = f"http://{self.host}:{self.etcd_peer_port}"
        self._etcd.start([
            self.binaries.etcd,
            "--name=default",
            f"--data-dir={self._path('etcd-data')}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
            *self.etcd_args,
        ])
        self._wait_healthy(self._etcd, f"{client_url}/health", None, None)

    def _apiserver_argv(self) -> list[str]:
        return [
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={self.host}",
            f"--advertise-address={self.host}",
            f"--secure-port={self.port}",
            f"--cert-dir={self._path('kube-apiserver-certs')}",
            f"--tls-cert-file={self._path('server.crt')}",
            f"--tls-private-key-file={self._path('server.key')}",
            f"--token-auth-file={self._path('tokens.csv')}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={self._path('sa.pub')}",
            f"--service-account-signing-key-file={self._path('sa.key')}",
            f"--service-cluster-ip-range={_SERVICE_CIDR}",
            "--endpoint-reconciler-type=none",
            "--disable-admission-plugins=ServiceAccount",
            "--profiling=false",
            *self._feature_gates_argv(),
            *self.apiserver_args,
        ]

    def _feature_gates_argv(self) -> list[str]:
        if not self.feature_gates:
            return []
        gates = ",".join(f"{name}={str(bool(on)).lower()}"
                         for name, on in sorted(self.feature_gates.items()))
        return [f"--feature-gates={gates}"]

    def _ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)

    def _wait_healthy(
        self, process: _Process, url: str, context: ssl.SSLContext | None, token: str | None,
    ) -> None:
        deadline = self.clock.now() + self.startup_timeout
        last = "no answer"
        while True:
            if not process.alive():
                code = process.popen.returncode if process.popen is not None else None
                raise ControlPlaneError(
                    f"{process.name} exited (code {code}) before it was healthy; "
                    f"log {process.log_path}:\n{process.tail()}")
            request = urllib.request.Request(url)
            if token is not None:
                request.add_header("Authorization", f"Bearer {token}")
            try:
                with urllib.request.urlopen(request, timeout=5, context=context) as response:
                    body = response.read().decode(errors="replace")
                    if response.status == 200:
                        return
                    last = f"{response.status} {body[:200]}"
            except urllib.error.HTTPError as exc:
                last = f"{exc.code} {exc.read().decode(errors='replace')[:500]}"
            except (OSError, ssl.SSLError) as exc:
                last = repr(exc)
            if self.clock.now() >= deadline:
                raise ControlPlaneError(
                    f"{process.name} not healthy at {url} after {self.startup_timeout:.0f} s "
                    f"(last answer: {last}); log {process.log_path}:\n{process.tail()}")
            self.clock.sleep(_POLL)

    def _write_credentials(self) -> None:
        """CA, serving certificate and key, service-account key pair, token file."""
        if not os.path.exists(self._path("server.crt")):
            make_certificates(self.work_dir)
        with open(self._path("tokens.csv"), "w") as handle:
            handle.write(f'{self.token},kube-informers-admin,kube-informers-admin,'
                         f'"system:masters"\n')


def _insecure_context() -> ssl.SSLContext:
    # kube-controller-manager serves /healthz with a certificate it made up itself.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context

