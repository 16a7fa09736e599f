package registry

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// randomClusterIP picks an address in 10.96.0.0/12. There is no allocator:
// collisions are possible but improbable in a small cluster.
func randomClusterIP() string {
	n := rand.Uint32N(1<<20-2) + 1
	return fmt.Sprintf("10.%d.%d.%d", 96+(n>>16), (n>>8)&0xff, n&0xff)
}

func servicesKind() *Kind {
	return &Kind{
		Names: Names{Version: "v1", Kind: "Service", ListKind: "ServiceList", Plural: "services", Singular: "service",
			ShortNames: []string{"svc"}, Categories: []string{"all"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.Service{} },
		NewList: func() runtime.Object { return &corev1.ServiceList{} },
		Status:  true,
		Strategy: Strategy{
			NameValidation: apivalidation.NameIsDNS1035Label,
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*corev1.Service).Status = corev1.ServiceStatus{}
			},
			Default: func(obj runtime.Object) {
				svc := obj.(*corev1.Service)
				if svc.Spec.Type == "" {
					svc.Spec.Type = corev1.ServiceTypeClusterIP
				}
				if svc.Spec.SessionAffinity == "" {
					svc.Spec.SessionAffinity = corev1.ServiceAffinityNone
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
				if svc.Spec.Type != corev1.ServiceTypeExternalName {
					if svc.Spec.ClusterIP == "" && len(svc.Spec.ClusterIPs) > 0 {
						svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
					}
					if svc.Spec.ClusterIP == "" {
						svc.Spec.ClusterIP = randomClusterIP()
					}
					svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
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
			},
			Validate: func(obj runtime.Object) field.ErrorList {
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
					errs = append(errs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
				}
				return errs
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
				if oldSvc.Spec.ClusterIP != "" && svc.Spec.Type != corev1.ServiceTypeExternalName && oldSvc.Spec.Type != corev1.ServiceTypeExternalName {
					return immutable(svc.Spec.ClusterIP, oldSvc.Spec.ClusterIP, field.NewPath("spec", "clusterIP"))
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
