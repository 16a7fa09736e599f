#!/bin/sh
# Re-record test/upstream/testdata/golden/results from kube-apiserver 1.37: it runs the real
# kube-apiserver (built once into _output/upstream, see internal/upstream) on an embedded etcd,
# creates every object of test/upstream/testdata/golden/corpus.yaml through it, and writes each
# answer, normalized (uid, timestamps, resourceVersion, managedFields and allocated Service
# addresses aside). Then TestGolden compares hacp's answers with them.
# TestGoldenManagedFields records the managedFields after each of a sequence of writes (creates,
# updates, every patch type, apply by several managers, status and scale writes) the same way.
set -eu
cd "$(dirname "$0")/../.."
exec go test ./test/upstream -run '^TestGolden(ManagedFields)?$' -count=1 -update-golden "$@"
