package authz

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
)

// nodeDecider decides a kubelet's request for one resource, as one of upstream's
// NodeAuthorizer.authorizeXxx functions.
type nodeDecider func(n *Node, node string, a *Attributes) (Decision, string)

// nodeDeciders are the resources upstream's Node authorizer subdivides (group/resource);
// requests for any other resource are decided by the node rules alone.
var nodeDeciders = map[string]nodeDecider{
	"/secrets":                         func(n *Node, node string, a *Attributes) (Decision, string) { return n.readNamespaced(node, a) },
	"/configmaps":                      func(n *Node, node string, a *Attributes) (Decision, string) { return n.readNamespaced(node, a) },
	"/persistentvolumeclaims":          (*Node).decidePVC,
	"/persistentvolumes":               func(n *Node, node string, a *Attributes) (Decision, string) { return n.getRelated(node, a) },
	"resource.k8s.io/resourceclaims":   func(n *Node, node string, a *Attributes) (Decision, string) { return n.getRelated(node, a) },
	"storage.k8s.io/volumeattachments": func(n *Node, node string, a *Attributes) (Decision, string) { return n.getRelated(node, a) },
	"/serviceaccounts":                 (*Node).decideServiceAccount,
	"coordination.k8s.io/leases":       (*Node).decideLease,
	"storage.k8s.io/csinodes":          (*Node).decideCSINode,
	"resource.k8s.io/resourceslices":   (*Node).decideResourceSlice,
	"/nodes":                           (*Node).decideNode,
	"/pods":                            (*Node).decidePod,
}

// Authorize implements Authorizer.
func (n *Node) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	node, ok := nodeIdentity(a.User)
	if !ok {
		return NoOpinion, "", nil
	}
	if node == "" {
		return NoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if a.ResourceRequest {
		if decide := nodeDeciders[a.APIGroup+"/"+a.Resource]; decide != nil {
			d, reason := decide(n, node, &a)
			return d, reason, nil
		}
	}
	if rulesAllow(&a, n.rules) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

func noRelation(node string) string {
	return fmt.Sprintf("no relationship found between node '%s' and this object", node)
}

// relatedObject allows a named object the graph leads from to node (upstream's authorize).
func (n *Node) relatedObject(node string, a *Attributes) (Decision, string) {
	if a.Name == "" {
		return NoOpinion, "No Object name found"
	}
	if n.related(node, a.Resource, a.Namespace, a.Name) {
		return Allow, ""
	}
	return NoOpinion, noRelation(node)
}

// readNamespaced is get, list or watch of one related object (secrets, configmaps).
func (n *Node) readNamespaced(node string, a *Attributes) (Decision, string) {
	switch a.Verb {
	case "get", "list", "watch":
	default:
		return NoOpinion, "can only read resources of this type"
	}
	if a.Subresource != "" {
		return NoOpinion, "cannot read subresource"
	}
	if a.Namespace == "" {
		return NoOpinion, "can only read namespaced object of this type"
	}
	return n.relatedObject(node, a)
}

// getRelated is a get of one related object.
func (n *Node) getRelated(node string, a *Attributes) (Decision, string) {
	if a.Verb != "get" {
		return NoOpinion, "can only get individual resources of this type"
	}
	if a.Subresource != "" {
		return NoOpinion, "cannot get subresource"
	}
	return n.relatedObject(node, a)
}

// decidePVC: a related claim's get, or an update or patch of its status.
func (n *Node) decidePVC(node string, a *Attributes) (Decision, string) {
	if a.Subresource != "status" {
		return n.getRelated(node, a)
	}
	if a.Verb != "update" && a.Verb != "patch" {
		return NoOpinion, "can only get/update/patch this type"
	}
	return n.relatedObject(node, a)
}

// decideServiceAccount: a token for a related ServiceAccount (getting one needs
// KubeletServiceAccountTokenForCredentialProviders).
func (n *Node) decideServiceAccount(node string, a *Attributes) (Decision, string) {
	if a.Verb == "get" && a.Subresource == "" {
		if !gateKubeletServiceAccountTokenForCredentialProviders {
			return NoOpinion, "not allowed to get service accounts"
		}
		return n.readNamespaced(node, a)
	}
	if a.Verb != "create" || a.Name == "" {
		return NoOpinion, "can only create tokens for individual service accounts"
	}
	if a.Subresource != "token" {
		return NoOpinion, "can only create token subresource of serviceaccount"
	}
	return n.relatedObject(node, a)
}

// decideLease: the node's own Lease in kube-node-lease.
func (n *Node) decideLease(node string, a *Attributes) (Decision, string) {
	switch a.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return NoOpinion, "can only get, create, update, patch, or delete a node lease"
	}
	if a.Namespace != corev1.NamespaceNodeLease {
		return NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	if a.Verb != "create" && a.Name != node {
		return NoOpinion, "can only access node lease with the same name as the requesting node"
	}
	return Allow, ""
}

// decideCSINode: the node's own CSINode.
func (n *Node) decideCSINode(node string, a *Attributes) (Decision, string) {
	switch a.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return NoOpinion, "can only get, create, update, patch, or delete a CSINode"
	}
	if a.Subresource != "" {
		return NoOpinion, "cannot authorize CSINode subresources"
	}
	if a.Verb != "create" && a.Name != node {
		return NoOpinion, "can only access CSINode with the same name as the requesting node"
	}
	return Allow, ""
}

// decideResourceSlice: create (NodeRestriction checks the node), lists scoped to the node by
// field selector; hacp keeps no slices in its graph, so the named verbs are refused.
func (n *Node) decideResourceSlice(node string, a *Attributes) (Decision, string) {
	if a.Subresource != "" {
		return NoOpinion, "cannot authorize ResourceSlice subresources"
	}
	switch a.Verb {
	case "create":
		return Allow, ""
	case "get", "update", "patch", "delete":
		return n.relatedObject(node, a)
	case "watch", "list", "deletecollection":
		if selects(a, "spec.nodeName", node) {
			return Allow, ""
		}
		return NoOpinion, "can only list/watch/deletecollection resourceslices with nodeName field selector"
	}
	return NoOpinion, "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, delete, deletecollection"
}

// decideNode: reads of the node's own Node only; writes to its own Node and its status
// (upstream leaves the name to NodeRestriction; hacp checks it here too).
func (n *Node) decideNode(node string, a *Attributes) (Decision, string) {
	switch {
	case a.Subresource == "" && a.Verb == "create":
		return Allow, ""
	case (a.Subresource == "" || a.Subresource == "status") && (a.Verb == "update" || a.Verb == "patch"):
		if a.Name != "" && a.Name != node { // no name: the collection, which takes no writes (405)
			return NoOpinion, fmt.Sprintf("node '%s' cannot modify node '%s'", node, a.Name)
		}
		return Allow, ""
	case a.Subresource == "" && (a.Verb == "get" || a.Verb == "list" || a.Verb == "watch"):
		switch a.Name {
		case node:
			return Allow, ""
		case "":
			return NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node)
		}
		return NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, a.Name)
	}
	return NoOpinion, ""
}

// decidePod: a related pod's get; lists and watches only with spec.nodeName=node (or of one
// related pod); creates and deletes (mirror pods, NodeRestriction decides); its own pods'
// status (upstream leaves that to NodeRestriction); evictions.
func (n *Node) decidePod(node string, a *Attributes) (Decision, string) {
	switch a.Subresource {
	case "":
		switch a.Verb {
		case "get":
			return n.getRelated(node, a)
		case "list", "watch":
			if selects(a, "spec.nodeName", node) {
				return Allow, ""
			}
			if a.Name != "" {
				return n.relatedObject(node, a)
			}
			return NoOpinion, "can only list/watch pods with spec.nodeName field selector"
		case "create", "delete":
			return Allow, ""
		}
	case "status":
		if a.Verb == "update" || a.Verb == "patch" {
			return n.relatedObject(node, a)
		}
	case "eviction":
		if a.Verb == "create" {
			return Allow, ""
		}
	}
	return NoOpinion, ""
}

// selects reports whether the request's field selector requires field = value.
func selects(a *Attributes, field, value string) bool {
	for _, r := range a.FieldSelector {
		if r.Field == field && r.Operator == selection.Equals && r.Value == value {
			return true
		}
	}
	return false
}
