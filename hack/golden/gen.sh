#!/bin/sh
# Re-record every golden file of test/upstream from kube-apiserver at the release the suite's
# peers are at (upstream.KubernetesVersion): testdata/golden/results through the differential
# harness (its answers to the creates of testdata/golden/corpus.yaml, normalized), and
# testdata/golden/managedfields through TestGoldenManagedFields. Same as
# `make diff-upstream RECORD=1 UPSTREAM_K8S_VERSION=<that release>`.
set -eu
cd "$(dirname "$0")/../.."
version=$(sed -n 's/^\tKubernetesVersion = "\(v[0-9.]*\)"$/\1/p' internal/upstream/upstream.go)
exec make diff-upstream RECORD=1 UPSTREAM_K8S_VERSION="$version" "$@"
