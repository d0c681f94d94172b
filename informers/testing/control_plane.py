"""``ControlPlane``: a real etcd and kube-apiserver (and kube-controller-manager) on loopback.

For tests that must hold against the real thing rather than the embedded
:class:`~informers.testing.ApiServer`. The binaries come from ``tools/control-plane/build.sh``
of the kube-informers repository (built from the published Go modules of one Kubernetes
release) or from any directory that holds ``kube-apiserver``, ``kube-controller-manager`` and
``etcd``; see :func:`find_binaries`.

Certificates are made with the ``openssl`` command: a throwaway CA, a serving certificate for
``127.0.0.1``, ``::1`` and ``localhost``, and a service-account signing key. Clients
authenticate with a static bearer token of a user in ``system:masters``.
"""

from __future__ import annotations

import atexit
import base64
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from informers.clock import REAL_CLOCK, Clock
from informers.errors import InformersError

__all__ = [
    "BINARIES_ENV",
    "ControlPlane",
    "ControlPlaneBinaries",
    "ControlPlaneError",
    "GoMissingError",
    "find_binaries",
]

BINARIES_ENV = "KUBE_INFORMERS_CONTROL_PLANE_BIN"
"""Environment variable naming a directory of ready binaries; :func:`find_binaries` then builds
nothing."""

_NAMES = ("kube-apiserver", "kube-controller-manager", "etcd")
_SERVICE_CIDR = "10.0.0.0/24"  # kube-apiserver's default --service-cluster-ip-range
_POLL = 0.2  # seconds between readiness probes
_LOG_TAIL = 40  # log lines quoted in an error


class ControlPlaneError(InformersError, RuntimeError):
    """The control plane could not be built, started or probed; the message quotes the log."""


class GoMissingError(ControlPlaneError):
    """The binaries are not built and there is no ``go`` command to build them."""


@dataclass(frozen=True)
class ControlPlaneBinaries:
    """Paths of the three binaries and the versions they were built from."""

    kube_apiserver: str
    kube_controller_manager: str
    etcd: str
    kubernetes_version: str = "unknown"
    etcd_version: str = "unknown"

    @classmethod
    def from_dir(cls, bin_dir: str | os.PathLike[str]) -> ControlPlaneBinaries:
        """The binaries in ``bin_dir``; raises :class:`ControlPlaneError` if one is missing."""
        paths = [os.path.join(os.fspath(bin_dir), name) for name in _NAMES]
        missing = [p for p in paths if not os.access(p, os.X_OK)]
        if missing:
            raise ControlPlaneError(f"control plane binaries missing: {', '.join(missing)}")
        apiserver, controller_manager, etcd = paths
        return cls(apiserver, controller_manager, etcd,
                   kubernetes_version=_version(apiserver, "Kubernetes"),
                   etcd_version=_version(etcd, "etcd Version:"))


def _version(binary: str, prefix: str) -> str:
    # "kube-apiserver --version" prints "Kubernetes v1.36.3"; etcd "etcd Version: 3.6.8".
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return "unknown"


def find_binaries(
    build_script: str | os.PathLike[str], *, build: bool = True, timeout: float = 3600.0,
    log: IO[str] | None = None,
) -> ControlPlaneBinaries:
    """Locate the control plane binaries, building them first if needed and allowed.

    Order: the directory in ``$KUBE_INFORMERS_CONTROL_PLANE_BIN`` if set; else what
    ``build_script --check`` reports as cached; else, when ``build`` is set, the result of
    running ``build_script`` (its progress goes to ``log``, default: inherited stderr).

    Raises:
        GoMissingError: nothing is cached and ``go`` is not on ``PATH``.
        ControlPlaneError: the build failed, timed out, or ``build`` is false and nothing is
            cached.
    """
    override = os.environ.get(BINARIES_ENV)
    if override:
        return ControlPlaneBinaries.from_dir(override)
    script = os.fspath(build_script)
    check = subprocess.run([script, "--check"], capture_output=True, text=True, check=False)
    if check.returncode == 0:
        return _parse_build_output(check.stdout)
    if shutil.which("go") is None:
        raise GoMissingError(
            "the real control plane is not built and 'go' is not on PATH to build it "
            f"({script}); install Go or set {BINARIES_ENV}")
    if not build:
        raise ControlPlaneError(f"the real control plane is not built: run {script}")
    try:
        done = subprocess.run([script], stdout=subprocess.PIPE, stderr=log, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        raise ControlPlaneError(f"{script} did not finish within {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise ControlPlaneError(f"{script} failed with exit code {done.returncode}")
    return _parse_build_output(done.stdout)


def _parse_build_output(text: str) -> ControlPlaneBinaries:
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    try:
        return ControlPlaneBinaries(
            values["kube-apiserver"], values["kube-controller-manager"], values["etcd"],
            kubernetes_version=values.get("k8s-version", "unknown"),
            etcd_version=values.get("etcd-version", "unknown"))
    except KeyError as exc:
        raise ControlPlaneError(f"unexpected build script output: {text!r}") from exc


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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

    def stop(self, timeout: float) -> None:
        """SIGTERM, wait up to ``timeout``, then SIGKILL."""
        if self.popen is None:
            return
        if self.popen.poll() is None:
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
    independent). :meth:`stop` leaves the logs and certificates in :attr:`work_dir` (and
    removes the directory only when this object created it and ``keep_work_dir`` is false).

    Args:
        binaries: what to run (see :func:`find_binaries`).
        work_dir: certificates, token file, kubeconfig, etcd data and logs (default: a new
            temporary directory).
        keep_work_dir: keep a temporary ``work_dir`` on :meth:`stop`.
        apiserver_args: extra kube-apiserver flags (``--flag=value``), after ours.
        etcd_args: extra etcd flags, after ours.
        startup_timeout: seconds to wait for each component's health endpoint.
        clock: time for the readiness polls.
    """

    def __init__(
        self, binaries: ControlPlaneBinaries, *, work_dir: str | os.PathLike[str] | None = None,
        keep_work_dir: bool = False, apiserver_args: Iterable[str] = (),
        etcd_args: Iterable[str] = (), startup_timeout: float = 180.0,
        clock: Clock = REAL_CLOCK,
    ) -> None:
        self.binaries = binaries
        self._own_dir = work_dir is None
        self.work_dir = (tempfile.mkdtemp(prefix="kube-informers-control-plane-")
                         if work_dir is None else os.fspath(work_dir))
        self.keep_work_dir = keep_work_dir
        self.apiserver_args = list(apiserver_args)
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
            self.etcd_client_port, self.etcd_peer_port = _free_port(), _free_port()
            self._start_etcd()
            self.port = _free_port()
            self._apiserver.start([self.binaries.kube_apiserver, *self._apiserver_argv()])
            self._wait_healthy(self._apiserver, f"{self.url}/readyz", self._ssl_context(),
                               self.token)
            self.write_kubeconfig(self.kubeconfig_path)
        except BaseException:
            self.stop()
            raise
        return self

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

    def stop_etcd(self, timeout: float = 15.0) -> None:
        """Stop etcd only (kube-apiserver stays up and reports it unhealthy)."""
        self._etcd.stop(timeout)

    def start_etcd(self) -> None:
        """Start etcd again on the same ports and data directory, and wait for its health."""
        if not self._etcd.alive():
            self._start_etcd()

    def restart_etcd(self, timeout: float = 15.0) -> None:
        """Stop and start etcd, keeping its data; kube-apiserver reconnects by itself."""
        self.stop_etcd(timeout)
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
        self.controller_manager_port = _free_port()
        cert_dir = self._path("kube-controller-manager-certs")
        self._controller_manager.start([
            self.binaries.kube_controller_manager,
            f"--kubeconfig={self.kubeconfig_path}",
            f"--authentication-kubeconfig={self.kubeconfig_path}",
            f"--authorization-kubeconfig={self.kubeconfig_path}",
            f"--controllers={','.join(controllers)}",
            "--leader-elect=false",
            "--use-service-account-credentials=false",
            f"--service-account-private-key-file={self._path('sa.key')}",
            f"--bind-address={self.host}",
            f"--secure-port={self.controller_manager_port}",
            f"--cert-dir={cert_dir}",
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
        from kubernetes import client

        del secure
        configuration = client.Configuration(
            host=self.url, api_key={"BearerToken": self.token},
            api_key_prefix={"BearerToken": "Bearer"}, ssl_ca_cert=self.ca_file,
        )
        return client.ApiClient(configuration)

    def kubeconfig(self, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig (as a dict) with the admin token, trusting :attr:`ca_file`."""
        name = "kube-informers-control-plane"
        with open(self.ca_file, "rb") as handle:
            ca_data = base64.b64encode(handle.read()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {
                "server": self.url, "certificate-authority-data": ca_data}}],
            "users": [{"name": name, "user": {"token": self.token}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name,
                                                    "namespace": namespace}}],
            "current-context": name,
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], namespace: str = "default") -> str:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600)."""
        import yaml

        text = yaml.safe_dump(self.kubeconfig(namespace), sort_keys=False)
        fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        return os.fspath(path)

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
            *self.apiserver_args,
        ]

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
            _make_certificates(self.work_dir)
        with open(self._path("tokens.csv"), "w") as handle:
            handle.write(f'{self.token},kube-informers-admin,kube-informers-admin,'
                         f'"system:masters"\n')


def _insecure_context() -> ssl.SSLContext:
    # kube-controller-manager serves /healthz with a certificate it made up itself.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


_CA_CONFIG = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = kube-informers-control-plane-ca
[ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
"""

_SERVER_EXTENSIONS = """\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, \
DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, IP:10.0.0.1
"""


def _make_certificates(directory: str) -> None:
    if shutil.which("openssl") is None:
        raise ControlPlaneError("the 'openssl' command is needed to make test certificates")

    def path(name: str) -> str:
        return os.path.join(directory, name)

    with open(path("openssl.cnf"), "w") as handle:
        handle.write(_CA_CONFIG)
    with open(path("server.ext"), "w") as handle:
        handle.write(_SERVER_EXTENSIONS)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    commands = [
        ["req", "-x509", *ec, "-keyout", path("ca.key"), "-out", path("ca.crt"),
         "-days", "3650", "-config", path("openssl.cnf"), "-extensions", "ext"],
        ["req", "-new", *ec, "-keyout", path("server.key"), "-out", path("server.csr"),
         "-subj", "/CN=kube-apiserver"],
        ["x509", "-req", "-in", path("server.csr"), "-CA", path("ca.crt"),
         "-CAkey", path("ca.key"), "-set_serial", "2", "-days", "3650",
         "-extfile", path("server.ext"), "-out", path("server.crt")],
        ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
         "-out", path("sa.key")],
        ["pkey", "-in", path("sa.key"), "-pubout", "-out", path("sa.pub")],
    ]
    for command in commands:
        done = subprocess.run(["openssl", *command], capture_output=True, text=True,
                              check=False)
        if done.returncode != 0:
            raise ControlPlaneError(
                f"openssl {command[0]} failed (exit {done.returncode}): {done.stderr.strip()}")
