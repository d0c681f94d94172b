"""Write informers/testing/merge_rules.json: the list and map merge rules of the served kinds.

For every Go type of ``informers/testing/api_schema.json``, the ``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type``, ``x-kubernetes-patch-strategy`` and
``x-kubernetes-patch-merge-key`` extensions of its fields, as kube-apiserver v1.36.3 publishes
them: read from the OpenAPI v3 documents checked into k8s.io/kubernetes
(``api/openapi-spec/v3/*.json``, generated from the same Go markers and struct tags). The
strategic merge patch (:mod:`informers.testing.strategic_merge`) and server-side apply
(:mod:`informers.testing.apply`) of the embedded server merge lists by these.

Usage: python3 tools/api-schema/merge_rules.py [SPEC_DIR]
(default: $(go env GOMODCACHE)/k8s.io/kubernetes@v1.36.3/api/openapi-spec/v3)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "informers" / "testing" / "api_schema.json"
OUT = ROOT / "informers" / "testing" / "merge_rules.json"
EXTENSIONS = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
              "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key")
PREFIXES = {"meta": "io.k8s.apimachinery.pkg.apis.meta",
            "runtime": "io.k8s.apimachinery.pkg.runtime"}


def component_name(go_type: str) -> str:
    """As informers.testing.schemas.component_name (kept standalone: no import of the
    package from a tool)."""
    package, _, name = go_type.partition(".")
    group, _, version = package.partition("/")
    prefix = PREFIXES.get(group, f"io.k8s.api.{group}")
    return f"{prefix}.{version}.{name}" if version else f"{prefix}.{name}"


def list_key_defaults(components: dict[str, dict]) -> dict[str, set[str]]:
    """The fields, per component, that key the items of an associative list and have a
    scalar ``default``: structured-merge-diff keys an item that leaves such a field out by
    its default (typed/helpers.go ``keyedAssociativeListItemToPathElement``; kube-openapi
    pkg/schemaconv copies each field's ``default``)."""
    found: dict[str, set[str]] = {}
    for schema in components.values():
        for prop in schema.get("properties", {}).values():
            keys = prop.get("x-kubernetes-list-map-keys")
            if not keys:
                continue
            items = prop.get("items", {})
            refs = [items.get("$ref")] + [a.get("$ref") for a in items.get("allOf", ())]
            for ref in filter(None, refs):
                item_name = ref.rsplit("/", 1)[-1]
                props = components.get(item_name, {}).get("properties", {})
                for key in keys:
                    default = props.get(key, {}).get("default")
                    if default is not None and not isinstance(default, (dict, list)):
                        found.setdefault(item_name, set()).add(key)
    return found


def main() -> int:
    if len(sys.argv) > 1:
        spec_dir = Path(sys.argv[1])
    else:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True,
                               text=True).stdout.strip()
        spec_dir = Path(cache) / "k8s.io/kubernetes@v1.36.3/api/openapi-spec/v3"
    components: dict[str, dict] = {}
    for path in sorted(spec_dir.glob("*.json")):
        components.update(json.loads(path.read_text()).get("components", {}).get("schemas", {}))
    types = json.loads(TABLE.read_text())["types"]
    key_defaults = list_key_defaults(components)
    rules: dict[str, dict[str, dict]] = {}
    for go_type in sorted(types):
        schema = components.get(component_name(go_type))
        if schema is None:
            print(f"merge_rules: no published schema for {go_type}", file=sys.stderr)
            continue
        entry: dict[str, dict] = {}
        own = {k: v for k, v in schema.items() if k in EXTENSIONS}
        if own:
            entry[""] = own
        for name, prop in sorted(schema.get("properties", {}).items()):
            found = {k: v for k, v in prop.items() if k in EXTENSIONS}
            if name in key_defaults.get(component_name(go_type), ()):
                found["default"] = prop["default"]
            if found:
                entry[name] = found
        if entry:
            rules[go_type] = entry
    OUT.write_text(json.dumps({"source": "k8s.io/kubernetes@v1.36.3 api/openapi-spec/v3",
                               "types": rules}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(rules)} types)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
