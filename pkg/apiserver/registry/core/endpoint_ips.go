package core

//lint:file-ignore SA1019 core/v1 Endpoints is deprecated upstream but still served

import (
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// The IP addresses of Endpoints, EndpointSlices and pod status, validated as kube-apiserver
// 1.33 does (pkg/apis/core/validation ValidateEndpointIP, validateEndpointSubsets,
// validatePodIPs, validateHostIPs). They matter beyond tidiness: services/proxy and
// pods/proxy connect to these addresses from the apiserver's host.

// validateLegacyIP is upstream's IsValidIPForLegacyField with StrictIPCIDRValidation off (its
// 1.33 default): any address netutils.ParseIPSloppy reads, and old values stay valid.
func validateLegacyIP(p *field.Path, value string, old []string) field.ErrorList {
	return utilvalidation.IsValidIPForLegacyField(p, value, false, old)
}

// validateEndpointIP is upstream's ValidateEndpointIP: an endpoint (or external IP) may not
// be unspecified, loopback or link-local, since the apiserver's proxy and every node's
// service proxy would connect there, on their own host.
func validateEndpointIP(ip string, p *field.Path) field.ErrorList {
	parsed := netutils.ParseIPSloppy(ip)
	if parsed == nil {
		return field.ErrorList{field.Invalid(p, ip, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if parsed.IsUnspecified() {
		errs = append(errs, field.Invalid(p, ip, fmt.Sprintf("may not be unspecified (%v)", ip)))
	}
	if parsed.IsLoopback() {
		errs = append(errs, field.Invalid(p, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if parsed.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(p, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if parsed.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(p, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

// ValidEndpointIP reports whether ip may be stored as an endpoint address.
func ValidEndpointIP(ip string) bool {
	return len(validateLegacyIP(nil, ip, nil)) == 0 && len(validateEndpointIP(ip, nil)) == 0
}

// validateEndpoints is upstream's ValidateEndpoints without the metadata: an update that
// leaves the subsets as they are keeps them even if they would not pass today (data stored
// under older rules).
func validateEndpoints(eps, old *corev1.Endpoints) field.ErrorList {
	errs := validateEndpointSubsets(eps.Subsets, field.NewPath("subsets"))
	if len(errs) != 0 && old != nil && registry.SemanticEqual(eps.Subsets, old.Subsets) {
		return nil
	}
	return errs
}

// validateEndpointSubsets is upstream's: every subset has an address, every address is a
// usable endpoint IP, and ports are named when there are several.
func validateEndpointSubsets(subsets []corev1.EndpointSubset, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		ip := p.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(ip, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], ip.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], ip.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, ip.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, p *field.Path) field.ErrorList {
	errs := validateLegacyIP(p.Child("ip"), a.IP, nil)
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, p.Child("hostname"))...)
	}
	if a.NodeName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			errs = append(errs, field.Invalid(p.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, validateEndpointIP(a.IP, p.Child("ip"))...)
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, validateDNS1123Label(port.Name, p.Child("name"))...)
	}
	errs = append(errs, registry.ValidatePortNumber(port.Port, p.Child("port"))...)
	if port.Protocol == "" {
		errs = append(errs, field.Required(p.Child("protocol"), ""))
	} else {
		errs = append(errs, registry.ValidateProtocol(port.Protocol, p.Child("protocol"))...)
	}
	if port.AppProtocol != nil {
		errs = append(errs, registry.ValidateQualifiedName(*port.AppProtocol, p.Child("appProtocol"))...)
	}
	return errs
}

// ValidateEndpointSliceAddress is upstream's check of one address of an IPv4 or IPv6
// EndpointSlice; the family error is on the list's path, without the index, as upstream's.
func ValidateEndpointSliceAddress(a string, addressType string, list *field.Path, i int) field.ErrorList {
	p := list.Index(i)
	if addressType == "IPv4" {
		if errs := validateLegacyIP(p, a, nil); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if !netutils.IsIPv4String(a) {
			errs = append(errs, field.Invalid(list, a, "must be an IPv4 address"))
		}
		return append(errs, validateEndpointIP(a, p)...)
	}
	if errs := utilvalidation.IsValidIP(p, a); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	if !netutils.IsIPv6String(a) {
		errs = append(errs, field.Invalid(list, a, "must be an IPv6 address"))
	}
	return append(errs, validateEndpointIP(a, p)...)
}

// normalizePodIPs applies upstream's reading of a v1 pod status (Convert_v1_PodStatus_To_
// core_PodStatus, then back): status.podIP is authoritative, so podIPs becomes [podIP] when
// it is missing or starts with another address, and podIP is podIPs[0] otherwise.
func normalizePodIPs(st *corev1.PodStatus) {
	switch {
	case st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP):
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
}

// internalIP renders a list of addresses in an error as upstream's internal type does.
type internalIP struct{ IP string }

// validateStatusIPs is upstream's validatePodIPs or validateHostIPs for one list: each new
// address is an IP, and two at most, one of each family.
func validateStatusIPs(ips, old []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, validateLegacyIP(p.Index(i), ip, old)...)
	}
	if len(ips) > 1 {
		dual, err := netutils.IsDualStackIPStrings(ips)
		if err != nil {
			errs = append(errs, field.InternalError(p, fmt.Errorf("failed to check for dual stack with error:%v", err)))
		}
		if !dual || len(ips) > 2 {
			shown := make([]internalIP, len(ips))
			for i, ip := range ips {
				shown[i] = internalIP{ip}
			}
			errs = append(errs, field.Invalid(p, shown, "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

// validatePodStatusIPs checks a pod status update's podIPs and hostIPs as upstream's
// ValidatePodStatusUpdate (which lets loopback pod IPs through: pods/proxy refuses them).
// Addresses as they were stored are left alone (an update of the spec or metadata).
func validatePodStatusIPs(pod, old *corev1.Pod) field.ErrorList {
	if pod.Status.HostIP == old.Status.HostIP && registry.SemanticEqual(pod.Status.PodIPs, old.Status.PodIPs) &&
		registry.SemanticEqual(pod.Status.HostIPs, old.Status.HostIPs) {
		return nil
	}
	status := field.NewPath("status")
	errs := validateStatusIPs(podIPStrings(pod.Status.PodIPs), podIPStrings(old.Status.PodIPs), status.Child("podIPs"))
	if len(pod.Status.HostIPs) == 0 {
		return errs
	}
	hostIPs := status.Child("hostIPs")
	if pod.Status.HostIP != pod.Status.HostIPs[0].IP {
		errs = append(errs, field.Invalid(hostIPs.Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	return append(errs, validateStatusIPs(hostIPStrings(pod.Status.HostIPs), hostIPStrings(old.Status.HostIPs), hostIPs)...)
}

func podIPStrings(ips []corev1.PodIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}

func hostIPStrings(ips []corev1.HostIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}
