"""RBAC rules from what a :class:`~informers.manager.Manager` watches and what its code
declares it writes: the ``rbac`` half of controller-gen (``pkg/rbac/parser.go``).

Two sources, merged:

* **introspected** from the manager: every informer its factory was asked for (by
  :class:`~informers.controller.ControllerBuilder` ``for_``/``owns``/``watches`` or by hand)
  needs ``get``, ``list`` and ``watch`` on its resource (the informer lists and watches; a
  reconcile may ``get`` what it read, as controller-gen users declare), in a Role of the
  factory's namespace when it has one (for namespaced resources); leader election needs, in
  the lease's namespace, ``create`` on Leases and ``get`` and ``update`` on the one Lease
  (the requests :class:`~informers.leaderelection.LeaseLock` makes; a create cannot be
  limited to a name, which is not known when it is authorized), and ``create``/``patch`` on
  Events when the lock has an event recorder;
* **declared** with :func:`rbac` on the reconciler, function or class that makes the
  requests (kubebuilder's ``+kubebuilder:rbac:groups=...,resources=...,verbs=...``): the
  writes of a :class:`~informers.client.Client` cannot be known before they are made.

Rules are normalized as controller-gen does (:func:`normalize`), and :func:`roles` makes the
ClusterRole and one Role per namespace as controller-gen's ``GenerateRoles``: the output
is stable whatever the order of the declarations.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from informers.crdgen.errors import GenerationError

__all__ = ["EVENTS_RULE", "OfflineApiClient", "PolicyRule", "cluster_role", "declared_rules",
           "manager_rules", "normalize", "rbac", "roles"]

_RULES_ATTR = "__rbac_rules__"
_READ = ("get", "list", "watch")

T = TypeVar("T")


@dataclass(frozen=True)
class PolicyRule:
    """One ``rbac.authorization.k8s.io/v1`` PolicyRule (controller-gen's ``rbac.Rule``).

    Attributes:
        api_groups: API groups (``""`` or ``"core"``: the core group).
        resources: resources, ``"deployments"`` or subresources ``"websites/status"``.
        verbs: ``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``,
            ``deletecollection`` or ``*``.
        resource_names: restrict to these object names (empty: all; a ``create`` cannot be
            restricted by name, the name is not known when it is authorized).
        urls: non-resource URLs (``nonResourceURLs``, ClusterRole only).
        namespace: the namespace of a ``Role`` holding the rule instead of the
            ``ClusterRole`` (kubebuilder's ``namespace=``); ``None`` for the ClusterRole.
    """

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    namespace: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The rule as RBAC JSON (empty fields left out, as Go's ``omitempty``)."""
        out: dict[str, Any] = {"verbs": list(self.verbs)}
        for key, value in (("apiGroups", self.api_groups), ("resources", self.resources),
                           ("resourceNames", self.resource_names),
                           ("nonResourceURLs", self.urls)):
            if value:
                out[key] = list(value)
        return out


class OfflineApiClient:
    """An API client that refuses every use: it lets a :class:`~informers.manager.Manager`
    (with leader election, which needs a client) be built only to be read by
    :func:`manager_rules`, without a cluster. ``informers-gen rbac --manager
    module:function`` calls ``function(OfflineApiClient())``."""

    def __getattr__(self, name: str) -> Any:
        raise GenerationError(
            f"api_client.{name}: this Manager was built for RBAC generation, without a "
            "cluster; it cannot be started")


EVENTS_RULE = PolicyRule(("",), ("events",), ("create", "patch"))
"""What an :class:`~informers.events.EventRecorder` writing through ``ApiEventSink``
needs: core/v1 Events are created, and patched when they repeat (client-go's recorder)."""


def _names(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def rbac(*, groups: str | Iterable[str] = (), resources: str | Iterable[str] = (),
         verbs: str | Iterable[str], resource_names: str | Iterable[str] = (),
         urls: str | Iterable[str] = (), namespace: str | None = None) -> Callable[[T], T]:
    """Declare that the decorated reconciler, function or class makes these requests
    (``+kubebuilder:rbac:groups=...,resources=...,verbs=...``). Stacks. ``groups=""`` (or
    ``"core"``) is the core group; ``namespace`` puts the rule in a Role of that namespace.

    Example::

        @rbac(groups="apps", resources="deployments", verbs=("create", "patch"))
        @rbac(groups="example.com", resources="websites/status", verbs="patch")
        class WebsiteReconciler: ...
    """
    rule = PolicyRule(_names(groups), _names(resources), _names(verbs),
                      _names(resource_names), _names(urls), namespace)

    def decorate(obj: T) -> T:
        previous: tuple[PolicyRule, ...] = getattr(obj, _RULES_ATTR, ())
        setattr(obj, _RULES_ATTR, (rule, *previous))
        return obj

    return decorate


def declared_rules(*sources: Any) -> list[PolicyRule]:
    """The :func:`rbac` declarations of ``sources``: objects (a reconciler instance takes
    its class's), or modules, whose functions and classes defined there are searched, as
    controller-gen reads the markers of a package."""
    found: list[PolicyRule] = []
    for source in sources:
        if isinstance(source, ModuleType):
            for _, member in sorted(vars(source).items()):
                if ((inspect.isclass(member) or inspect.isfunction(member))
                        and getattr(member, "__module__", None) == source.__name__):
                    found.extend(getattr(member, _RULES_ATTR, ()))
        else:
            target = source if hasattr(source, _RULES_ATTR) else type(source)
            found.extend(getattr(target, _RULES_ATTR, ()))
    return found


def manager_rules(manager: Any) -> list[PolicyRule]:
    """What ``manager``'s informers and leader election need (see the module docstring);
    rules with a ``namespace`` belong in a Role of that namespace."""
    rules: list[PolicyRule] = []
    factory = getattr(manager, "factory", None)
    if factory is not None:
        for res in factory.resources():
            namespace = factory.namespace if res.namespaced else None
            rules.append(PolicyRule((res.group,), (res.plural,), _READ, namespace=namespace))
    elector = getattr(manager, "elector", None)
    if elector is not None:
        lock = elector.lock
        leases = (("coordination.k8s.io",), ("leases",))
        rules.append(PolicyRule(*leases, ("create",), namespace=lock.namespace))
        rules.append(PolicyRule(*leases, ("get", "update"), resource_names=(lock.name,),
                                namespace=lock.namespace))
        if getattr(lock, "event_recorder", None) is not None:
            rules.append(PolicyRule(EVENTS_RULE.api_groups, EVENTS_RULE.resources,
                                    EVENTS_RULE.verbs, namespace=lock.namespace))
    return rules


def _sorted(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(values)))


def normalize(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """Merge and sort ``rules`` as controller-gen's ``GenerateRoles`` ``NormalizeRules``
    (``pkg/rbac/parser.go``): ``core`` is the ``""`` group; every field is deduplicated and
    sorted; rules with the same groups, resources, names and URLs merge their verbs; then
    rules differing only in resources merge them, then only in groups, then only in URLs;
    verbs with ``*`` become ``["*"]``; rules are ordered by ``groups + resources + names +
    URLs`` (each joined with ``&``). ``namespace`` is dropped."""
    split: list[PolicyRule] = []
    for rule in rules:  # one rule per resource, as controller-gen collects them
        groups = _sorted("" if g == "core" else g for g in rule.api_groups)
        for resource in rule.resources or ("",):
            split.append(PolicyRule(groups, (resource,) if resource else (), _sorted(rule.verbs),
                                    _sorted(rule.resource_names), _sorted(rule.urls)))

    def key(r: PolicyRule) -> tuple[tuple[str, ...], ...]:
        return (r.api_groups, r.resources, r.resource_names, r.urls)

    by_key: dict[tuple[tuple[str, ...], ...], PolicyRule] = {}
    for rule in split:
        old = by_key.get(key(rule))
        by_key[key(rule)] = rule if old is None else PolicyRule(
            rule.api_groups, rule.resources, _sorted(old.verbs + rule.verbs),
            rule.resource_names, rule.urls)
    merged = list(by_key.values())
    for field in ("resources", "api_groups", "urls"):
        buckets: dict[tuple[Any, ...], PolicyRule] = {}
        for rule in merged:
            rest = tuple(getattr(rule, f) for f in ("api_groups", "resources",
                                                     "resource_names", "urls", "verbs")
                         if f != field)
            old = buckets.get(rest)
            if old is None:
                buckets[rest] = rule
            else:
                joined: Any = _sorted(getattr(old, field) + getattr(rule, field))
                buckets[rest] = dataclasses.replace(old, **{field: joined})
        merged = list(buckets.values())
    merged = [dataclasses.replace(r, verbs=("*",)) if "*" in r.verbs else r for r in merged]

    def order(r: PolicyRule) -> str:
        return " + ".join("&".join(v) for v in key(r))

    return sorted(merged, key=order)


def roles(name: str, manager: Any = None, *, declared: Iterable[Any] = (),
          rules: Iterable[PolicyRule] = ()) -> list[dict[str, Any]]:
    """The ``ClusterRole`` ``name`` and a ``Role`` ``name`` per namespace, with the rules of
    ``manager`` (:func:`manager_rules`), the :func:`rbac` declarations on ``declared``
    (objects or modules) and ``rules`` (e.g. :data:`EVENTS_RULE`); the ClusterRole first,
    the Roles by namespace, a role without rules left out (controller-gen
    ``GenerateRoles``)."""
    found = [*(manager_rules(manager) if manager is not None else []),
             *declared_rules(*declared), *rules]
    out = []
    for ns in sorted({r.namespace or "" for r in found}):
        normalized = [r.to_json() for r in normalize(x for x in found
                                                     if (x.namespace or "") == ns)]
        meta = {"name": name, "namespace": ns} if ns else {"name": name}
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "Role" if ns else "ClusterRole", "metadata": meta,
                    "rules": normalized})
    return out


def cluster_role(name: str, manager: Any = None, *, declared: Iterable[Any] = (),
                 rules: Iterable[PolicyRule] = ()) -> dict[str, Any]:
    """The ``ClusterRole`` of :func:`roles` (with no rules when there are none)."""
    for role in roles(name, manager, declared=declared, rules=rules):
        if role["kind"] == "ClusterRole":
            return role
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": []}
