package core

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestEndpointsUnchangedSubsetsKept: as upstream's ValidateEndpoints, an update that leaves
// subsets stored under older rules (a loopback address) as they are is not refused for them;
// one that changes them is.
func TestEndpointsUnchangedSubsetsKept(t *testing.T) {
	old := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}}}}}
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	if errs := validateEndpoints(relabelled, old); len(errs) != 0 {
		t.Fatalf("unchanged subsets: %v", errs)
	}
	if errs := validateEndpoints(old, nil); len(errs) != 1 {
		t.Fatalf("the same subsets on create: %v, want one error", errs)
	}
	moved := old.DeepCopy()
	moved.Subsets[0].Addresses[0].IP = "127.0.0.2"
	if errs := validateEndpoints(moved, old); len(errs) != 1 {
		t.Fatalf("changed subsets: %v, want one error", errs)
	}
}
