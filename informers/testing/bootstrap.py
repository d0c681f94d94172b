"""The objects a new cluster's API server makes for itself: the ``kubernetes`` Service.

kube-apiserver's ``kubernetesservice`` controller
(``pkg/controlplane/controller/kubernetesservice/controller.go`` ``UpdateKubernetesService``,
``CreateOrUpdateMasterServiceIfNeeded`` and ``createPortAndServiceSpec``) keeps a Service
``kubernetes`` in ``default`` once that namespace exists: labels ``component: apiserver``
and ``provider: kubernetes``; one port ``https`` 443/TCP whose ``targetPort`` is the secure
port; ``clusterIP`` the first address of the service range (``10.0.0.1`` for the default
``10.0.0.0/24``, which :func:`informers.testing.kind_rules.allocate_cluster_ip` never
hands out); ``sessionAffinity: None``, ``type: ClusterIP`` and the registry's defaults
(``ipFamilies``, ``ipFamilyPolicy``, ``internalTrafficPolicy``), written by the manager
``kube-apiserver``. The controller changes ``targetPort`` when it differs.

No Endpoints or EndpointSlice ``kubernetes``: the endpoint reconciler would publish the
server's advertise address, and a loopback address is invalid in Endpoints (the project's
real control plane runs with ``--endpoint-reconciler-type=none`` for the same reason, and
serves none either).
"""

from __future__ import annotations

import copy
from typing import Any

from informers.testing.resources import ResourceRegistry
from informers.testing.storage import Storage, object_key
from informers.testing.strategy import Strategy

__all__ = ["KUBERNETES_SERVICE_IP", "ensure_kubernetes_service", "kubernetes_service"]

KUBERNETES_SERVICE_IP = "10.0.0.1"
"""The first address of kube-apiserver's default ``--service-cluster-ip-range``."""

_FIELDS: dict[str, Any] = {
    "f:metadata": {"f:labels": {".": {}, "f:component": {}, "f:provider": {}}},
    "f:spec": {
        "f:clusterIP": {}, "f:internalTrafficPolicy": {}, "f:ipFamilyPolicy": {},
        "f:ports": {".": {}, 'k:{"port":443,"protocol":"TCP"}': {
            ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
        "f:sessionAffinity": {}, "f:type": {},
    },
}
"""The ``kube-apiserver`` Update entry kube-apiserver v1.36.3 writes for the Service."""


def kubernetes_service(secure_port: int, now: str) -> dict[str, Any]:
    """The Service as kube-apiserver v1.36.3 stores it (``now``: its managed-fields time)."""
    return {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
            "managedFields": [{
                "manager": "kube-apiserver", "operation": "Update", "apiVersion": "v1",
                "time": now, "fieldsType": "FieldsV1", "fieldsV1": copy.deepcopy(_FIELDS)}],
        },
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": 443,
                       "targetPort": secure_port}],
            "clusterIP": KUBERNETES_SERVICE_IP, "clusterIPs": [KUBERNETES_SERVICE_IP],
            "type": "ClusterIP", "sessionAffinity": "None", "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster",
        },
        "status": {"loadBalancer": {}},
    }


def ensure_kubernetes_service(strategy: Strategy, storage: Storage, registry: ResourceRegistry,
                              secure_port: int) -> None:
    """Create the Service if ``default`` exists and it does not, or set its ``targetPort``
    to ``secure_port`` (a restarted server may listen elsewhere). Called at start."""
    namespaces = registry.lookup("", "v1", "namespaces")
    services = registry.lookup("", "v1", "services")
    assert namespaces is not None and services is not None
    with storage.lock:
        if storage.get(namespaces, "default") is None:
            return
        entry = storage.get(services, object_key(services, "default", "kubernetes"))
        if entry is None:
            strategy.create(services, "default", kubernetes_service(secure_port, strategy.now()),
                            seeding=True)
            return
        current = entry.decode()
        ports = (current.get("spec") or {}).get("ports") or []
        if ports and ports[0].get("targetPort") != secure_port:
            ports[0]["targetPort"] = secure_port
            strategy.update(services, "default", "kubernetes", current)
