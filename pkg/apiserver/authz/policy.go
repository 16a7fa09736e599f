// Ported from Kubernetes v1.37.2, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go
// (Copyright The Kubernetes Authors, Apache License 2.0): the same rule builders with the
// feature gates resolved to their v1.37 defaults (policy_gates.go).

package authz

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// write and other vars are slices of the allowed verbs.
// label and annotation are default maps of bootstrappolicy.
var (
	write      = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite  = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	read       = []string{"get", "list", "watch"}
	readUpdate = []string{"get", "list", "watch", "update", "patch"}

	label      = map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	annotation = map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}
)

const (
	legacyGroup                  = ""
	appsGroup                    = "apps"
	authenticationGroup          = "authentication.k8s.io"
	authorizationGroup           = "authorization.k8s.io"
	autoscalingGroup             = "autoscaling"
	batchGroup                   = "batch"
	certificatesGroup            = "certificates.k8s.io"
	coordinationGroup            = "coordination.k8s.io"
	discoveryGroup               = "discovery.k8s.io"
	extensionsGroup              = "extensions"
	lifecycleGroup               = "lifecycle.k8s.io"
	policyGroup                  = "policy"
	rbacGroup                    = "rbac.authorization.k8s.io"
	resourceGroup                = "resource.k8s.io"
	storageGroup                 = "storage.k8s.io"
	resMetricsGroup              = "metrics.k8s.io"
	customMetricsGroup           = "custom.metrics.k8s.io"
	externalMetricsGroup         = "external.metrics.k8s.io"
	networkingGroup              = "networking.k8s.io"
	eventsGroup                  = "events.k8s.io"
	internalAPIServerGroup       = "internal.apiserver.k8s.io"
	admissionRegistrationGroup   = "admissionregistration.k8s.io"
	storageVersionMigrationGroup = "storagemigration.k8s.io"
	schedulingGroup              = "scheduling.k8s.io"
)

func addDefaultMetadata(obj runtime.Object) {
	metadata, err := meta.Accessor(obj)
	if err != nil {
		// if this happens, then some static code is broken
		panic(err)
	}

	labels := metadata.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range label {
		labels[k] = v
	}
	metadata.SetLabels(labels)

	annotations := metadata.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range annotation {
		annotations[k] = v
	}
	metadata.SetAnnotations(annotations)
}

func addClusterRoleLabel(roles []rbacv1.ClusterRole) {
	for i := range roles {
		addDefaultMetadata(&roles[i])
	}
}

func addClusterRoleBindingLabel(rolebindings []rbacv1.ClusterRoleBinding) {
	for i := range rolebindings {
		addDefaultMetadata(&rolebindings[i])
	}
}

func viewRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		newRule(read...).Groups(legacyGroup).Resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
		newRule(read...).Groups(legacyGroup).Resources("limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").rule(),
		// read access to namespaces at the namespace scope means you can read *this* namespace.  This can be used as an
		// indicator of which namespaces you have access to.
		newRule(read...).Groups(legacyGroup).Resources("namespaces").rule(),

		newRule(read...).Groups(legacyGroup, eventsGroup).Resources("events").rule(),

		newRule(read...).Groups(discoveryGroup).Resources("endpointslices").rule(),

		newRule(read...).Groups(appsGroup).Resources(
			"controllerrevisions",
			"statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status",
			"deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale").rule(),

		newRule(read...).Groups(autoscalingGroup).Resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),

		newRule(read...).Groups(batchGroup).Resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").rule(),

		newRule(read...).Groups(extensionsGroup).Resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies").rule(),

		newRule(read...).Groups(policyGroup).Resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),

		newRule(read...).Groups(networkingGroup).Resources("networkpolicies", "ingresses", "ingresses/status").rule(),
	}

	if gateDynamicResourceAllocation {
		rules = append(rules, newRule(read...).Groups(resourceGroup).Resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates").rule())
	}
	if gateGenericWorkload {
		rules = append(rules, newRule(read...).Groups(schedulingGroup).Resources("workloads", "podgroups", "podgroups/status").rule())
	}
	if gateCompositePodGroup {
		rules = append(rules, newRule(read...).Groups(schedulingGroup).Resources("compositepodgroups", "compositepodgroups/status").rule())
	}
	if gateEvictionRequestAPI {
		rules = append(rules, newRule(read...).Groups(lifecycleGroup).Resources("evictionrequests", "evictions").rule())
	}
	return rules
}

func editRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		// Allow read on escalating resources
		newRule(read...).Groups(legacyGroup).Resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").rule(),
		newRule("impersonate").Groups(legacyGroup).Resources("serviceaccounts").rule(),

		newRule(write...).Groups(legacyGroup).Resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").rule(),
		newRule("create").Groups(legacyGroup).Resources("pods/eviction").rule(),
		newRule(write...).Groups(legacyGroup).Resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets").rule(),
		newRule("create").Groups(legacyGroup).Resources("serviceaccounts/token").rule(),

		newRule(write...).Groups(legacyGroup, eventsGroup).Resources("events").rule(),

		newRule(write...).Groups(appsGroup).Resources(
			"statefulsets", "statefulsets/scale",
			"daemonsets",
			"deployments", "deployments/scale", "deployments/rollback",
			"replicasets", "replicasets/scale").rule(),

		newRule(write...).Groups(autoscalingGroup).Resources("horizontalpodautoscalers").rule(),

		newRule(write...).Groups(batchGroup).Resources("jobs", "cronjobs").rule(),

		newRule(write...).Groups(extensionsGroup).Resources("daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale",
			"networkpolicies").rule(),

		newRule(write...).Groups(policyGroup).Resources("poddisruptionbudgets").rule(),

		newRule(write...).Groups(networkingGroup).Resources("networkpolicies", "ingresses").rule(),

		newRule(readWrite...).Groups(coordinationGroup).Resources("leases").rule(),
	}
	if gateDynamicResourceAllocation {
		rules = append(rules, newRule(write...).Groups(resourceGroup).Resources("resourceclaims", "resourceclaimtemplates").rule())
	}
	if gateGenericWorkload {
		rules = append(rules, newRule(write...).Groups(schedulingGroup).Resources("workloads", "podgroups").rule())
	}
	if gateCompositePodGroup {
		rules = append(rules, newRule(write...).Groups(schedulingGroup).Resources("compositepodgroups").rule())
	}
	if gateEvictionRequestAPI {
		// "evictions" are in the domain of the system and should be only updated by the evictionrequest-controller. "evictionrequests" are user-scoped.
		rules = append(rules, newRule(write...).Groups(lifecycleGroup).Resources("evictionrequests").rule())
	}
	return rules
}

// NodeRules returns node policy rules, it is slice of rbacv1.PolicyRule.
func nodeRules() []rbacv1.PolicyRule {
	nodePolicyRules := []rbacv1.PolicyRule{
		// Needed to check API access.  These creates are non-mutating
		newRule("create").Groups(authenticationGroup).Resources("tokenreviews").rule(),
		newRule("create").Groups(authorizationGroup).Resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),

		// Needed to build serviceLister, to populate env vars for services
		newRule(read...).Groups(legacyGroup).Resources("services").rule(),

		// Nodes can register Node API objects and report status.
		// Use the NodeRestriction admission plugin to limit a node to creating/updating its own API object.
		newRule("create", "get", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
		newRule("update", "patch").Groups(legacyGroup).Resources("nodes/status").rule(),
		newRule("update", "patch").Groups(legacyGroup).Resources("nodes").rule(),

		// TODO: restrict to the bound node as creator in the NodeRestrictions admission plugin
		newRule("create", "update", "patch").Groups(legacyGroup, eventsGroup).Resources("events").rule(),

		// Use the Node authorizer to limit get to pods related to the node, and to limit list/watch to field selectors related to the node.
		newRule(read...).Groups(legacyGroup).Resources("pods").rule(),

		// Needed for the node to create/delete mirror pods.
		// Use the NodeRestriction admission plugin to limit a node to creating/deleting mirror pods bound to itself.
		newRule("create", "delete").Groups(legacyGroup).Resources("pods").rule(),
		// Needed for the node to report status of pods it is running.
		// Use the NodeRestriction admission plugin to limit a node to updating status of pods bound to itself.
		newRule("update", "patch").Groups(legacyGroup).Resources("pods/status").rule(),
		// Needed for the node to create pod evictions.
		// Use the NodeRestriction admission plugin to limit a node to creating evictions for pods bound to itself.
		newRule("create").Groups(legacyGroup).Resources("pods/eviction").rule(),

		// Needed for imagepullsecrets, rbd/ceph and secret volumes, and secrets in envs
		// Needed for configmap volume and envs
		// Use the Node authorization mode to limit a node to get secrets/configmaps referenced by pods bound to itself.
		newRule("get", "list", "watch").Groups(legacyGroup).Resources("secrets", "configmaps").rule(),
		// Needed for persistent volumes
		// Use the Node authorization mode to limit a node to get pv/pvc objects referenced by pods bound to itself.
		newRule("get").Groups(legacyGroup).Resources("persistentvolumeclaims", "persistentvolumes").rule(),

		// TODO: add to the Node authorizer and restrict to endpoints referenced by pods or PVs bound to the node
		// Needed for glusterfs volumes
		newRule("get").Groups(legacyGroup).Resources("endpoints").rule(),
		// Used to create a certificatesigningrequest for a node-specific client certificate, and watch
		// for it to be signed. This allows the kubelet to rotate it's own certificate.
		newRule("create", "get", "list", "watch").Groups(certificatesGroup).Resources("certificatesigningrequests").rule(),

		// Leases
		newRule("get", "create", "update", "patch", "delete").Groups("coordination.k8s.io").Resources("leases").rule(),

		// CSI
		newRule("get").Groups(storageGroup).Resources("volumeattachments").rule(),

		// Use the Node authorization to limit a node to create tokens for service accounts running on that node
		// Use the NodeRestriction admission plugin to limit a node to create tokens bound to pods on that node
		newRule("create").Groups(legacyGroup).Resources("serviceaccounts/token").rule(),
	}

	// Use the Node authorization mode to limit a node to update status of pvc objects referenced by pods bound to itself.
	// Use the NodeRestriction admission plugin to limit a node to just update the status stanza.
	pvcStatusPolicyRule := newRule("get", "update", "patch").Groups(legacyGroup).Resources("persistentvolumeclaims/status").rule()
	nodePolicyRules = append(nodePolicyRules, pvcStatusPolicyRule)

	// CSI
	csiDriverRule := newRule("get", "watch", "list").Groups("storage.k8s.io").Resources("csidrivers").rule()
	nodePolicyRules = append(nodePolicyRules, csiDriverRule)
	csiNodeInfoRule := newRule("get", "create", "update", "patch", "delete").Groups("storage.k8s.io").Resources("csinodes").rule()
	nodePolicyRules = append(nodePolicyRules, csiNodeInfoRule)
	// Use the Node authorization mode to limit a node to update status of its own CSINode.
	// Use the NodeRestriction admission plugin to limit a node to just update the status stanza.
	if gateCSIVolumeHealth {
		csiNodeStatusRule := newRule("get", "update", "patch").Groups("storage.k8s.io").Resources("csinodes/status").rule()
		nodePolicyRules = append(nodePolicyRules, csiNodeStatusRule)
	}

	// RuntimeClass
	nodePolicyRules = append(nodePolicyRules, newRule("get", "list", "watch").Groups("node.k8s.io").Resources("runtimeclasses").rule())

	// DRA Resource Claims
	if gateDynamicResourceAllocation {
		nodePolicyRules = append(nodePolicyRules, newRule("get").Groups(resourceGroup).Resources("resourceclaims").rule())
		nodePolicyRules = append(nodePolicyRules, newRule("deletecollection").Groups(resourceGroup).Resources("resourceslices").rule())
	}
	// Kubelet needs access to ClusterTrustBundles to support the pemTrustAnchors volume type.
	if gateClusterTrustBundle {
		nodePolicyRules = append(nodePolicyRules, newRule("get", "list", "watch").Groups(certificatesGroup).Resources("clustertrustbundles").rule())
	}
	// Kubelet needs access to ServiceAccounts to support sending service account tokens to the credential provider.
	// Use the Node authorizer to limit get to service accounts related to the node.
	if gateKubeletServiceAccountTokenForCredentialProviders {
		nodePolicyRules = append(nodePolicyRules, newRule("get").Groups(legacyGroup).Resources("serviceaccounts").rule())
	}
	// Kubelet needs to create arbitrary PodCertificateRequests to implement
	// podCertificate volumes.
	if gatePodCertificateRequest {
		nodePolicyRules = append(nodePolicyRules, newRule("get", "list", "watch", "create").Groups(certificatesGroup).Resources("podcertificaterequests").rule())
	}

	return nodePolicyRules
}

// ClusterRoles returns the cluster roles to bootstrap an API server with
func bootstrapClusterRoles() []rbacv1.ClusterRole {
	monitoringURLs := []string{
		"/metrics", "/metrics/slis",
		"/livez", "/readyz", "/healthz",
		"/livez/*", "/readyz/*", "/healthz/*",
	}

	if gateComponentFlagz {
		monitoringURLs = append(monitoringURLs, "/flagz")
	}

	if gateComponentStatusz {
		monitoringURLs = append(monitoringURLs, "/statusz")
	}

	monitoringRules := []rbacv1.PolicyRule{
		newRule("get").URLs(monitoringURLs...).rule(),

		// Needed for kubelet metrics
		newRule("get").Groups(legacyGroup).Resources("nodes/metrics").rule(),
	}

	roles := []rbacv1.ClusterRole{
		{
			// a "root" role which can do absolutely anything
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin"},
			Rules: []rbacv1.PolicyRule{
				newRule("*").Groups("*").Resources("*").rule(),
				newRule("*").URLs("*").rule(),
			},
		},
		{
			// a role which provides just enough power to determine if the server is
			// ready and discover API versions for negotiation
			ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
			Rules: []rbacv1.PolicyRule{
				newRule("get").URLs(
					"/livez", "/readyz", "/healthz",
					"/version", "/version/",
					"/openapi", "/openapi/*",
					"/api", "/api/*",
					"/apis", "/apis/*",
				).rule(),
			},
		},
		{
			// a role which provides minimal read access to the monitoring endpoints
			// (i.e. /metrics, /livez/*, /readyz/*, /healthz/*, /livez, /readyz, /healthz)
			// The splatted health check endpoints allow read access to individual health check
			// endpoints which may contain more sensitive cluster information information
			ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			Rules:      monitoringRules,
		},
	}

	basicUserRules := []rbacv1.PolicyRule{
		newRule("create").Groups(authorizationGroup).Resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
		newRule("create").Groups(authenticationGroup).Resources("selfsubjectreviews").rule(),
	}

	roles = append(roles, []rbacv1.ClusterRole{
		{
			// a role which provides minimal resource access to allow a "normal" user to learn information about themselves
			ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			Rules:      basicUserRules,
		},
		{
			// a role which provides just enough power read insensitive cluster information
			ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"},
			Rules: []rbacv1.PolicyRule{
				newRule("get").URLs(
					"/livez", "/readyz", "/healthz", "/version", "/version/",
				).rule(),
			},
		},
		{
			// a role for a namespace level admin.  It is `edit` plus the power to grant permissions to other users.
			ObjectMeta: metav1.ObjectMeta{Name: "admin"},
			AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{
					{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
				},
			},
		},
		{
			// a role for a namespace level editor.  It grants access to all user level actions in a namespace.
			// It does not grant powers for "privileged" resources which are domain of the system: `/status`
			// subresources or `quota`/`limits` which are used to control namespaces
			ObjectMeta: metav1.ObjectMeta{Name: "edit", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
			AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{
					{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
				},
			},
		},
		{
			// a role for namespace level viewing.  It grants read-only access to non-escalating resources in
			// a namespace.
			ObjectMeta: metav1.ObjectMeta{Name: "view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{
					{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
				},
			},
		},
		{
			// a role for a namespace level admin.  It is `edit` plus the power to grant permissions to other users.
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
			Rules: []rbacv1.PolicyRule{
				// additional admin powers
				newRule("create").Groups(authorizationGroup).Resources("localsubjectaccessreviews").rule(),
				newRule(readWrite...).Groups(rbacGroup).Resources("roles", "rolebindings").rule(),
			},
		},
		{
			// a role for a namespace level editor.  It grants access to all user level actions in a namespace.
			// It does not grant powers for "privileged" resources which are domain of the system: `/status`
			// subresources or `quota`/`limits` which are used to control namespaces
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			Rules:      editRules(),
		},
		{
			// a role for namespace level viewing.  It grants read-only access to non-escalating resources in
			// a namespace.
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
			Rules:      viewRules(),
		},
		{
			// a role to use for heapster's connections back to the API server
			ObjectMeta: metav1.ObjectMeta{Name: "system:heapster"},
			Rules: []rbacv1.PolicyRule{
				newRule(read...).Groups(legacyGroup).Resources("events", "pods", "nodes", "namespaces").rule(),
				newRule(read...).Groups(extensionsGroup).Resources("deployments").rule(),
			},
		},
		{
			// a role for nodes to use to have the access they need for running pods
			ObjectMeta: metav1.ObjectMeta{Name: systemNodeRoleName},
			Rules:      nodeRules(),
		},
		{
			// a role to use for node-problem-detector access.  It does not get bound to default location since
			// deployment locations can reasonably vary.
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-problem-detector"},
			Rules: []rbacv1.PolicyRule{
				newRule("get").Groups(legacyGroup).Resources("nodes").rule(),
				newRule("patch").Groups(legacyGroup).Resources("nodes/status").rule(),
				eventsRule(),
			},
		},
		{
			// a role to use for bootstrapping a node's client certificates
			ObjectMeta: metav1.ObjectMeta{Name: "system:node-bootstrapper"},
			Rules: []rbacv1.PolicyRule{
				// used to create a certificatesigningrequest for a node-specific client certificate, and watch for it to be signed
				newRule("create", "get", "list", "watch").Groups(certificatesGroup).Resources("certificatesigningrequests").rule(),
			},
		},
		{
			// a role to use for allowing authentication and authorization delegation
			ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
			Rules: []rbacv1.PolicyRule{
				// These creates are non-mutating
				newRule("create").Groups(authenticationGroup).Resources("tokenreviews").rule(),
				newRule("create").Groups(authorizationGroup).Resources("subjectaccessreviews").rule(),
			},
		},
		{
			// a role to use for the API registry, summarization, and proxy handling
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-aggregator"},
			Rules: []rbacv1.PolicyRule{
				// it needs to see all services so that it knows whether the ones it points to exist or not
				newRule(read...).Groups(legacyGroup).Resources("services", "endpoints").rule(),
			},
		},
		{
			// a role to use for bootstrapping the kube-controller-manager so it can create the shared informers
			// service accounts, and secrets that we need to create separate identities for other controllers
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-controller-manager"},
			Rules: []rbacv1.PolicyRule{
				eventsRule(),
				// Needed for leader election.
				newRule("create").Groups(coordinationGroup).Resources("leases").rule(),
				newRule("get", "update").Groups(coordinationGroup).Resources("leases").Names("kube-controller-manager").rule(),
				// Fundamental resources.
				newRule("create").Groups(legacyGroup).Resources("secrets", "serviceaccounts").rule(),
				newRule("delete").Groups(legacyGroup).Resources("secrets").rule(),
				newRule("get").Groups(legacyGroup).Resources("namespaces", "secrets", "serviceaccounts", "configmaps").rule(),
				newRule("update").Groups(legacyGroup).Resources("secrets", "serviceaccounts").rule(),
				// Needed to check API access.  These creates are non-mutating
				newRule("create").Groups(authenticationGroup).Resources("tokenreviews").rule(),
				newRule("create").Groups(authorizationGroup).Resources("subjectaccessreviews").rule(),
				// Needed for all shared informers
				newRule("list", "watch").Groups("*").Resources("*").rule(),
				newRule("create").Groups(legacyGroup).Resources("serviceaccounts/token").rule(),
			},
		},
		{
			// a role to use for the kube-dns pod
			ObjectMeta: metav1.ObjectMeta{Name: "system:kube-dns"},
			Rules: []rbacv1.PolicyRule{
				newRule("list", "watch").Groups(legacyGroup).Resources("endpoints", "services").rule(),
			},
		},
		{
			// a role for an external/out-of-tree persistent volume provisioner
			ObjectMeta: metav1.ObjectMeta{Name: "system:persistent-volume-provisioner"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "create", "delete").Groups(legacyGroup).Resources("persistentvolumes").rule(),
				// update is needed in addition to read access for setting lock annotations on PVCs
				newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
				newRule(read...).Groups(storageGroup).Resources("storageclasses").rule(),

				// Needed for watching provisioning success and failure events
				newRule("watch").Groups(legacyGroup).Resources("events").rule(),

				eventsRule(),
			},
		},
		{
			// a role making the csrapprover controller approve a node client CSR
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
			Rules: []rbacv1.PolicyRule{
				newRule("create").Groups(certificatesGroup).Resources("certificatesigningrequests/nodeclient").rule(),
			},
		},
		{
			// a role making the csrapprover controller approve a node client CSR requested by the node itself
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
			Rules: []rbacv1.PolicyRule{
				newRule("create").Groups(certificatesGroup).Resources("certificatesigningrequests/selfnodeclient").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:volume-scheduler"},
			Rules: []rbacv1.PolicyRule{
				newRule(readUpdate...).Groups(legacyGroup).Resources("persistentvolumes").rule(),
				newRule(read...).Groups(storageGroup).Resources("storageclasses").rule(),
				newRule(readUpdate...).Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:legacy-unknown-approver"},
			Rules: []rbacv1.PolicyRule{
				newRule("approve").Groups(certificatesGroup).Resources("signers").Names(signerLegacyUnknownSignerName).rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:kubelet-serving-approver"},
			Rules: []rbacv1.PolicyRule{
				newRule("approve").Groups(certificatesGroup).Resources("signers").Names(signerKubeletServingSignerName).rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:kube-apiserver-client-approver"},
			Rules: []rbacv1.PolicyRule{
				newRule("approve").Groups(certificatesGroup).Resources("signers").Names(signerKubeAPIServerClientSignerName).rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver"},
			Rules: []rbacv1.PolicyRule{
				newRule("approve").Groups(certificatesGroup).Resources("signers").Names(signerKubeAPIServerClientKubeletSignerName).rule(),
			},
		},
	}...)

	// Add the cluster role for reading the ServiceAccountIssuerDiscovery endpoints
	// Also allow slash-ended URLs to allow clients generated from published openapi docs prior to fixing the trailing slash to work properly
	roles = append(roles, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:service-account-issuer-discovery"},
		Rules: []rbacv1.PolicyRule{
			newRule("get").URLs(
				"/.well-known/openid-configuration",
				"/.well-known/openid-configuration/",
				"/openid/v1/jwks",
				"/openid/v1/jwks/",
			).rule(),
		},
	})

	// Add the cluster role system:kubelet-api-admin
	kubeletAPIAdminRules := []rbacv1.PolicyRule{
		// Allow read-only access to the Node API objects
		newRule("get", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
		// Allow all API calls to the nodes
		newRule("proxy").Groups(legacyGroup).Resources("nodes").rule(),
		newRule("*").Groups(legacyGroup).Resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log").rule(),
	}

	if gateKubeletFineGrainedAuthz {
		kubeletAPIAdminRules = append(kubeletAPIAdminRules, newRule("*").Groups(legacyGroup).Resources("nodes/pods", "nodes/healthz", "nodes/configz").rule())
	}

	roles = append(roles, rbacv1.ClusterRole{
		// a role to use for full access to the kubelet API
		ObjectMeta: metav1.ObjectMeta{Name: "system:kubelet-api-admin"},
		Rules:      kubeletAPIAdminRules,
	})

	// node-proxier role is used by kube-proxy.
	nodeProxierRules := []rbacv1.PolicyRule{
		newRule("list", "watch").Groups(legacyGroup).Resources("services", "endpoints").rule(),
		newRule("get", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),

		eventsRule(),
	}
	if gateMultiCIDRServiceAllocator {
		nodeProxierRules = append(nodeProxierRules, newRule("list", "watch").Groups(networkingGroup).Resources("servicecidrs").rule())
	}

	nodeProxierRules = append(nodeProxierRules, newRule("list", "watch").Groups(discoveryGroup).Resources("endpointslices").rule())
	roles = append(roles, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:node-proxier"},
		Rules:      nodeProxierRules,
	})

	kubeSchedulerRules := []rbacv1.PolicyRule{
		eventsRule(),
		// This is for leaderlease access
		// TODO: scope this to the kube-system namespace
		newRule("create").Groups(coordinationGroup).Resources("leases").rule(),
		newRule("get", "update", "list", "watch").Groups(coordinationGroup).Resources("leases").Names("kube-scheduler").rule(),
		newRule(readWrite...).Groups(coordinationGroup).Resources("leasecandidates").rule(),

		// Fundamental resources
		newRule(read...).Groups(legacyGroup).Resources("nodes").rule(),
		newRule("get", "list", "watch", "delete").Groups(legacyGroup).Resources("pods").rule(),
		newRule("create").Groups(legacyGroup).Resources("pods/binding", "bindings").rule(),
		newRule("patch", "update").Groups(legacyGroup).Resources("pods/status").rule(),
		// Things that select pods
		newRule(read...).Groups(legacyGroup).Resources("services", "replicationcontrollers").rule(),
		newRule(read...).Groups(appsGroup, extensionsGroup).Resources("replicasets").rule(),
		newRule(read...).Groups(appsGroup).Resources("statefulsets").rule(),
		// Things that pods use or applies to them
		newRule(read...).Groups(policyGroup).Resources("poddisruptionbudgets").rule(),
		newRule(read...).Groups(legacyGroup).Resources("persistentvolumeclaims", "persistentvolumes").rule(),
		// Needed to check API access. These creates are non-mutating
		newRule("create").Groups(authenticationGroup).Resources("tokenreviews").rule(),
		newRule("create").Groups(authorizationGroup).Resources("subjectaccessreviews").rule(),
		// Needed for volume limits
		newRule(read...).Groups(storageGroup).Resources("csinodes").rule(),
		newRule("get", "list", "watch").Groups(storageGroup).Resources("volumeattachments").rule(),
		// Needed for namespaceSelector feature in pod affinity
		newRule(read...).Groups(legacyGroup).Resources("namespaces").rule(),
		newRule(read...).Groups(storageGroup).Resources("csidrivers").rule(),
		newRule(read...).Groups(storageGroup).Resources("csistoragecapacities").rule(),
	}
	// Needed for dynamic resource allocation.
	if gateDynamicResourceAllocation {
		kubeSchedulerRules = append(kubeSchedulerRules,
			newRule(read...).Groups(resourceGroup).Resources("deviceclasses").rule(),
			newRule(readUpdate...).Groups(resourceGroup).Resources("resourceclaims").rule(),
			newRule(readUpdate...).Groups(resourceGroup).Resources("resourceclaims/status").rule(),
			newRule("update").Groups(legacyGroup).Resources("pods/finalizers").rule(),
			newRule(read...).Groups(resourceGroup).Resources("resourceslices").rule(),
		)
		if gateDRAExtendedResource {
			kubeSchedulerRules = append(kubeSchedulerRules,
				newRule("create", "delete").Groups(resourceGroup).Resources("resourceclaims").rule(),
			)
		}
		if gateDRADeviceTaintRules {
			kubeSchedulerRules = append(kubeSchedulerRules, newRule(read...).Groups(resourceGroup).Resources("devicetaintrules").rule())
		}
		if gateDRAResourceClaimGranularStatusAuthorization {
			kubeSchedulerRules = append(kubeSchedulerRules,
				newRule("update", "patch").Groups(resourceGroup).Resources("resourceclaims/binding").rule(),
			)
		}
	}
	if gateGenericWorkload {
		kubeSchedulerRules = append(kubeSchedulerRules, newRule(read...).Groups(schedulingGroup).Resources("podgroups").rule())
		kubeSchedulerRules = append(kubeSchedulerRules, newRule("patch", "update").Groups(schedulingGroup).Resources("podgroups/status").rule())
	}
	if gateCompositePodGroup {
		kubeSchedulerRules = append(kubeSchedulerRules, newRule(read...).Groups(schedulingGroup).Resources("compositepodgroups").rule())
		kubeSchedulerRules = append(kubeSchedulerRules, newRule("patch", "update").Groups(schedulingGroup).Resources("compositepodgroups/status").rule())
	}
	roles = append(roles, rbacv1.ClusterRole{
		// a role to use for the kube-scheduler
		ObjectMeta: metav1.ObjectMeta{Name: "system:kube-scheduler"},
		Rules:      kubeSchedulerRules,
	})

	// Default ClusterRole to allow reading ClusterTrustBundle objects
	if gateClusterTrustBundle {
		roles = append(roles, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "system:cluster-trust-bundle-discovery"},
			Rules: []rbacv1.PolicyRule{
				newRule(read...).Groups(certificatesGroup).Resources("clustertrustbundles").rule(),
			},
		})
	}

	addClusterRoleLabel(roles)
	return roles
}

const systemNodeRoleName = "system:node"

// ClusterRoleBindings return default rolebindings to the default roles
func bootstrapClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	rolebindings := []rbacv1.ClusterRoleBinding{
		newClusterBinding("cluster-admin").Groups(userSystemPrivilegedGroup).clusterBinding(),
		newClusterBinding("system:monitoring").Groups(userMonitoringGroup).clusterBinding(),
		newClusterBinding("system:discovery").Groups(userAllAuthenticated).clusterBinding(),
		newClusterBinding("system:basic-user").Groups(userAllAuthenticated).clusterBinding(),
		newClusterBinding("system:public-info-viewer").Groups(userAllAuthenticated, userAllUnauthenticated).clusterBinding(),
		newClusterBinding("system:node-proxier").Users(userKubeProxy).clusterBinding(),
		newClusterBinding("system:kube-controller-manager").Users(userKubeControllerManager).clusterBinding(),
		newClusterBinding("system:kube-dns").SAs("kube-system", "kube-dns").clusterBinding(),
		newClusterBinding("system:kube-scheduler").Users(userKubeScheduler).clusterBinding(),
		newClusterBinding("system:volume-scheduler").Users(userKubeScheduler).clusterBinding(),

		// This default binding of the system:node role to the system:nodes group is deprecated in 1.7 with the availability of the Node authorizer.
		// This leaves the binding, but with an empty set of subjects, so that tightening reconciliation can remove the subject.
		{
			ObjectMeta: metav1.ObjectMeta{Name: systemNodeRoleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: systemNodeRoleName},
		},
	}

	// Allow all in-cluster workloads (via their service accounts) to read the OIDC discovery endpoints.
	// Users with certain forms of write access (create pods, create secrets, create service accounts, etc)
	// can gain access to a service account identity which would allow them to access this information.
	// This includes the issuer URL, which is already present in the SA token JWT.  Similarly, SAs can
	// already gain this same info via introspection of their own token.  Since this discovery endpoint
	// points to what issued all service account tokens, it seems fitting for SAs to have this access.
	// Defer to the cluster admin with regard to binding directly to all authenticated and/or
	// unauthenticated users.
	rolebindings = append(rolebindings,
		newClusterBinding("system:service-account-issuer-discovery").Groups(serviceAccountAllServiceAccountsGroup).clusterBinding(),
	)

	// Service accounts can read ClusterTrustBundle objects.
	if gateClusterTrustBundle {
		rolebindings = append(rolebindings, newClusterBinding("system:cluster-trust-bundle-discovery").Groups(serviceAccountAllServiceAccountsGroup).clusterBinding())
	}

	addClusterRoleBindingLabel(rolebindings)

	return rolebindings
}
