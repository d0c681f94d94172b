"""The ``Website`` API of the webhook operator (``sites.example.com``): ``v1alpha1`` (served,
the first version) and ``v1`` (served, the storage version), as Python types from which
``informers-gen`` writes ``config/crd/`` (docs/crd-generation.md)."""
