"""Finds, or builds, the real control plane's binaries: kube-apiserver, controller-manager, etcd.

They come from ``tools/control-plane/build.sh`` of the kube-informers repository (built from the
published Go modules of one Kubernetes release) or from any directory that holds the three
binaries (``$KUBE_INFORMERS_CONTROL_PLANE_BIN``);
:class:`~informers.testing.control_plane.ControlPlane` runs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import IO

from informers.testing.errors import ControlPlaneError, GoMissingError

__all__ = ["BINARIES_ENV", "ControlPlaneBinaries", "find_binaries"]

BINARIES_ENV = "KUBE_INFORMERS_CONTROL_PLANE_BIN"
"""Environment variable naming a directory of ready binaries; :func:`find_binaries` then builds
nothing."""

_NAMES = ("kube-apiserver", "kube-controller-manager", "etcd")


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
        raise ControlPlaneError(
            f"{script} failed with exit code {done.returncode} (its log is on stderr)")
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
