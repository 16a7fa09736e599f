#!/bin/sh
# Regenerates pkg/apiserver/authz/testdata/bootstrap-policy-v1.37.json from upstream's
# bootstrappolicy package, in a scratch module under _output/rbac-golden (never a dependency
# of hacp). Run from the repository root: sh hack/rbac-golden/gen.sh
set -eu
K8S=v1.37.2
STAGING=v0.37.2
dir=_output/rbac-golden
mkdir -p "$dir"
cp hack/rbac-golden/main.go "$dir/main.go"
sed -i '/^\/\/go:build ignore/d' "$dir/main.go"
{
	echo "module rbacgolden"
	echo "go 1.26.0"
	echo "require k8s.io/kubernetes $K8S"
	echo "replace ("
	for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
		cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
		cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms \
		kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
		mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming; do
		echo "	k8s.io/$m => k8s.io/$m $STAGING"
	done
	echo ")"
} >"$dir/go.mod"
(cd "$dir" && GOFLAGS=-mod=mod go mod tidy && go run .) >pkg/apiserver/authz/testdata/bootstrap-policy-v1.37.json
