package registry

import (
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// returnsDeletedObject are the resources whose upstream store answers a deletion that took
// effect at once with the deleted object (ReturnDeletedObject in k8s.io/kubernetes
// pkg/registry); every other one answers with a Status of Success naming it. A deletion
// that waits (finalizers, a grace period) answers with the marked object everywhere.
var returnsDeletedObject = map[schema.GroupResource]bool{
	{Resource: "pods"}: true, {Resource: "services"}: true, {Resource: "serviceaccounts"}: true,
	{Resource: "podtemplates"}: true, {Resource: "persistentvolumes"}: true,
	{Resource: "persistentvolumeclaims"}: true, {Resource: "resourcequotas"}: true,
	{Resource: "replicationcontrollers"}: true, {Resource: "namespaces"}: true,
	{Group: "batch", Resource: "jobs"}:                    true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}: true, {Group: "storage.k8s.io", Resource: "csidrivers"}: true,
	{Group: "storage.k8s.io", Resource: "csinodes"}: true, {Group: "storage.k8s.io", Resource: "volumeattachments"}: true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// ReturnsDeletedObject reports whether a deletion of gr that took effect at once answers
// with the deleted object rather than a Status.
func ReturnsDeletedObject(gr schema.GroupResource) bool { return returnsDeletedObject[gr] }

// orphansByDefault are the resources whose upstream strategy's default garbage-collection
// policy is OrphanDependents (DefaultGarbageCollectionPolicy at batch/v1 and core v1): a
// deletion that names no policy adds the orphan finalizer.
var orphansByDefault = map[schema.GroupResource]bool{
	{Resource: "replicationcontrollers"}: true,
	{Group: "batch", Resource: "jobs"}:   true,
}

// genericMetaValidation are the built-in resources whose upstream validation checks object
// metadata with apimachinery's ValidateObjectMeta rather than k8s.io/kubernetes's, which
// adds validateKubeFinalizerName (found by the diff-upstream harness).
var genericMetaValidation = map[schema.GroupResource]bool{
	{Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true,
	{Group: "coordination.k8s.io", Resource: "leases"}: true, {Group: "policy", Resource: "poddisruptionbudgets"}: true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                                     true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:                 true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:                             true,
}

// pathSegmentNames are the built-in resources whose upstream validation accepts any name
// that is a valid path segment (not only DNS subdomains), unless the kind says otherwise.
var pathSegmentNames = map[schema.GroupResource]bool{
	{Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:                    true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: true,
}

// ownFieldLabels are the cluster-scoped built-in resources whose upstream field label
// conversion lists labels of their own without metadata.namespace (every other one accepts
// it and, being cluster-scoped, matches only ""); custom resources are among them too.
var ownFieldLabels = map[schema.GroupResource]bool{
	{Resource: "nodes"}: true, {Resource: "namespaces"}: true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: true,
}

// validatePathSegmentName is upstream's path-segment name rule (as rbac's names).
func validatePathSegmentName(name string, _ bool) []string { return content.IsPathSegmentName(name) }
