package authz

import (
	"strings"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Node authorizes kubelets (user system:node:NAME in group system:nodes) as upstream's
// Node authorizer (v1.33, AuthorizeNodeWithSelectors on; see node_decide.go), with a smaller
// graph: for each node, the pods bound to it and what they reference (secrets, configmaps,
// persistent volume claims, the service account), the PersistentVolumes bound to those
// claims and the VolumeAttachments naming the node. Objects upstream reaches through edges
// hacp does not keep (a PersistentVolume's secrets, resource claims and slices) are refused.
// Beyond upstream, a node may change only its own Node and Lease and the status of its own
// pods (the part of upstream's NodeRestriction admission that is about who, not what).
type Node struct {
	mu sync.RWMutex
	// pods: namespace/name -> the node and references of one bound pod.
	pods map[string]*podRefs
	// refs: node + "|" + kind + "|" + namespace/name -> how many of its pods reference it.
	refs map[string]int
	// pvClaims: PersistentVolume name -> namespace/name of the claim it is bound to.
	pvClaims map[string]string
	// vaNodes: VolumeAttachment name -> the node it attaches a volume to.
	vaNodes map[string]string
	rules   []rbacv1.PolicyRule
}

type podRefs struct {
	node string
	keys []string // kind|namespace/name
}

func newNode() *Node {
	return &Node{pods: map[string]*podRefs{}, refs: map[string]int{}, pvClaims: map[string]string{}, vaNodes: map[string]string{}, rules: nodeRules()}
}

// nodeIdentity is upstream's NodeIdentity: the node a user is, if any.
func nodeIdentity(u *request.User) (string, bool) {
	if u == nil || !strings.HasPrefix(u.Name, "system:node:") || !hasString(u.Groups, "system:nodes") {
		return "", false
	}
	return strings.TrimPrefix(u.Name, "system:node:"), true
}

func podKeys(p *corev1.Pod) []string {
	ns := p.Namespace
	var keys []string
	add := func(kind, name string) {
		if name != "" {
			keys = append(keys, kind+"|"+nsName(ns, name))
		}
	}
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	add("serviceaccounts", sa)
	for _, s := range p.Spec.ImagePullSecrets {
		add("secrets", s.Name)
	}
	containers := append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...)
	for _, c := range p.Spec.EphemeralContainers {
		containers = append(containers, corev1.Container{Env: c.Env, EnvFrom: c.EnvFrom})
	}
	for _, c := range containers {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add("secrets", e.SecretRef.Name)
			}
			if e.ConfigMapRef != nil {
				add("configmaps", e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if f := e.ValueFrom; f != nil {
				if f.SecretKeyRef != nil {
					add("secrets", f.SecretKeyRef.Name)
				}
				if f.ConfigMapKeyRef != nil {
					add("configmaps", f.ConfigMapKeyRef.Name)
				}
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.Secret != nil:
			add("secrets", v.Secret.SecretName)
		case v.ConfigMap != nil:
			add("configmaps", v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			add("persistentvolumeclaims", v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			add("persistentvolumeclaims", p.Name+"-"+v.Name)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					add("secrets", s.Secret.Name)
				}
				if s.ConfigMap != nil {
					add("configmaps", s.ConfigMap.Name)
				}
			}
		}
		for _, ref := range volumeSecretRefs(v) {
			add("secrets", ref)
		}
	}
	return keys
}

// volumeSecretRefs are the secrets of volume plugins that name one (CSI, flex, iSCSI...).
func volumeSecretRefs(v corev1.Volume) []string {
	var out []string
	if v.CSI != nil && v.CSI.NodePublishSecretRef != nil {
		out = append(out, v.CSI.NodePublishSecretRef.Name)
	}
	if v.FlexVolume != nil && v.FlexVolume.SecretRef != nil {
		out = append(out, v.FlexVolume.SecretRef.Name)
	}
	if v.ISCSI != nil && v.ISCSI.SecretRef != nil {
		out = append(out, v.ISCSI.SecretRef.Name)
	}
	if v.RBD != nil && v.RBD.SecretRef != nil {
		out = append(out, v.RBD.SecretRef.Name)
	}
	if v.CephFS != nil && v.CephFS.SecretRef != nil {
		out = append(out, v.CephFS.SecretRef.Name)
	}
	if v.AzureFile != nil {
		out = append(out, v.AzureFile.SecretName)
	}
	return out
}

func (n *Node) setPodLocked(key string, p *corev1.Pod) {
	if old := n.pods[key]; old != nil {
		for _, k := range old.keys {
			rk := old.node + "|" + k
			if n.refs[rk]--; n.refs[rk] <= 0 {
				delete(n.refs, rk)
			}
		}
		delete(n.pods, key)
	}
	if p == nil || p.Spec.NodeName == "" {
		return
	}
	pr := &podRefs{node: p.Spec.NodeName, keys: podKeys(p)}
	n.pods[key] = pr
	for _, k := range pr.keys {
		n.refs[pr.node+"|"+k]++
	}
}

func (n *Node) applyPod(deleted bool, p *corev1.Pod) {
	key := nsName(p.Namespace, p.Name)
	if deleted {
		p = nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setPodLocked(key, p)
}

// nameIndex returns the handler that keeps *m, an object's name to edge(obj), from an
// informer of T; edge's ok is false for an object the graph has no edge for (a
// PersistentVolume not bound to a claim).
func nameIndex[T interface {
	runtime.Object
	GetName() string
}](n *Node, m *map[string]string, edge func(T) (string, bool)) func(deleted bool, obj T) {
	return func(deleted bool, obj T) {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(*m, obj.GetName())
		if v, ok := edge(obj); ok && !deleted {
			(*m)[obj.GetName()] = v
		}
	}
}

// pvClaim is a PersistentVolume's edge: the namespace/name of the claim it is bound to.
func pvClaim(pv *corev1.PersistentVolume) (string, bool) {
	if pv.Spec.ClaimRef == nil {
		return "", false
	}
	return nsName(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name), true
}

// vaNode is a VolumeAttachment's edge: the node it attaches a volume to.
func vaNode(va *storagev1.VolumeAttachment) (string, bool) { return va.Spec.NodeName, true }

// related reports whether the graph leads from the object (kind = its resource) to node.
func (n *Node) related(node, kind, ns, name string) bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	switch kind {
	case "pods":
		p := n.pods[nsName(ns, name)]
		return p != nil && p.node == node
	case "persistentvolumes":
		claim, ok := n.pvClaims[name]
		return ok && n.refs[node+"|persistentvolumeclaims|"+claim] > 0
	case "volumeattachments":
		return n.vaNodes[name] == node
	}
	return n.refs[node+"|"+kind+"|"+nsName(ns, name)] > 0
}
