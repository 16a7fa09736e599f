package authz

import "fmt"

// Names the bootstrap policy refers to (upstream's user, serviceaccount and
// certificates/v1beta1 constants).
const (
	userAllAuthenticated      = "system:authenticated"
	userAllUnauthenticated    = "system:unauthenticated"
	userSystemPrivilegedGroup = "system:masters"
	userMonitoringGroup       = "system:monitoring"
	userKubeProxy             = "system:kube-proxy"
	userKubeControllerManager = "system:kube-controller-manager"
	userKubeScheduler         = "system:kube-scheduler"

	serviceAccountAllServiceAccountsGroup = "system:serviceaccounts"

	legacyTokenTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"

	signerLegacyUnknownSignerName              = "kubernetes.io/legacy-unknown"
	signerKubeAPIServerClientSignerName        = "kubernetes.io/kube-apiserver-client"
	signerKubeAPIServerClientKubeletSignerName = "kubernetes.io/kube-apiserver-client-kubelet"
	signerKubeletServingSignerName             = "kubernetes.io/kubelet-serving"
)

// panicf reports a broken built-in policy (static code), as upstream's klog.Fatalf does.
func panicf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
