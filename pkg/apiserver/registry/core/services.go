package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func ServicesKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Service", ListKind: "ServiceList", Plural: "services", Singular: "service",
			ShortNames: []string{"svc"}, Categories: []string{"all"}, Namespaced: true},
		KeyRoot: "services/specs", // upstream's key; services/nodeports holds the NodePort bitmap
		New:     func() runtime.Object { return &corev1.Service{} },
		NewList: func() runtime.Object { return &corev1.ServiceList{} },
		Status:  true,
		Strategy: registry.Strategy{
			// upstream: PUT creates missing Services (and, through the inherited flag, their status).
			AllowCreateOnUpdate: true,
			NameValidation:      apivalidation.NameIsDNS1035Label,
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*corev1.Service).Status = corev1.ServiceStatus{}
			},
			// ClusterIPs and NodePorts are filled by the allocator (servicealloc.go).
			PrepareForUpdate: registry.Rule(func(svc, old *corev1.Service) {
				svc.Status = old.Status
				dropTypeDependentFields(svc, old)
				patchAllocatedValues(svc, old)
			}),
			PrepareForStatusUpdate: registry.Rule(func(svc, old *corev1.Service) { svc.Spec = old.Spec }),
			Default:                defaultService,
			Validate:               validateService,
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
				if oldSvc.Spec.ClusterIP != "" && svc.Spec.Type != corev1.ServiceTypeExternalName && oldSvc.Spec.Type != corev1.ServiceTypeExternalName {
					return registry.Immutable(svc.Spec.ClusterIP, oldSvc.Spec.ClusterIP, field.NewPath("spec", "clusterIP"))
				}
				return nil
			},
			Fields: func(obj runtime.Object) fields.Set {
				svc := obj.(*corev1.Service)
				return fields.Set{"spec.clusterIP": svc.Spec.ClusterIP, "spec.type": string(svc.Spec.Type)}
			},
		},
	}
}

// dropTypeDependentFields clears, on a change of type, what the old type had and the new one
// cannot have, when the update left it as it was (upstream's service strategy does the same):
// a Service turned ExternalName gives up its ClusterIP, one turned ClusterIP its NodePorts.
func dropTypeDependentFields(svc, old *corev1.Service) {
	if svc.Spec.Type == old.Spec.Type {
		return
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName &&
		svc.Spec.ClusterIP == old.Spec.ClusterIP {
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		svc.Spec.IPFamilies, svc.Spec.IPFamilyPolicy, svc.Spec.InternalTrafficPolicy = nil, nil, nil
	}
	if !needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if !needsHealthCheckNodePort(svc) {
		svc.Spec.HealthCheckNodePort = 0
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort && svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		svc.Spec.ExternalTrafficPolicy = ""
	}
}

// defaultService fills a Service's defaults as upstream's SetDefaults_Service and the
// service strategy do.
func defaultService(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP
	}
	if svc.Spec.SessionAffinity == "" {
		svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		if svc.Spec.SessionAffinityConfig == nil {
			svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{}
		}
		if svc.Spec.SessionAffinityConfig.ClientIP == nil {
			svc.Spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
		}
		if svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil {
			t := corev1.DefaultClientIPServiceAffinitySeconds
			svc.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = &t
		}
	}
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == (intstr.IntOrString{}) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		if svc.Spec.ExternalTrafficPolicy == "" {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.AllocateLoadBalancerNodePorts == nil {
		yes := true
		svc.Spec.AllocateLoadBalancerNodePorts = &yes
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
			svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
		}
		if svc.Spec.ClusterIP != "" {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if svc.Spec.IPFamilyPolicy == nil {
			p := corev1.IPFamilyPolicySingleStack
			svc.Spec.IPFamilyPolicy = &p
		}
		if svc.Spec.InternalTrafficPolicy == nil {
			p := corev1.ServiceInternalTrafficPolicyCluster
			svc.Spec.InternalTrafficPolicy = &p
		}
	}
}

// validateService checks a Service's type and ports.
func validateService(obj runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	var errs field.ErrorList
	p := field.NewPath("spec")
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			errs = append(errs, field.Required(p.Child("ports"), ""))
		}
	case corev1.ServiceTypeExternalName:
		if svc.Spec.ExternalName == "" {
			errs = append(errs, field.Required(p.Child("externalName"), ""))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), svc.Spec.Type, []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"}))
	}
	names := map[string]bool{}
	for i, port := range svc.Spec.Ports {
		pp := p.Child("ports").Index(i)
		for _, msg := range utilvalidation.IsValidPortNum(int(port.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), port.Port, msg))
		}
		if len(svc.Spec.Ports) > 1 && port.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		}
		if names[port.Name] && port.Name != "" {
			errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
		}
		names[port.Name] = true
		errs = append(errs, registry.ValidateProtocol(port.Protocol, pp.Child("protocol"))...)
	}
	return errs
}
