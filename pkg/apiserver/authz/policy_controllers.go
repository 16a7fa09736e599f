// Ported from Kubernetes v1.37.2, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy_controllers.go
// (Copyright The Kubernetes Authors, Apache License 2.0): the same rule builders with the
// feature gates resolved to their v1.37 defaults (policy_gates.go).

package authz

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const saRolePrefix = "system:controller:"

func addControllerRole(controllerRoles *[]rbacv1.ClusterRole, controllerRoleBindings *[]rbacv1.ClusterRoleBinding, role rbacv1.ClusterRole) {
	if !strings.HasPrefix(role.Name, saRolePrefix) {
		panicf(`role %q must start with %q`, role.Name, saRolePrefix)
	}

	for _, existingRole := range *controllerRoles {
		if role.Name == existingRole.Name {
			panicf("role %q was already registered", role.Name)
		}
	}

	*controllerRoles = append(*controllerRoles, role)
	addClusterRoleLabel(*controllerRoles)

	*controllerRoleBindings = append(*controllerRoleBindings,
		newClusterBinding(role.Name).SAs("kube-system", role.Name[len(saRolePrefix):]).clusterBinding())
	addClusterRoleBindingLabel(*controllerRoleBindings)
}

func eventsRule() rbacv1.PolicyRule {
	return newRule("create", "update", "patch").Groups(legacyGroup, eventsGroup).Resources("events").rule()
}

func buildControllerRoles() ([]rbacv1.ClusterRole, []rbacv1.ClusterRoleBinding) {
	// controllerRoles is a slice of roles used for controllers
	controllerRoles := []rbacv1.ClusterRole{}
	// controllerRoleBindings is a slice of roles used for controllers
	controllerRoleBindings := []rbacv1.ClusterRoleBinding{}

	addControllerRole(&controllerRoles, &controllerRoleBindings, func() rbacv1.ClusterRole {
		role := rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "attachdetach-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("list", "watch").Groups(legacyGroup).Resources("persistentvolumes", "persistentvolumeclaims").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
				newRule("patch", "update").Groups(legacyGroup).Resources("nodes/status").rule(),
				newRule("list", "watch").Groups(legacyGroup).Resources("pods").rule(),
				eventsRule(),
				newRule("get", "create", "delete", "list", "watch").Groups(storageGroup).Resources("volumeattachments").rule(),
			},
		}

		role.Rules = append(role.Rules, newRule("get", "watch", "list").Groups("storage.k8s.io").Resources("csidrivers").rule())
		role.Rules = append(role.Rules, newRule("get", "watch", "list").Groups("storage.k8s.io").Resources("csinodes").rule())

		return role
	}())

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "clusterrole-aggregation-controller"},
		Rules: []rbacv1.PolicyRule{
			// this controller must have full permissions on clusterroles to allow it to mutate them in any way
			newRule("escalate", "get", "list", "watch", "update", "patch").Groups(rbacGroup).Resources("clusterroles").rule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "cronjob-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update").Groups(batchGroup).Resources("cronjobs").rule(),
			newRule("get", "list", "watch", "create", "update", "delete", "patch").Groups(batchGroup).Resources("jobs").rule(),
			newRule("update").Groups(batchGroup).Resources("cronjobs/status").rule(),
			newRule("update").Groups(batchGroup).Resources("cronjobs/finalizers").rule(),
			newRule("list", "watch", "delete").Groups(legacyGroup).Resources("pods").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "daemon-set-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(extensionsGroup, appsGroup).Resources("daemonsets").rule(),
			newRule("update").Groups(extensionsGroup, appsGroup).Resources("daemonsets/status").rule(),
			newRule("update").Groups(extensionsGroup, appsGroup).Resources("daemonsets/finalizers").rule(),
			newRule("list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
			newRule("list", "watch", "create", "delete", "patch").Groups(legacyGroup).Resources("pods").rule(),
			newRule("create").Groups(legacyGroup).Resources("pods/binding").rule(),
			newRule("get", "list", "watch", "create", "delete", "update", "patch").Groups(appsGroup).Resources("controllerrevisions").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "deployment-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update").Groups(extensionsGroup, appsGroup).Resources("deployments").rule(),
			newRule("update").Groups(extensionsGroup, appsGroup).Resources("deployments/status").rule(),
			newRule("update").Groups(extensionsGroup, appsGroup).Resources("deployments/finalizers").rule(),
			newRule("get", "list", "watch", "create", "update", "patch", "delete").Groups(appsGroup, extensionsGroup).Resources("replicasets").rule(),
			// TODO: remove "update" once
			// https://github.com/kubernetes/kubernetes/issues/36897 is resolved.
			newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("pods").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, func() rbacv1.ClusterRole {
		role := rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "disruption-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch").Groups(extensionsGroup, appsGroup).Resources("deployments").rule(),
				newRule("get", "list", "watch").Groups(appsGroup, extensionsGroup).Resources("replicasets").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("replicationcontrollers").rule(),
				newRule("get", "list", "watch").Groups(policyGroup).Resources("poddisruptionbudgets").rule(),
				newRule("get", "list", "watch").Groups(appsGroup).Resources("statefulsets").rule(),
				newRule("update").Groups(policyGroup).Resources("poddisruptionbudgets/status").rule(),
				newRule("patch", "update").Groups(legacyGroup).Resources("pods/status").rule(),
				newRule("get").Groups("*").Resources("*/scale").rule(),
				eventsRule(),
			},
		}
		return role
	}())
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "endpoint-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("services", "pods").rule(),
			newRule("get", "list", "watch", "create", "update", "delete").Groups(legacyGroup).Resources("endpoints").rule(),
			newRule("create").Groups(legacyGroup).Resources("endpoints/restricted").rule(),
			eventsRule(),
		},
	})

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "endpointslice-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("services", "pods", "nodes").rule(),
			// The controller needs to be able to set a service's finalizers to be able to create an EndpointSlice
			// resource that is owned by the service and sets blockOwnerDeletion=true in its ownerRef.
			newRule("update").Groups(legacyGroup).Resources("services/finalizers").rule(),
			newRule("get", "list", "watch", "create", "update", "delete").Groups(discoveryGroup).Resources("endpointslices").rule(),
			eventsRule(),
		},
	})

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "endpointslicemirroring-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("services", "endpoints").rule(),
			// The controller needs to be able to set a service's finalizers to be able to create an EndpointSlice
			// resource that is owned by the service and sets blockOwnerDeletion=true in its ownerRef.
			newRule("update").Groups(legacyGroup).Resources("services/finalizers").rule(),
			// The controller needs to be able to set a service's finalizers to be able to create an EndpointSlice
			// resource that is owned by the endpoint and sets blockOwnerDeletion=true in its ownerRef.
			// see https://github.com/openshift/kubernetes/blob/8691466059314c3f7d6dcffcbb76d14596ca716c/pkg/controller/endpointslicemirroring/utils.go#L87-L88
			newRule("update").Groups(legacyGroup).Resources("endpoints/finalizers").rule(),
			newRule("get", "list", "watch", "create", "update", "delete").Groups(discoveryGroup).Resources("endpointslices").rule(),
			eventsRule(),
		},
	})

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "expand-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update", "patch").Groups(legacyGroup).Resources("persistentvolumes").rule(),
			newRule("update", "patch").Groups(legacyGroup).Resources("persistentvolumeclaims/status").rule(),
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
			eventsRule(),
		},
	})

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "ephemeral-volume-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("pods").rule(),
			newRule("update").Groups(legacyGroup).Resources("pods/finalizers").rule(),
			newRule("get", "list", "watch", "create").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
			eventsRule(),
		},
	})

	if gateDynamicResourceAllocation {
		rules := []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("pods").rule(),
			newRule("update").Groups(legacyGroup).Resources("pods/finalizers").rule(),
			newRule("get", "list", "watch", "create", "delete").Groups(resourceGroup).Resources("resourceclaims").rule(),
			newRule("update", "patch").Groups(resourceGroup).Resources("resourceclaims", "resourceclaims/status").rule(),
			newRule("update", "patch").Groups(legacyGroup).Resources("pods/status").rule(),
			eventsRule(),
		}
		if gateDRAWorkloadResourceClaims {
			rules = append(rules,
				newRule("get", "list", "watch").Groups(schedulingGroup).Resources("podgroups").rule(),
				newRule("update", "patch").Groups(schedulingGroup).Resources("podgroups/status").rule(),
			)
		}
		if gateDRAResourceClaimGranularStatusAuthorization {
			rules = append(rules,
				newRule("update", "patch").Groups(resourceGroup).Resources("resourceclaims/binding").rule(),
			)
		}
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "resource-claim-controller"},
			Rules:      rules,
		})
		if gateDRADeviceTaints {
			rules := []rbacv1.PolicyRule{
				// Deletes pods to evict them.
				newRule("get", "list", "watch", "delete").Groups(legacyGroup).Resources("pods").rule(),
				// Sets pod conditions.
				newRule("update", "patch").Groups(legacyGroup).Resources("pods/status").rule(),
				// The rest is read-only.
				newRule("get", "list", "watch").Groups(resourceGroup).Resources("resourceclaims").rule(),
				newRule("get", "list", "watch").Groups(resourceGroup).Resources("resourceslices").rule(),
				newRule("get", "list", "watch").Groups(resourceGroup).Resources("deviceclasses").rule(),
				eventsRule(),
			}

			if gateDRADeviceTaintRules {
				rules = append(rules,
					// Sets DeviceTaintRule conditions.
					newRule("update", "patch").Groups(resourceGroup).Resources("devicetaintrules/status").rule(),
					// Read-only for spec.
					newRule("get", "list", "watch").Groups(resourceGroup).Resources("devicetaintrules").rule(),
				)
			}

			addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
				// Same name as in k8s.io/kubernetes/cmd/kube-controller-manager/names.
				ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "device-taint-eviction-controller"},
				Rules:      rules,
			})
		}
		if gateDRAResourcePoolStatus {
			addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
				// Same name as in k8s.io/kubernetes/cmd/kube-controller-manager/names.
				ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "resourcepoolstatusrequest-controller"},
				Rules: []rbacv1.PolicyRule{
					// Read and delete ResourcePoolStatusRequests (delete needed for TTL cleanup)
					newRule("get", "list", "watch", "delete").Groups(resourceGroup).Resources("resourcepoolstatusrequests").rule(),
					// Update status after processing
					newRule("update", "patch").Groups(resourceGroup).Resources("resourcepoolstatusrequests/status").rule(),
					// Read ResourceSlices to calculate pool status
					newRule("get", "list", "watch").Groups(resourceGroup).Resources("resourceslices").rule(),
					// Read ResourceClaims to calculate allocation counts
					newRule("get", "list", "watch").Groups(resourceGroup).Resources("resourceclaims").rule(),
					// Read DeviceTaintRules to count tainted devices as unavailable
					newRule("get", "list", "watch").Groups(resourceGroup).Resources("devicetaintrules").rule(),
					eventsRule(),
				},
			})
		}
	}

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "generic-garbage-collector"},
		Rules: []rbacv1.PolicyRule{
			// the GC controller needs to run list/watches, selective gets, and updates against any resource
			newRule("get", "list", "watch", "patch", "update", "delete").Groups("*").Resources("*").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "horizontal-pod-autoscaler"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(autoscalingGroup).Resources("horizontalpodautoscalers").rule(),
			newRule("update").Groups(autoscalingGroup).Resources("horizontalpodautoscalers/status").rule(),
			newRule("get", "update").Groups("*").Resources("*/scale").rule(),
			newRule("list", "watch").Groups(legacyGroup).Resources("pods").rule(),
			// allow listing resource, custom, and external metrics
			newRule("list", "watch").Groups(resMetricsGroup).Resources("pods").rule(),
			newRule("get", "list", "watch").Groups(customMetricsGroup).Resources("*").rule(),
			newRule("get", "list", "watch").Groups(externalMetricsGroup).Resources("*").rule(),
			eventsRule(),
		},
	})
	jobControllerRules := []rbacv1.PolicyRule{
		newRule("get", "list", "watch", "update", "patch").Groups(batchGroup).Resources("jobs").rule(),
		newRule("update").Groups(batchGroup).Resources("jobs/status").rule(),
		newRule("update").Groups(batchGroup).Resources("jobs/finalizers").rule(),
		newRule("list", "watch", "create", "delete", "patch").Groups(legacyGroup).Resources("pods").rule(),
		eventsRule(),
	}
	if gateWorkloadWithJob {
		jobControllerRules = append(jobControllerRules,
			newRule("get", "list", "watch", "create", "update", "patch").Groups(schedulingGroup).Resources("workloads", "podgroups").rule(),
		)
	}
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "job-controller"},
		Rules:      jobControllerRules,
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "namespace-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "delete").Groups(legacyGroup).Resources("namespaces").rule(),
			newRule("update").Groups(legacyGroup).Resources("namespaces/finalize", "namespaces/status").rule(),
			newRule("get", "list", "watch", "delete", "deletecollection").Groups("*").Resources("*").rule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, func() rbacv1.ClusterRole {
		role := rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "node-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "update", "delete", "patch").Groups(legacyGroup).Resources("nodes").rule(),
				newRule("patch", "update").Groups(legacyGroup).Resources("nodes/status").rule(),
				// used for pod deletion
				newRule("patch", "update").Groups(legacyGroup).Resources("pods/status").rule(),
				newRule("list", "watch", "get", "delete").Groups(legacyGroup).Resources("pods").rule(),
				newRule("get", "list", "watch").Groups(coordinationGroup).Resources("leases").rule(),
				eventsRule(),
			},
		}
		return role
	}())
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "persistent-volume-binder"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update", "create", "delete").Groups(legacyGroup).Resources("persistentvolumes").rule(),
			newRule("update").Groups(legacyGroup).Resources("persistentvolumes/status").rule(),
			newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
			newRule("update").Groups(legacyGroup).Resources("persistentvolumeclaims/status").rule(),
			newRule("list", "watch", "get", "create", "delete").Groups(legacyGroup).Resources("pods").rule(),
			newRule("get", "list", "watch").Groups(storageGroup).Resources("storageclasses").rule(),
			newRule("list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
			eventsRule(),

			// recyclerClient.WatchPod
			newRule("watch").Groups(legacyGroup).Resources("events").rule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, func() rbacv1.ClusterRole {
		role := rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "pod-garbage-collector"},
			Rules: []rbacv1.PolicyRule{
				newRule("list", "watch", "delete").Groups(legacyGroup).Resources("pods").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
				newRule("patch").Groups(legacyGroup).Resources("pods/status").rule(),
			},
		}
		return role
	}())
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "replicaset-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update").Groups(appsGroup, extensionsGroup).Resources("replicasets").rule(),
			newRule("update").Groups(appsGroup, extensionsGroup).Resources("replicasets/status").rule(),
			newRule("update").Groups(appsGroup, extensionsGroup).Resources("replicasets/finalizers").rule(),
			newRule("list", "watch", "patch", "create", "delete").Groups(legacyGroup).Resources("pods").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "replication-controller"},
		Rules: []rbacv1.PolicyRule{
			// 1.0 controllers needed get, update, so without these old controllers break on new servers
			newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("replicationcontrollers").rule(),
			newRule("update").Groups(legacyGroup).Resources("replicationcontrollers/status").rule(),
			newRule("update").Groups(legacyGroup).Resources("replicationcontrollers/finalizers").rule(),
			newRule("list", "watch", "patch", "create", "delete").Groups(legacyGroup).Resources("pods").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "resourcequota-controller"},
		Rules: []rbacv1.PolicyRule{
			// quota can count quota on anything for reconciliation, so it needs full viewing powers
			newRule("list", "watch").Groups("*").Resources("*").rule(),
			newRule("update").Groups(legacyGroup).Resources("resourcequotas/status").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "route-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
			newRule("patch").Groups(legacyGroup).Resources("nodes/status").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "service-account-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("create").Groups(legacyGroup).Resources("serviceaccounts").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "service-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(legacyGroup).Resources("services").rule(),
			newRule("patch", "update").Groups(legacyGroup).Resources("services/status").rule(),
			newRule("list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
			eventsRule(),
		},
	})
	if gateMultiCIDRServiceAllocator {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "service-cidrs-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "patch", "update").Groups(networkingGroup).Resources("servicecidrs").rule(),
				newRule("patch", "update").Groups(networkingGroup).Resources("servicecidrs/finalizers").rule(),
				newRule("patch", "update").Groups(networkingGroup).Resources("servicecidrs/status").rule(),
				newRule("get", "list", "watch").Groups(networkingGroup).Resources("ipaddresses").rule(),
				eventsRule(),
			},
		})
	}
	addControllerRole(&controllerRoles, &controllerRoleBindings, func() rbacv1.ClusterRole {
		role := rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "statefulset-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("list", "watch").Groups(legacyGroup).Resources("pods").rule(),
				newRule("get", "list", "watch").Groups(appsGroup).Resources("statefulsets").rule(),
				newRule("update").Groups(appsGroup).Resources("statefulsets/status").rule(),
				newRule("update").Groups(appsGroup).Resources("statefulsets/finalizers").rule(),
				newRule("get", "create", "delete", "update", "patch").Groups(legacyGroup).Resources("pods").rule(),
				newRule("get", "create", "delete", "update", "patch", "list", "watch").Groups(appsGroup).Resources("controllerrevisions").rule(),
				newRule("get", "create", "list", "watch").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
				newRule("update", "delete").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
				newRule("update").Groups(legacyGroup).Resources("pods/finalizers").rule(),
				eventsRule(),
			},
		}

		return role
	}())
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "ttl-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("update", "patch", "list", "watch").Groups(legacyGroup).Resources("nodes").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "certificate-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "delete").Groups(certificatesGroup).Resources("certificatesigningrequests").rule(),
			newRule("update").Groups(certificatesGroup).Resources("certificatesigningrequests/status", "certificatesigningrequests/approval").rule(),
			newRule("approve").Groups(certificatesGroup).Resources("signers").Names(signerKubeAPIServerClientKubeletSignerName).rule(),
			newRule("sign").Groups(certificatesGroup).Resources("signers").Names(
				signerLegacyUnknownSignerName,
				signerKubeAPIServerClientSignerName,
				signerKubeAPIServerClientKubeletSignerName,
				signerKubeletServingSignerName,
			).rule(),
			newRule("create").Groups(authorizationGroup).Resources("subjectaccessreviews").rule(),
			eventsRule(),
		},
	})
	if gatePodCertificateRequest {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "podcertificaterequestcleaner"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "delete").Groups(certificatesGroup).Resources("podcertificaterequests").rule(),
			},
		})
	}
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "pvc-protection-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
			newRule("update").Groups(legacyGroup).Resources("persistentvolumeclaims/status").rule(),
			newRule("list", "watch", "get").Groups(legacyGroup).Resources("pods").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "pv-protection-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "update").Groups(legacyGroup).Resources("persistentvolumes").rule(),
			eventsRule(),
		},
	})
	if gateVolumeAttributesClass {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "volumeattributesclass-protection-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("list", "watch", "get").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
				newRule("list", "watch", "get").Groups(legacyGroup).Resources("persistentvolumes").rule(),
				newRule("get", "list", "watch", "update").Groups(storageGroup).Resources("volumeattributesclasses").rule(),
				eventsRule(),
			},
		})
	}

	if gateGenericWorkload {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "podgroup-protection-controller"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch", "update").Groups(schedulingGroup).Resources("podgroups").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("pods").rule(),
			},
		})
	}

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "ttl-after-finished-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch", "delete").Groups(batchGroup).Resources("jobs").rule(),
			eventsRule(),
		},
	})
	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "root-ca-cert-publisher"},
		Rules: []rbacv1.PolicyRule{
			newRule("create", "update").Groups(legacyGroup).Resources("configmaps").rule(),
			eventsRule(),
		},
	})

	if gateClusterTrustBundle {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "kube-apiserver-serving-clustertrustbundle-publisher"},
			Rules: []rbacv1.PolicyRule{
				newRule("attest").Groups(certificatesGroup).Resources("signers").Names("kubernetes.io/kube-apiserver-serving").rule(),
				newRule("create", "update", "delete", "list", "watch").Groups(certificatesGroup).Resources("clustertrustbundles").rule(),
				eventsRule(),
			},
		})
	}

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "validatingadmissionpolicy-status-controller"},
		Rules: []rbacv1.PolicyRule{
			newRule("get", "list", "watch").Groups(admissionRegistrationGroup).
				Resources("validatingadmissionpolicies").rule(),
			newRule("get", "patch", "update").Groups(admissionRegistrationGroup).
				Resources("validatingadmissionpolicies/status").rule(),
			eventsRule(),
		},
	})

	if gateStorageVersionAPI &&
		gateAPIServerIdentity {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "storage-version-garbage-collector"},
			Rules: []rbacv1.PolicyRule{
				newRule("get", "list", "watch").Groups(coordinationGroup).Resources("leases").rule(),
				newRule("get", "list", "watch", "patch", "update", "delete").Groups(internalAPIServerGroup).
					Resources("storageversions").rule(),
				newRule("get", "patch", "update").Groups(internalAPIServerGroup).
					Resources("storageversions/status").rule(),
			},
		})
	}

	addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "legacy-service-account-token-cleaner"},
		Rules: []rbacv1.PolicyRule{
			newRule("get").Groups(legacyGroup).Resources("configmaps").Names(legacyTokenTrackingConfigMap).rule(),
			newRule("patch", "delete").Groups(legacyGroup).Resources("secrets").rule(),
		},
	})

	if gateStorageVersionMigrator {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{
				Name: saRolePrefix + "storage-version-migrator-controller",
			},
			Rules: []rbacv1.PolicyRule{
				// need list to get current RV for any resource
				// need patch for any resource to perform migration
				newRule("list", "patch").Groups("*").Resources("*").rule(),
				newRule("get").Groups("apiextensions.k8s.io").Resources("customresourcedefinitions").rule(),
				newRule("patch").Groups("apiextensions.k8s.io").Resources("customresourcedefinitions/status").rule(),
				newRule("update").Groups(storageVersionMigrationGroup).Resources("storageversionmigrations/status").rule(),
			},
		})
	}

	if gateSELinuxChangePolicy {
		addControllerRole(&controllerRoles, &controllerRoleBindings, rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: saRolePrefix + "selinux-warning-controller"},
			Rules: []rbacv1.PolicyRule{
				eventsRule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("persistentvolumes").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("persistentvolumeclaims").rule(),
				newRule("get", "list", "watch").Groups(legacyGroup).Resources("pods").rule(),
				newRule("get", "list", "watch").Groups(storageGroup).Resources("csidrivers").rule(),
			},
		})
	}

	return controllerRoles, controllerRoleBindings
}

// ControllerRoles returns the cluster roles used by controllers
func controllerRoles() []rbacv1.ClusterRole {
	controllerRoles, _ := buildControllerRoles()
	return controllerRoles
}

// ControllerRoleBindings returns the role bindings used by controllers
func controllerRoleBindings() []rbacv1.ClusterRoleBinding {
	_, controllerRoleBindings := buildControllerRoles()
	return controllerRoleBindings
}
