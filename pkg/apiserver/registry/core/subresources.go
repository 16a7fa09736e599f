package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Views returns the core group's served resources without storage of their own: bindings
// (writes pods), componentstatuses (probes components over client) and events.k8s.io/v1
// events (the core events in another shape). resource looks up a served resource.
func Views(client *clientv3.Client, resource func(schema.GroupResource) *registry.Resource) []*registry.View {
	core := func(name string) *registry.Resource { return resource(schema.GroupResource{Resource: name}) }
	return []*registry.View{
		{Names: registry.Names{Version: "v1", Kind: "Binding", Plural: "bindings", Singular: "binding", Namespaced: true},
			Storage: &BindingStore{pods: core("pods").Store}},
		{Names: componentStatusNames, Storage: &ComponentStatusStore{client: client, probes: componentProbes}},
		{Names: eventsV1Names, Storage: &EventsV1Store{core: core("events").Store}},
	}
}

// AddSubresources adds the subresources of pods (binding, eviction, ephemeralcontainers,
// resize) and namespaces (finalize); resource looks up a served resource.
func AddSubresources(resource func(schema.GroupResource) *registry.Resource) {
	pods := resource(schema.GroupResource{Resource: "pods"})
	pods.Subresources["binding"] = &BindingStore{pods: pods.Store}
	pods.Subresources["eviction"] = &EvictionStore{pods: pods.Store, pdbs: func() *registry.Store {
		if res := resource(pdbResource); res != nil {
			return res.Store
		}
		return nil
	}}
	pods.Subresources["ephemeralcontainers"] = registry.NewSubresourceStore(pods.Store, withPodGeneration(mergeEphemeralContainers))
	pods.Subresources["resize"] = registry.NewSubresourceStore(pods.Store, withPodGeneration(mergeResize))
	ns := resource(schema.GroupResource{Resource: "namespaces"})
	ns.Subresources["finalize"] = registry.NewUpdateOnlyStore(ns.Store, FinalizeNamespace)
}
