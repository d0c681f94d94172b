"""``sites.example.com/v1`` ``Website``: the storage version, written as dataclasses.

Defaults, enums and a CEL rule are in the schema, so kube-apiserver applies them before the
operator's webhooks run; ``status`` and ``scale`` are subresources (``kubectl scale`` works),
and ``kubectl get websites`` shows the printer columns. A field with a default (or ``| None``)
is optional; a dataclass field ``observed_generation`` is ``observedGeneration`` in JSON.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Annotated, Literal

from informers.crdgen import PrinterColumn, Scale, custom_resource, schema
from informers.crdgen.markers import (
    ListMapKeys,
    ListType,
    Maximum,
    MaxLength,
    Minimum,
    MinLength,
    XValidation,
)

GROUP = "sites.example.com"


class Tier(enum.Enum):
    """The service level."""

    FREE = "free"
    PRO = "pro"


@dataclasses.dataclass
class Content:
    """The page."""

    message: Annotated[str, MaxLength(1024)]
    """The page's text."""
    format: Literal["text", "html"] = "html"
    """How the text is served."""


@schema(XValidation("self.tier == 'pro' || self.replicas <= 3",
                    message="free websites run at most 3 replicas",
                    field_path=".replicas"))
@dataclasses.dataclass
class WebsiteSpec:
    """What the site serves."""

    image: Annotated[str, MinLength(1)]
    """The web server's container image."""
    replicas: Annotated[int, Minimum(0), Maximum(10)] = 1
    """How many web server pods."""
    tier: Tier = Tier.FREE
    """The service level: free sites are limited to 3 replicas."""
    content: Content | None = None
    """The page."""


@dataclasses.dataclass
class Condition:
    """One condition (a subset of metav1.Condition)."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    last_transition_time: datetime.datetime | None = None


@dataclasses.dataclass
class WebsiteStatus:
    """What the operator observed."""

    replicas: int | None = None
    """Pods running the site (the scale subresource's status replicas)."""
    selector: str | None = None
    """The label selector of those pods (the scale subresource's selector)."""
    conditions: Annotated[list[Condition], ListType("map"), ListMapKeys("type")] = (
        dataclasses.field(default_factory=list))
    """Ready says whether the site serves."""


@custom_resource(group=GROUP, version="v1", kind="Website", short_names=("site",),
                 storage=True, status=True,
                 scale=Scale(label_selector_path=".status.selector"),
                 printer_columns=(
                     PrinterColumn("Replicas", ".spec.replicas", "integer"),
                     PrinterColumn("Tier", ".spec.tier"),
                     PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
                     PrinterColumn("Age", ".metadata.creationTimestamp", "date")),
                 selectable_fields=(".spec.tier",))
@dataclasses.dataclass
class Website:
    """A Website serves a page from a few web server pods."""

    spec: WebsiteSpec
    status: WebsiteStatus | None = None
