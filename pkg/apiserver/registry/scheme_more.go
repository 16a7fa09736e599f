package registry

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// The groups of the non-workload kinds (networking, storage, certificates, ...).
func init() {
	utilruntime.Must(admissionregistrationv1.AddToScheme(Scheme))
	utilruntime.Must(certificatesv1.AddToScheme(Scheme))
	utilruntime.Must(discoveryv1.AddToScheme(Scheme))
	utilruntime.Must(eventsv1.AddToScheme(Scheme))
	utilruntime.Must(flowcontrolv1.AddToScheme(Scheme))
	utilruntime.Must(networkingv1.AddToScheme(Scheme))
	utilruntime.Must(nodev1.AddToScheme(Scheme))
	utilruntime.Must(policyv1.AddToScheme(Scheme))
	utilruntime.Must(schedulingv1.AddToScheme(Scheme))
	utilruntime.Must(storagev1.AddToScheme(Scheme))
}
