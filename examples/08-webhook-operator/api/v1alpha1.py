"""``sites.example.com/v1alpha1`` ``Website``: the first version, still served, written as
TypedDicts (required keys in a base class, optional ones in a ``total=False`` subclass, which
works on every Python; ``Required``/``NotRequired`` say the same from Python 3.11).

Its ``message`` became ``content.message`` in v1; objects are stored as v1 and converted
between the two by the operator's conversion webhook.
"""

from __future__ import annotations

from typing import Annotated, TypedDict

from informers.crdgen import custom_resource
from informers.crdgen.markers import Default, Maximum, MaxLength, Minimum, MinLength

GROUP = "sites.example.com"


class _RequiredSpec(TypedDict):
    image: Annotated[str, MinLength(1)]
    """The web server's container image."""


class WebsiteSpec(_RequiredSpec, total=False):
    """What the site serves."""

    replicas: Annotated[int, Minimum(0), Maximum(10), Default(1)]
    """How many web server pods."""
    message: Annotated[str, MaxLength(1024)]
    """The page's text."""


class WebsiteStatus(TypedDict, total=False):
    """What the operator observed."""

    replicas: int
    """Pods running the site."""


class _RequiredWebsite(TypedDict):
    spec: WebsiteSpec


@custom_resource(group=GROUP, version="v1alpha1", kind="Website", short_names=("site",),
                 status=True, deprecated=True,
                 deprecation_warning="sites.example.com/v1alpha1 Website is deprecated; "
                                     "use sites.example.com/v1")
class Website(_RequiredWebsite, total=False):
    """A Website serves a page from a few web server pods."""

    status: WebsiteStatus

