"""kubectl's ``Table`` responses (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

The columns and cells are those of kube-apiserver's printers
(k8s.io/kubernetes@v1.36.3/pkg/printers/internalversion/printers.go: ``AddHandlers`` and the
``print<Kind>`` functions) for pods, services, endpoints, deployments, replicasets, namespaces,
nodes, configmaps, secrets, events and leases; every other kind gets the default table (``Name``,
``Created At``: apiserver/pkg/registry/rest/table.go ``DefaultTableConvertor``).
``includeObject`` (``None``, ``Metadata`` the default, ``Object``) is applied as
apiserver/pkg/endpoints/handlers/response.go ``transformResponseObject`` does. Column
descriptions are not kube-apiserver's swagger texts (kubectl never shows them). Pure
functions of their inputs; ``now`` is passed in (the server's clock).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from informers.testing import printer_columns

__all__ = ["TableWatchWriter", "human_duration", "label_selector", "table_of", "wants_table"]

Row = list[Any]
_Printer = Callable[[dict[str, Any], datetime.datetime, bool], Row]

_NAME = {"name": "Name", "type": "string", "format": "name",
         "description": "Name must be unique within a namespace.", "priority": 0}


def _column(name: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "format": "", "description": "",
                              "priority": priority}
    return column


def wants_table(accept: str) -> bool:
    """The Accept header's first acceptable type is a ``meta.k8s.io/v1`` Table (kubectl sends
    ``application/json;as=Table;v=v1;g=meta.k8s.io,application/json``)."""
    for part in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in part.split(";")[1:])
        if params.get("as") == "Table":
            return params.get("g") == "meta.k8s.io" and params.get("v") in ("v1", None)
        if part.strip():
            return False
    return False


def human_duration(seconds_total: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration ``HumanDuration``."""
    seconds = int(seconds_total)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _since(stamp: Any, now: datetime.datetime) -> str:
    """``translateTimestampSince``."""
    if not stamp:
        return "<unknown>"
    moment = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return human_duration((now - moment).total_seconds())


def _age(obj: dict[str, Any], now: datetime.datetime) -> str:
    return _since(obj.get("metadata", {}).get("creationTimestamp"), now)


def _name(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def _restartable(container: dict[str, Any] | None) -> bool:
    return bool(container) and container.get("restartPolicy") == "Always"  # type: ignore[union-attr]


def _pod(pod: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    """``printPod``."""
    spec, st = pod.get("spec", {}), pod.get("status", {})
    restarts = restartable_restarts = 0
    total = len(spec.get("containers", []))
    ready = 0
    last_restart = last_restartable = ""
    phase = st.get("phase", "")
    reason = st.get("reason") or phase
    for condition in st.get("conditions", []):
        if condition.get("type") == "PodScheduled" and condition.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    inits = {c.get("name"): c for c in spec.get("initContainers", [])}
    total += sum(1 for c in inits.values() if _restartable(c))
    initializing = False
    for i, cs in enumerate(st.get("initContainerStatuses", [])):
        restarts += int(cs.get("restartCount", 0))
        terminated_last = cs.get("lastState", {}).get("terminated")
        if terminated_last:
            last_restart = max(last_restart, terminated_last.get("finishedAt") or "")
        if _restartable(inits.get(cs.get("name"))):
            restartable_restarts += int(cs.get("restartCount", 0))
            if terminated_last:
                last_restartable = max(last_restartable, terminated_last.get("finishedAt") or "")
        state = cs.get("state", {})
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode", 0) == 0:
            continue
        if _restartable(inits.get(cs.get("name"))) and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if terminated:
            if not terminated.get("reason"):
                reason = (f"Init:Signal:{terminated['signal']}" if terminated.get("signal")
                          else f"Init:ExitCode:{terminated.get('exitCode', 0)}")
            else:
                reason = "Init:" + terminated["reason"]
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers', []))}"
        initializing = True
        break
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in st.get("conditions", []))
    if not initializing or initialized:
        restarts, last_restart = restartable_restarts, last_restartable
        has_running = False
        error_reason = ""
        for cs in reversed(st.get("containerStatuses", [])):
            restarts += int(cs.get("restartCount", 0))
            terminated_last = cs.get("lastState", {}).get("terminated")
            if terminated_last:
                last_restart = max(last_restart, terminated_last.get("finishedAt") or "")
            state = cs.get("state", {})
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated:
                if terminated.get("reason"):
                    reason = terminated["reason"]
                elif terminated.get("signal"):
                    reason = f"Signal:{terminated['signal']}"
                else:
                    reason = f"ExitCode:{terminated.get('exitCode', 0)}"
                if terminated.get("exitCode", 0) != 0:
                    error_reason = reason
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed":
            pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                            for c in st.get("conditions", []))
            if has_running and pod_ready:
                reason = "Running"
            elif error_reason:
                reason = error_reason
            elif has_running:
                reason = "NotReady"
    deleting = pod.get("metadata", {}).get("deletionTimestamp")
    if deleting and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({_since(last_restart, now)} ago)"
    row: Row = [_name(pod), f"{ready}/{total}", reason, restarts_text, _age(pod, now)]
    if wide:
        ips = st.get("podIPs") or []
        gates = spec.get("readinessGates") or []
        gates_text = "<none>"
        if gates:
            conditions = st.get("conditions", [])
            true = 0
            for gate in gates:
                for condition in conditions:
                    if condition.get("type") == gate.get("conditionType"):
                        true += condition.get("status") == "True"
                        break
            gates_text = f"{true}/{len(gates)}"
        row += [(ips[0].get("ip") if ips else "") or "<none>", spec.get("nodeName") or "<none>",
                st.get("nominatedNodeName") or "<none>", gates_text]
    return row


def _containers(template_spec: dict[str, Any]) -> tuple[str, str]:
    containers = template_spec.get("containers", [])
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))


def label_selector(selector: dict[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector`` for the common forms (matchLabels and the set
    operators), sorted by key as ``labels.Selector.String`` is."""
    if not selector:
        return "<none>"
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expression in selector.get("matchExpressions") or []:
        key, op = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(sorted(expression.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, f"{key} {op}")
        parts.append((key, text))
    text = ",".join(t for _, t in sorted(parts))
    return text or "<none>"


def _deployment(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    spec, st = obj.get("spec", {}), obj.get("status", {})
    row: Row = [_name(obj), f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
                st.get("updatedReplicas", 0), st.get("availableReplicas", 0), _age(obj, now)]
    if wide:
        names, images = _containers(spec.get("template", {}).get("spec", {}))
        selector = label_selector(spec.get("selector"))
        row += [names, images, "" if selector == "<none>" else selector]
    return row


def _replica_set(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    spec, st = obj.get("spec", {}), obj.get("status", {})
    row: Row = [_name(obj), spec.get("replicas", 0), st.get("replicas", 0),
                st.get("readyReplicas", 0), _age(obj, now)]
    if wide:
        names, images = _containers(spec.get("template", {}).get("spec", {}))
        row += [names, images, label_selector(spec.get("selector"))]
    return row


def _service(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    spec = obj.get("spec", {})
    kind = spec.get("type", "")
    external_ips = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        external = ",".join(external_ips) or "<none>"
    elif kind == "LoadBalancer":
        ingress = obj.get("status", {}).get("loadBalancer", {}).get("ingress") or []
        lb = [i.get("ip") or i.get("hostname") or "" for i in ingress]
        lb = [x for x in lb if x]
        if not wide and len(",".join(lb)) > 16:
            lb_text = ",".join(lb)[:13] + "..."
            lb = [lb_text]
        external = ",".join(lb + external_ips) or "<pending>"
    elif kind == "ExternalName":
        external = spec.get("externalName", "")
    else:
        external = "<unknown>"
    ports = []
    for port in spec.get("ports") or []:
        if port.get("nodePort"):
            ports.append(f"{port.get('port', 0)}:{port['nodePort']}/{port.get('protocol', '')}")
        else:
            ports.append(f"{port.get('port', 0)}/{port.get('protocol', '')}")
    cluster_ips = spec.get("clusterIPs") or []
    row: Row = [_name(obj), kind, cluster_ips[0] if cluster_ips else "<none>", external,
                ",".join(ports) or "<none>", _age(obj, now)]
    if wide:
        selector = spec.get("selector") or {}
        row.append(",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>")
    return row


def _endpoints_text(obj: dict[str, Any]) -> str:
    """``formatEndpoints`` (all ports)."""
    subsets = obj.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    more = False
    count = 0
    for subset in subsets:
        addresses = subset.get("addresses") or []
        ports = subset.get("ports") or []
        if not ports:
            count += len(addresses)
            for address in addresses:
                if len(shown) == 3:
                    more = True
                    break
                shown.append(address.get("ip", ""))
            continue
        for port in ports:
            count += len(addresses)
            for address in addresses:
                if len(shown) == 3:
                    more = True
                    break
                ip = address.get("ip", "")
                host = f"[{ip}]" if ":" in ip else ip
                shown.append(f"{host}:{port.get('port', 0)}")
    text = ",".join(shown)
    if more:
        text += f" + {count - len(shown)} more..."
    return text


def _lease(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    return [_name(obj), obj.get("spec", {}).get("holderIdentity") or "", _age(obj, now)]


def _node(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    """``printNode``."""
    st = obj.get("status", {})
    ready = [c for c in st.get("conditions", []) if c.get("type") == "Ready"]
    states = [("Ready" if ready[-1].get("status") == "True" else "NotReady")] if ready else []
    states = states or ["Unknown"]
    if obj.get("spec", {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (obj.get("metadata", {}).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[24:]:
            roles.add(key[24:])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = st.get("nodeInfo", {})
    row: Row = [_name(obj), ",".join(states), ",".join(sorted(roles)) or "<none>",
                _age(obj, now), info.get("kubeletVersion", "")]
    if wide:
        def address(kind: str) -> str:
            return next((a.get("address", "") for a in st.get("addresses", [])
                         if a.get("type") == kind), "<none>")

        kernel = info.get("kernelVersion") or "<unknown>"
        if info.get("architecture"):
            kernel += f" ({info['architecture']})"
        row += [address("InternalIP"), address("ExternalIP"), info.get("osImage") or "<unknown>",
                kernel, info.get("containerRuntimeVersion") or "<unknown>"]
    return row


def _event(obj: dict[str, Any], now: datetime.datetime, wide: bool) -> Row:
    """``printEvent`` (wide: kube-apiserver's table convertor always prints wide)."""
    first = (_since(obj["firstTimestamp"], now) if obj.get("firstTimestamp")
             else _since(obj.get("eventTime"), now))
    last = _since(obj["lastTimestamp"], now) if obj.get("lastTimestamp") else first
    count = obj.get("count", 0)
    series = obj.get("series")
    if series is not None:
        last = _since(series.get("lastObservedTime"), now)
        count = series.get("count", 0)
    elif count == 0:
        count = 1
    involved = obj.get("involvedObject", {})
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source", {})
    component = source.get("component") or obj.get("reportingComponent", "")
    instance = source.get("host") or obj.get("reportingInstance", "")
    return [last, obj.get("type", ""), obj.get("reason", ""), target,
            involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component,
            str(obj.get("message", "")).strip(), first, count, _name(obj)]


_PRINTERS: dict[tuple[str, str], tuple[list[dict[str, Any]], _Printer]] = {
    ("", "pods"): ([_NAME, _column("Ready"), _column("Status"), _column("Restarts"),
                    _column("Age"), _column("IP", priority=1), _column("Node", priority=1),
                    _column("Nominated Node", priority=1),
                    _column("Readiness Gates", priority=1)], _pod),
    ("", "namespaces"): ([_NAME, _column("Status"), _column("Age")],
                         lambda o, now, w: [_name(o), o.get("status", {}).get("phase", ""),
                                            _age(o, now)]),
    ("", "configmaps"): ([_NAME, _column("Data"), _column("Age")],
                         lambda o, now, w: [_name(o), len(o.get("data") or {})
                                            + len(o.get("binaryData") or {}), _age(o, now)]),
    ("", "secrets"): ([_NAME, _column("Type"), _column("Data"), _column("Age")],
                      lambda o, now, w: [_name(o), o.get("type", ""), len(o.get("data") or {}),
                                         _age(o, now)]),
    ("", "services"): ([_NAME, _column("Type"), _column("Cluster-IP"), _column("External-IP"),
                        _column("Port(s)"), _column("Age"), _column("Selector", priority=1)],
                       _service),
    ("", "endpoints"): ([_NAME, _column("Endpoints"), _column("Age")],
                        lambda o, now, w: [_name(o), _endpoints_text(o), _age(o, now)]),
    ("apps", "deployments"): ([_NAME, _column("Ready"), _column("Up-to-date"),
                               _column("Available"), _column("Age"),
                               _column("Containers", priority=1),
                               _column("Images", priority=1), _column("Selector", priority=1)],
                              _deployment),
    ("apps", "replicasets"): ([_NAME, _column("Desired", "integer"),
                               _column("Current", "integer"), _column("Ready", "integer"),
                               _column("Age"), _column("Containers", priority=1),
                               _column("Images", priority=1), _column("Selector", priority=1)],
                              _replica_set),
    ("coordination.k8s.io", "leases"): ([_NAME, _column("Holder"), _column("Age")], _lease),
    ("", "nodes"): ([_NAME, _column("Status"), _column("Roles"), _column("Age"),
                     _column("Version"), _column("Internal-IP", priority=1),
                     _column("External-IP", priority=1), _column("OS-Image", priority=1),
                     _column("Kernel-Version", priority=1),
                     _column("Container-Runtime", priority=1)], _node),
    ("", "events"): ([_column("Last Seen"), _column("Type"), _column("Reason"),
                      _column("Object"), _column("Subobject", priority=1),
                      _column("Source", priority=1), _column("Message"),
                      _column("First Seen", priority=1), _column("Count", priority=1),
                      _column("Name", priority=1)], _event),
}

_DEFAULT = ([_NAME, {"name": "Created At", "type": "date", "format": "",
                     "description": "CreationTimestamp is a timestamp representing the server "
                                    "time when this object was created.", "priority": 0}],
            lambda o, now, w: [_name(o), o.get("metadata", {}).get("creationTimestamp", "")])


def _partial(obj: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def table_of(group: str, resource: str, objects: list[dict[str, Any]],
             list_meta: dict[str, Any], now: datetime.datetime, query: dict[str, str],
             *, with_columns: bool = True,
             custom_columns: tuple[dict[str, Any], ...] | None = None) -> dict[str, Any]:
    """The Table of ``objects`` (typed, with ``kind``/``apiVersion``). ``query`` gives
    ``includeObject`` and kubectl's ``-o wide`` (which is client-side: every column is always
    sent, as kube-apiserver does with ``GenerateOptions{Wide: true}``). ``with_columns``:
    watch events after the first have ``columnDefinitions: null``, as kube-apiserver does.
    ``custom_columns``: a custom resource's ``additionalPrinterColumns``
    (:mod:`.printer_columns`; empty: the default ``Age``); ``None`` for built-in kinds."""
    if custom_columns is not None:  # a custom resource: its CRD version's columns
        columns, printer = printer_columns.custom_printer(custom_columns, _since)
    else:
        columns, printer = _PRINTERS.get((group, resource), _DEFAULT)
    include = query.get("includeObject", "Metadata")
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": printer(obj, now, True)}
        if include == "Object":
            row["object"] = obj
        elif include == "None":
            row["object"] = None
        else:
            row["object"] = _partial(obj)
        rows.append(row)
    table: dict[str, Any] = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                             "metadata": list_meta}
    table["columnDefinitions"] = columns if with_columns else None
    table["rows"] = rows
    return table


class TableWatchWriter:
    """A watch stream's writer that turns each event's object into a one-row Table, column
    definitions on the first event only (apiserver/pkg/endpoints/handlers/response.go
    ``watchEmbeddedEncoder``: ``NoHeaders`` after the first). Bookmarks and errors pass
    unchanged. Wraps ``inner`` (``write``/``finish``/``abort``); one stream's thread only."""

    def __init__(self, inner: Any, group: str, resource: str, query: dict[str, str],
                 now: Callable[[], datetime.datetime],
                 custom_columns: tuple[dict[str, Any], ...] | None = None) -> None:
        self._inner = inner
        self._custom_columns = custom_columns
        self._group, self._resource, self._query, self._now = group, resource, query, now
        self._headers = True

    def write(self, data: bytes) -> None:
        out: list[bytes] = []
        for line in data.split(b"\n"):
            if not line:
                continue
            event = json.loads(line)
            obj = event.get("object")
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                meta = {"resourceVersion": obj.get("metadata", {}).get("resourceVersion", "")}
                event["object"] = table_of(self._group, self._resource, [obj], meta,
                                           self._now(), self._query,
                                           with_columns=self._headers,
                                           custom_columns=self._custom_columns)
                self._headers = False
                line = json.dumps(event, separators=(",", ":")).encode()
            out.append(line + b"\n")
        self._inner.write(b"".join(out))

    def finish(self) -> None:
        self._inner.finish()

    def abort(self) -> None:
        self._inner.abort()
