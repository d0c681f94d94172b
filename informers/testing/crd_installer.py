"""Installs CRDs on a running API server and waits until they are served (envtest).

For the real control plane (:class:`~informers.testing.control_plane.ControlPlane`) what
controller-runtime's ``envtest`` does with ``CRDInstallOptions`` (``pkg/envtest/crd.go`` at
v0.23.0): read the ``CustomResourceDefinition`` documents of files and folders
(:func:`read_crds`, envtest's ``Paths``), create each one or, if it
exists, update it (``CreateCRDs``), then poll until each is ``Established`` and every served
version's resource is in discovery (``WaitForCRDs``: ``PollInterval`` 100 ms, ``MaxTime``
10 s by default). The embedded :class:`~informers.testing.ApiServer` does the same at start
with ``ApiServer(crds=...)``.

Functions, no state: safe to call from any thread with clients of their own.
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Iterable
from typing import Any

from informers.clock import REAL_CLOCK, Clock
from informers.errors import StatusError
from informers.testing.errors import ControlPlaneError
from informers.yaml_loader import YAMLLoadError, load_all_yaml

__all__ = ["DEFAULT_MAX_WAIT", "DEFAULT_POLL_INTERVAL", "install_crds", "read_crds",
           "uninstall_crds"]

DEFAULT_POLL_INTERVAL = 0.1
"""Seconds between checks (envtest ``crd.go`` ``defaultPollInterval = 100 * time.Millisecond``)."""
DEFAULT_MAX_WAIT = 10.0
"""Seconds to wait for the CRDs to be served (envtest ``defaultMaxWait = 10 * time.Second``)."""

_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _call(api: Any, method: str, path: str, body: Any = None) -> Any:
    """A JSON request through a ``kubernetes.client.ApiClient``; non-2xx raise
    :class:`~informers.errors.StatusError`."""
    method, url, headers, body, _ = api.param_serialize(
        method, path, header_params={"Content-Type": "application/json",
                                     "Accept": "application/json"},
        body=body, auth_settings=["BearerToken"])
    response = api.call_api(method, url, headers, body, _request_timeout=30)
    data = response.read()
    if not 200 <= response.status < 300:
        try:
            status = json.loads(data)
        except ValueError:
            status = None
        if not isinstance(status, dict):
            raise StatusError.from_code(response.status, data.decode(errors="replace"))
        raise StatusError(status)
    return json.loads(data)


def install_crds(
    api: Any, paths: Iterable[str | os.PathLike[str]] = (), *,
    crds: Iterable[dict[str, Any]] = (), max_wait: float = DEFAULT_MAX_WAIT,
    poll_interval: float = DEFAULT_POLL_INTERVAL, clock: Clock = REAL_CLOCK,
) -> list[dict[str, Any]]:
    """Create or update the CRDs of ``paths`` (then ``crds``) and wait until they are served.

    Args:
        api: a ``kubernetes.client.ApiClient`` of the server (its credentials are used).
        paths: files, or folders of ``.yaml``/``.yml``/``.json`` files (not recursive).
        crds: CRD objects (dicts) to install as well.
        max_wait: seconds until :class:`ControlPlaneError` if one is not served yet.
        poll_interval: seconds between checks, on ``clock``.

    Returns:
        The CRDs as the server stored them, in order.

    Raises:
        FileNotFoundError: a path does not exist.
        ValueError: a file is not YAML.
        StatusError: the server refused a CRD (a 422 names the fields).
        ControlPlaneError: not ``Established`` and served within ``max_wait``; the message
            names the CRDs and resources still missing.
    """
    wanted = [*read_crds(paths), *crds]
    installed = []
    for crd in wanted:
        name = crd["metadata"]["name"]
        try:
            current = _call(api, "GET", f"{_CRDS}/{name}")
        except StatusError as err:
            if err.code != 404:
                raise
            installed.append(_call(api, "POST", _CRDS, crd))
            continue
        body = {**crd, "metadata": {**crd["metadata"],
                                    "resourceVersion": current["metadata"]["resourceVersion"]}}
        installed.append(_call(api, "PUT", f"{_CRDS}/{name}", body))
    _wait_served(api, wanted, max_wait, poll_interval, clock)
    return installed


def _missing(api: Any, crds: list[dict[str, Any]]) -> list[str]:
    """What is not ready yet: ``<crd> not Established`` or ``<group/version> <plural>``."""
    missing = []
    for crd in crds:
        name = crd["metadata"]["name"]
        try:
            stored = _call(api, "GET", f"{_CRDS}/{name}")
        except StatusError:
            missing.append(f"{name} not found")
            continue
        conditions = (stored.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in conditions):
            missing.append(f"{name} not Established")
            continue
        spec = stored["spec"]
        for version in spec.get("versions") or []:
            if not version.get("served"):
                continue
            group_version = f"{spec['group']}/{version['name']}"
            try:
                listed = _call(api, "GET", f"/apis/{group_version}")
            except StatusError:
                listed = {}
            plurals = {r.get("name") for r in listed.get("resources") or []}
            if spec["names"]["plural"] not in plurals:
                missing.append(f"{group_version} {spec['names']['plural']}")
    return missing


def _wait_served(api: Any, crds: list[dict[str, Any]], max_wait: float,
                 poll_interval: float, clock: Clock) -> None:
    deadline = clock.now() + max_wait
    while True:
        missing = _missing(api, crds)
        if not missing:
            return
        if clock.now() >= deadline:
            raise ControlPlaneError(
                f"CRDs not served after {max_wait:g} s: {', '.join(missing)}")
        clock.sleep(poll_interval)


def uninstall_crds(api: Any, crds: Iterable[dict[str, Any]]) -> None:
    """Delete ``crds`` (by name); ones already gone are skipped (envtest
    ``UninstallCRDs``)."""
    for crd in crds:
        try:
            _call(api, "DELETE", f"{_CRDS}/{crd['metadata']['name']}")
        except StatusError as err:
            if err.code != 404:
                raise


_CRD_FILE_SUFFIXES = (".json", ".yaml", ".yml")


def read_crds(paths: Iterable[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The ``CustomResourceDefinition`` documents of ``paths``, in order: a file, or a folder
    whose ``.json``, ``.yaml`` and ``.yml`` files are read in name order (not recursively),
    as envtest's ``CRDInstallOptions.Paths`` (``CRDDirectoryPaths``) reads them. Other kinds
    of documents are skipped, as there.

    Raises:
        FileNotFoundError: a path does not exist (envtest's ``ErrorIfPathMissing``).
        ValueError: a file is not YAML, or a document is not a mapping.
    """
    found: list[dict[str, Any]] = []
    for raw in paths:
        path = pathlib.Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir()
                           if p.is_file() and p.suffix in _CRD_FILE_SUFFIXES)
        elif path.exists():
            files = [path]
        else:
            raise FileNotFoundError(f"CRD path {str(path)!r} does not exist")
        for file in files:
            try:
                documents = load_all_yaml(file.read_bytes(), str(file))
            except YAMLLoadError as err:
                raise ValueError(f"{file}: not YAML: {err}") from None
            for index, doc in enumerate(documents):
                if doc is None:
                    continue
                if not isinstance(doc, dict):
                    raise ValueError(f"{file}: document {index} is not a mapping")
                if (doc.get("kind") == "CustomResourceDefinition"
                        and str(doc.get("apiVersion", "")).startswith("apiextensions.k8s.io/")):
                    found.append(doc)
    return found
