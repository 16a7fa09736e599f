package tableconvert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Printers of networking.k8s.io and discovery.k8s.io, as kube-apiserver 1.33's.
func init() {
	register(&networkingv1.IngressList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Class", "string", "The name of the IngressClass resource that should be used for this Ingress."),
		col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
		col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
		col("Ports", "string", "Ports of TLS configurations that open"),
		ageColumn(),
	}, func(ing *networkingv1.Ingress, now time.Time) ([]any, []metav1.TableRowCondition) {
		class := "<none>"
		if ing.Spec.IngressClassName != nil {
			class = *ing.Spec.IngressClassName
		}
		ports := "80"
		if len(ing.Spec.TLS) != 0 {
			ports = "80, 443"
		}
		return []any{ing.Name, class, ingressHosts(ing.Spec.Rules), ingressAddress(ing.Status.LoadBalancer), ports, age(ing.CreationTimestamp, now)}, nil
	})

	register(&networkingv1.IngressClassList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Controller", "string", "Controller that is responsible for handling this class"),
		col("Parameters", "string", "A reference to a resource with additional parameters"),
		ageColumn(),
	}, func(ic *networkingv1.IngressClass, now time.Time) ([]any, []metav1.TableRowCondition) {
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []any{ic.Name, ic.Spec.Controller, params, age(ic.CreationTimestamp, now)}, nil
	})

	register(&networkingv1.NetworkPolicyList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]),
		ageColumn(),
	}, func(np *networkingv1.NetworkPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp, now)}, nil
	})

	register(&networkingv1.IPAddressList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("ParentRef", "string", networkingv1.IPAddressSpec{}.SwaggerDoc()["parentRef"]),
	}, func(ip *networkingv1.IPAddress, now time.Time) ([]any, []metav1.TableRowCondition) {
		parent := "<none>"
		if r := ip.Spec.ParentRef; r != nil {
			parent = strings.ToLower(schema.GroupResource{Group: r.Group, Resource: r.Resource}.String())
			if r.Namespace != "" {
				parent += "/" + r.Namespace
			}
			parent += "/" + r.Name
		}
		// Upstream's row has the age too, past its two columns; kubectl shows two.
		return []any{ip.Name, parent}, nil
	})

	register(&networkingv1.ServiceCIDRList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("CIDRs", "string", networkingv1.ServiceCIDRSpec{}.SwaggerDoc()["cidrs"]),
		ageColumn(),
	}, func(sc *networkingv1.ServiceCIDR, now time.Time) ([]any, []metav1.TableRowCondition) {
		return []any{sc.Name, strings.Join(sc.Spec.CIDRs, ","), age(sc.CreationTimestamp, now)}, nil
	})

	register(&discoveryv1.EndpointSliceList{}, []metav1.TableColumnDefinition{
		nameColumn(),
		col("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
		col("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
		col("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
		ageColumn(),
	}, func(es *discoveryv1.EndpointSlice, now time.Time) ([]any, []metav1.TableRowCondition) {
		var ports []string
		for _, p := range es.Ports {
			n := "*"
			if p.Port != nil {
				n = strconv.Itoa(int(*p.Port))
			} else if p.Name != nil {
				n = *p.Name
			}
			ports = append(ports, n)
		}
		var addrs []string
		for _, e := range es.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		return []any{es.Name, string(es.AddressType), listWithMore(ports, 3), listWithMore(addrs, 3), age(es.CreationTimestamp, now)}, nil
	})
}

// listWithMore is upstream's listWithMoreString: the first max items, "+ N more...".
func listWithMore(list []string, max int) string {
	if len(list) > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ","), len(list)-max)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}

// ingressHosts is upstream's formatHosts.
func ingressHosts(rules []networkingv1.IngressRule) string {
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == 3 {
			more = true
		}
		if !more && r.Host != "" {
			list = append(list, r.Host)
		}
	}
	if len(list) == 0 {
		return "*"
	}
	if more {
		return fmt.Sprintf("%s + %d more...", strings.Join(list, ","), len(rules)-3)
	}
	return strings.Join(list, ",")
}

// ingressAddress is upstream's ingressLoadBalancerStatusStringer in wide form (the server
// always sends the wide cells).
func ingressAddress(s networkingv1.IngressLoadBalancerStatus) string {
	seen := map[string]bool{}
	var out []string
	for _, in := range s.Ingress {
		a := in.IP
		if a == "" {
			a = in.Hostname
		}
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
