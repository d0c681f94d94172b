#!/usr/bin/env bash
# Regenerate informers/testing/api_schema.json (the protobuf/JSON field table of the kinds the
# embedded API server serves) from k8s.io/api and k8s.io/apimachinery at the versions go.mod
# pins. Needs Go; modules come from the module cache or the proxy.
#
# Usage: tools/api-schema/generate.sh
set -euo pipefail
cd "$(dirname "$0")"
GOFLAGS=-mod=mod go run . -o ../../informers/testing/api_schema.json
