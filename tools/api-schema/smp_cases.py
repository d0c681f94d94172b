"""Write tests/strategicpatch_cases.json: the patch-application half of upstream's
``TestStrategicMergePatch`` (k8s.io/apimachinery@v0.36.3/pkg/util/strategicpatch/patch_test.go,
``strategicMergePatchRawTestCases``): for each case, the two-way patch applied to ``Original``
gives ``TwoWayResult`` (else ``Modified``), the three-way patch applied to ``Current`` gives
``Result`` (or an error containing ``ExpectedError``). The patches are the cases' expected
patches (upstream checks its computed patches equal them, then applies them).

Usage: python3 tools/api-schema/smp_cases.py [patch_test.go]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "strategicpatch_cases.json"
FIELDS = ("Original", "Modified", "Current", "TwoWay", "ThreeWay", "Result", "TwoWayResult")


def main() -> int:
    if len(sys.argv) > 1:
        source = Path(sys.argv[1])
    else:
        cache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True,
                               text=True).stdout.strip()
        source = (Path(cache) / "k8s.io/apimachinery@v0.36.3/pkg/util/strategicpatch"
                  / "patch_test.go")
    text = source.read_text()
    start = text.index("var strategicMergePatchRawTestCases = []StrategicMergePatchRawTestCase{")
    end = text.index("\nfunc TestStrategicMergePatch(", start)
    body = text[start:end]
    cases = []
    for chunk in re.split(r"\n\s*Description: ", body)[1:]:
        description = json.loads(chunk.split("\n", 1)[0].rstrip(","))
        case: dict[str, object] = {"description": description}
        for name in FIELDS:
            match = re.search(rf"\n\t\t\t{name}: \[\]byte\(`(.*?)`\)", chunk, re.S)
            if match:
                case[name] = yaml.safe_load(match.group(1))
        error = re.search(r'\n\t\t\tExpectedError: "(.*?)",', chunk)
        if error:
            case["ExpectedError"] = error.group(1)
        cases.append(case)
    OUT.write_text(json.dumps({"source": str(source.name) + " strategicMergePatchRawTestCases "
                               "(k8s.io/apimachinery@v0.36.3)", "cases": cases}, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
