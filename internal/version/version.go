// Package version holds the build's version, set by the Makefile with
// -ldflags "-X github.com/hacp/hacp/internal/version.Version=...".
package version

// Version is the hacp release or git description this binary was built from.
var Version = "dev"

// KubernetesMajor and KubernetesMinor are the Kubernetes API level the apiserver serves;
// kubectl's version dispatcher picks its client from the minor.
// KubernetesMinCompatibilityMinor is the oldest minor whose behaviour it still honours, one
// below, as kube-apiserver reports it in /version (minCompatibilityMinor).
const (
	KubernetesMajor                 = "1"
	KubernetesMinor                 = "37"
	KubernetesMinCompatibilityMinor = "36"
)
