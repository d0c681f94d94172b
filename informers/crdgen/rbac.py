"""RBAC rules from what a :class:`~informers.manager.Manager` watches and what its code
declares it writes: the ``rbac`` half of controller-gen (``pkg/rbac/parser.go``).

Two sources, merged:

* **introspected** from the manager: every informer its factory was asked for (by
  :class:`~informers.controller.ControllerBuilder` ``for_``/``owns``/``watches`` or by hand)
  needs ``get``, ``list`` and ``watch`` on its resource (the informer lists and watches; a
  reconcile may ``get`` what it read, as controller-gen users declare); leader election needs
  ``get``, ``create`` and ``update`` on Leases in the lease's namespace (the requests
  :class:`~informers.leaderelection.LeaseLock` makes), and ``create``/``patch`` on Events
  when the lock has an event recorder;
* **declared** with :func:`rbac` on the reconciler, function or class that makes the
  requests (kubebuilder's ``+kubebuilder:rbac:groups=...,resources=...,verbs=...``): the
  writes of a :class:`~informers.client.Client` cannot be known before they are made.

Rules are normalized as controller-gen does: verbs per (group, resource, resource names)
are merged, resources of one group with the same verbs share a rule, verbs and resources
are sorted, rules are ordered by group then resources, so the output is stable.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

__all__ = ["EVENTS_RULE", "PolicyRule", "cluster_role", "declared_rules",
           "leader_election_role", "manager_rules", "namespaced_roles", "normalize", "rbac"]

_RULES_ATTR = "__rbac_rules__"
_READ = ("get", "list", "watch")
_LEASE_VERBS = ("create", "get", "update")

T = TypeVar("T")


@dataclass(frozen=True)
class PolicyRule:
    """One ``rbac.authorization.k8s.io/v1`` PolicyRule.

    Attributes:
        api_groups: API groups (``""`` the core group).
        resources: resources, ``"deployments"`` or subresources ``"websites/status"``.
        verbs: ``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``,
            ``deletecollection`` or ``*``.
        resource_names: restrict to these object names (empty: all).
        namespace: for :func:`rbac` declarations, the namespace of a ``Role`` instead of the
            ``ClusterRole`` (kubebuilder's ``namespace=``); ``None`` for the ClusterRole.
    """

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    namespace: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"apiGroups": list(self.api_groups),
                               "resources": list(self.resources), "verbs": list(self.verbs)}
        if self.resource_names:
            out["resourceNames"] = list(self.resource_names)
        return out


EVENTS_RULE = PolicyRule(("",), ("events",), ("create", "patch"))
"""What an :class:`~informers.events.EventRecorder` writing through ``ApiEventSink``
needs: core/v1 Events are created, and patched when they repeat (client-go's recorder)."""


def _names(value: str | Iterable[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def rbac(*, groups: str | Iterable[str], resources: str | Iterable[str],
         verbs: str | Iterable[str], resource_names: Iterable[str] = (),
         namespace: str | None = None) -> Callable[[T], T]:
    """Declare that the decorated reconciler, function or class makes these requests
    (``+kubebuilder:rbac``). Stacks. ``groups=""`` is the core group.

    Example::

        @rbac(groups="apps", resources="deployments", verbs=("create", "patch"))
        @rbac(groups="example.com", resources="websites/status", verbs="patch")
        class WebsiteReconciler: ...
    """
    rule = PolicyRule(_names(groups), _names(resources), _names(verbs),
                      tuple(resource_names), namespace)

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
    """What ``manager``'s informers need (cluster-wide: ``get``, ``list``, ``watch``) and,
    with ``namespace`` set, what its leader election needs in the lease's namespace."""
    rules: list[PolicyRule] = []
    factory = getattr(manager, "factory", None)
    if factory is not None:
        for res in factory.resources():
            rules.append(PolicyRule((res.group,), (res.plural,), _READ))
    elector = getattr(manager, "elector", None)
    if elector is not None:
        lock = elector.lock
        rules.append(PolicyRule(("coordination.k8s.io",), ("leases",), _LEASE_VERBS,
                                namespace=lock.namespace))
        if getattr(lock, "event_recorder", None) is not None:
            rules.append(PolicyRule(EVENTS_RULE.api_groups, EVENTS_RULE.resources,
                                    EVENTS_RULE.verbs, namespace=lock.namespace))
    return rules


def normalize(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """Merge and sort ``rules`` (see the module docstring); ``namespace`` is dropped."""
    verbs: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                key = (group, resource, tuple(sorted(rule.resource_names)))
                verbs.setdefault(key, set()).update(rule.verbs)
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (group, resource, names), found in verbs.items():
        final = ("*",) if "*" in found else tuple(sorted(found))
        merged.setdefault((group, final, names), []).append(resource)
    out = [PolicyRule((group,), tuple(sorted(resources)), final, names)
           for (group, final, names), resources in merged.items()]
    return sorted(out, key=lambda r: (r.api_groups, r.resources, r.resource_names, r.verbs))


def cluster_role(name: str, manager: Any = None, *, declared: Iterable[Any] = (),
                 rules: Iterable[PolicyRule] = ()) -> dict[str, Any]:
    """The ``ClusterRole`` ``name`` with the cluster-wide rules of ``manager``
    (:func:`manager_rules`), of the :func:`rbac` declarations on ``declared`` (objects or
    modules) and of ``rules`` (e.g. :data:`EVENTS_RULE`)."""
    found = [*(manager_rules(manager) if manager is not None else []),
             *declared_rules(*declared), *rules]
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [r.to_json() for r in normalize(r for r in found if r.namespace is None)]}


def namespaced_roles(name: str, manager: Any = None, *, declared: Iterable[Any] = (),
                     rules: Iterable[PolicyRule] = ()) -> list[dict[str, Any]]:
    """One ``Role`` per namespace named by the rules of ``manager`` (its leader election),
    of ``declared`` and ``rules`` (those with a ``namespace``), ordered by namespace."""
    found = [*(manager_rules(manager) if manager is not None else []),
             *declared_rules(*declared), *rules]
    namespaces = sorted({r.namespace for r in found if r.namespace is not None})
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": name, "namespace": ns},
             "rules": [r.to_json() for r in normalize(r for r in found if r.namespace == ns)]}
            for ns in namespaces]


def leader_election_role(name: str, manager: Any) -> dict[str, Any] | None:
    """The ``Role`` of ``manager``'s leader election (``None`` without it): kubebuilder's
    ``leader_election_role.yaml``, limited to the requests the lease lock makes."""
    roles = namespaced_roles(name, manager)
    return roles[0] if roles else None
