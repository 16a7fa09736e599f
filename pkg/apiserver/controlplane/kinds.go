package controlplane

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/registry/admissionregistration"
	"github.com/hacp/hacp/pkg/apiserver/registry/cluster"
	"github.com/hacp/hacp/pkg/apiserver/registry/core"
	"github.com/hacp/hacp/pkg/apiserver/registry/customresources"
	"github.com/hacp/hacp/pkg/apiserver/registry/networking"
	"github.com/hacp/hacp/pkg/apiserver/registry/rbac"
	"github.com/hacp/hacp/pkg/apiserver/registry/resourcekinds"
	"github.com/hacp/hacp/pkg/apiserver/registry/storagekinds"
	"github.com/hacp/hacp/pkg/apiserver/registry/workloads"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kinds returns the definitions of every built-in kind, in discovery order. A new built-in
// kind is one file in the package of its API group and one line here.
func Kinds() []*registry.Kind {
	return []*registry.Kind{
		core.NamespacesKind(), core.PodsKind(), core.NodesKind(), core.ServicesKind(), core.EndpointsKind(),
		core.ConfigMapsKind(), core.SecretsKind(), core.ServiceAccountsKind(), core.EventsKind(),
		cluster.LeasesKind(), workloads.DeploymentsKind(),
		workloads.ReplicaSetsKind(), workloads.StatefulSetsKind(), workloads.DaemonSetsKind(), workloads.ControllerRevisionsKind(),
		workloads.JobsKind(), workloads.CronJobsKind(), workloads.HorizontalPodAutoscalersKind(), workloads.HorizontalPodAutoscalersV1Kind(),
		workloads.PodDisruptionBudgetsKind(), core.ReplicationControllersKind(), core.PodTemplatesKind(),
		rbac.RolesKind(), rbac.RoleBindingsKind(), rbac.ClusterRolesKind(), rbac.ClusterRoleBindingsKind(),
		customresources.CustomResourceDefinitionsKind(), cluster.APIServicesKind(),

		core.LimitRangesKind(), core.PersistentVolumeClaimsKind(), core.PersistentVolumesKind(), core.ResourceQuotasKind(),
		networking.IngressesKind(), networking.IngressClassesKind(), networking.NetworkPoliciesKind(), networking.IPAddressesKind(), networking.ServiceCIDRsKind(),
		networking.EndpointSlicesKind(), cluster.RuntimeClassesKind(), cluster.PriorityClassesKind(),
		storagekinds.StorageClassesKind(), storagekinds.CSIDriversKind(), storagekinds.CSINodesKind(), storagekinds.CSIStorageCapacitiesKind(), storagekinds.VolumeAttachmentsKind(),
		storagekinds.VolumeAttributesClassesKind(),
		cluster.CertificateSigningRequestsKind(), cluster.ClusterTrustBundlesKind(), cluster.PodCertificateRequestsKind(),
		cluster.FlowSchemasKind(), cluster.PriorityLevelConfigurationsKind(),
		admissionregistration.MutatingWebhookConfigurationsKind(), admissionregistration.ValidatingWebhookConfigurationsKind(),
		admissionregistration.ValidatingAdmissionPoliciesKind(), admissionregistration.ValidatingAdmissionPolicyBindingsKind(),
		admissionregistration.MutatingAdmissionPoliciesKind(), admissionregistration.MutatingAdmissionPolicyBindingsKind(),
		// Kinds GA or on by default since 1.33: dynamic resource allocation, storage version migration.
		resourcekinds.DeviceClassesKind(), resourcekinds.ResourceClaimsKind(), resourcekinds.ResourceClaimTemplatesKind(),
		resourcekinds.ResourceSlicesKind(), resourcekinds.DeviceTaintRulesKind(),
		cluster.StorageVersionMigrationsKind(),
	}
}

// addViewsAndSubresources adds the views and the subresources the kinds' stores do not
// make themselves: bindings, componentstatuses, events.k8s.io events; pods/eviction,
// ephemeralcontainers, resize and the proxy-type subresources; namespaces/finalize; CSR
// status and approval.
func (r *Registry) addViewsAndSubresources() {
	resource := func(gr schema.GroupResource) *registry.Resource { return r.byGR[gr] }
	r.Views = append(r.Views, core.Views(r.client, resource)...)
	core.AddSubresources(resource)
	cluster.AddSubresources(resource)
	registry.AddProxySubresources(resource, &r.connect)
}
