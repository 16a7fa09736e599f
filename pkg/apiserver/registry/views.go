package registry

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// View is a served resource with no storage of its own: bindings (writes pods),
// componentstatuses (probes components) and events.k8s.io/v1 events (the core events in
// another shape). Namespace cleanup skips views: what they show is stored elsewhere.
type View struct {
	Names        Names
	Storage      Storage
	Subresources map[string]Storage
}

// nonWorkloadKinds are the kinds of the networking, storage, certificates, flow control,
// admission registration, scheduling and node groups, and core's PV, PVC, LimitRange and
// ResourceQuota.
func nonWorkloadKinds() []*Kind {
	return []*Kind{
		limitRangesKind(), persistentVolumeClaimsKind(), persistentVolumesKind(), resourceQuotasKind(),
		ingressesKind(), ingressClassesKind(), networkPoliciesKind(), ipAddressesKind(), serviceCIDRsKind(),
		endpointSlicesKind(), runtimeClassesKind(), priorityClassesKind(),
		storageClassesKind(), csiDriversKind(), csiNodesKind(), csiStorageCapacitiesKind(), volumeAttachmentsKind(),
		certificateSigningRequestsKind(), flowSchemasKind(), priorityLevelConfigurationsKind(),
		mutatingWebhookConfigurationsKind(), validatingWebhookConfigurationsKind(),
		validatingAdmissionPoliciesKind(), validatingAdmissionPolicyBindingsKind(),
	}
}

// addNonWorkload adds the views and the subresources of the non-workload kinds: bindings,
// componentstatuses, events.k8s.io events; pods/eviction, ephemeralcontainers, resize and
// the proxy-type subresources; namespaces/finalize; CSR status and approval.
func (r *Registry) addNonWorkload() {
	core := func(resource string) *Resource { return r.byGR[schema.GroupResource{Resource: resource}] }
	pods := core("pods")
	r.Views = append(r.Views,
		&View{Names: Names{Version: "v1", Kind: "Binding", Plural: "bindings", Singular: "binding", Namespaced: true},
			Storage: &BindingStore{pods: pods.Store}},
		&View{Names: componentStatusNames, Storage: &ComponentStatusStore{client: r.client, probes: componentProbes}},
		&View{Names: eventsV1Names, Storage: &EventsV1Store{core: core("events").Store}},
	)
	pods.Subresources["eviction"] = &EvictionStore{pods: pods.Store, pdbs: func() *Store {
		if res := r.byGR[pdbResource]; res != nil {
			return res.Store
		}
		return nil
	}}
	pods.Subresources["ephemeralcontainers"] = &subresourceStore{store: pods.Store, merge: mergeEphemeralContainers}
	pods.Subresources["resize"] = &subresourceStore{store: pods.Store, merge: mergeResize}
	ns := core("namespaces")
	ns.Subresources["finalize"] = &updateOnlyStore{store: ns.Store, merge: finalizeNamespace}
	if csr := r.byGR[schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}]; csr != nil {
		csr.Subresources["status"] = &subresourceStore{store: csr.Store, merge: mergeCSRStatus}
		csr.Subresources["approval"] = &subresourceStore{store: csr.Store, merge: mergeCSRApproval}
	}
	r.addProxySubresources()
}
