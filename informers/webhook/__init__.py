"""Admission and conversion webhooks: an HTTPS server, handlers, and their configuration.

controller-runtime's ``pkg/webhook`` for Python: :class:`WebhookServer` serves defaulting
(:class:`Mutating`), validating (:class:`Validating`) and conversion (:class:`HubAndSpoke`)
handlers; :mod:`informers.webhook.configuration` renders the objects that point kube-apiserver
at it. Certificates for development come from :mod:`informers.certificates`.
"""

from informers.webhook.admission import (
    AdmissionDenied,
    AdmissionRequest,
    AdmissionResponse,
    Mutating,
    Validating,
    Validator,
    allowed,
    denied,
)
from informers.webhook.certificate_watcher import CertificateWatcher
from informers.webhook.configuration import (
    AdmissionWebhook,
    ClientConfig,
    ManagedConfiguration,
    Rule,
    ServiceReference,
    conversion_stanza,
    mutating_configuration,
    validating_configuration,
)
from informers.webhook.conversion import HubAndSpoke
from informers.webhook.server import WebhookServer

__all__ = [
    "AdmissionDenied",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionWebhook",
    "CertificateWatcher",
    "ClientConfig",
    "HubAndSpoke",
    "ManagedConfiguration",
    "Mutating",
    "Rule",
    "ServiceReference",
    "Validating",
    "Validator",
    "WebhookServer",
    "allowed",
    "conversion_stanza",
    "denied",
    "mutating_configuration",
    "validating_configuration",
]
