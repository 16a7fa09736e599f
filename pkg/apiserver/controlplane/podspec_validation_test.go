package controlplane_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
)

// podSpecCase is one rule of kube-apiserver 1.33's pod spec validation (k8s.io/kubernetes
// pkg/apis/core/validation): a change to a valid spec and the one cause upstream answers,
// its field path relative to the spec.
type podSpecCase struct {
	name   string
	mutate func(s *corev1.PodSpec)
	cause  string // "field: message", field relative to the spec; none: accepted
	// podOnly: the rule is a pod's, or the template kinds add their own causes for it
	podOnly bool
	// more: further causes upstream gives too (the test checks the first)
	more int
}

var dns1123LabelMsg = utilvalidation.IsDNS1123Label("Data")[0]

func withVolume(v corev1.Volume) func(s *corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, v) }
}

func withProbe(set func(c *corev1.Container, p *corev1.Probe), p corev1.Probe) func(s *corev1.PodSpec) {
	return func(s *corev1.PodSpec) { set(&s.Containers[0], &p) }
}

func liveness(c *corev1.Container, p *corev1.Probe)  { c.LivenessProbe = p }
func readiness(c *corev1.Container, p *corev1.Probe) { c.ReadinessProbe = p }
func startup(c *corev1.Container, p *corev1.Probe)   { c.StartupProbe = p }

func tcpProbe(port int32) corev1.Probe {
	return corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}}
}

func withResources(r corev1.ResourceRequirements) func(s *corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Containers[0].Resources = r }
}

func withSecurityContext(sc corev1.SecurityContext) func(s *corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Containers[0].SecurityContext = &sc }
}

func withEnv(e ...corev1.EnvVar) func(s *corev1.PodSpec) {
	return func(s *corev1.PodSpec) { s.Containers[0].Env = e }
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// podSpecCases: messages and paths as k8s.io/kubernetes v1.33 pkg/apis/core/validation
// writes them (including its quirks: a second downwardAPI source reported as "downwarAPI",
// subPath errors at the list's path, envFrom's at the list's). Sent as pods to
// kube-apiserver 1.33.13 (once, by hand), all but the privileged case (it runs with
// --allow-privileged=false) got these very causes.
var podSpecCases = []podSpecCase{
	// volumes
	{name: "volume name not a DNS label", mutate: withVolume(corev1.Volume{Name: "Data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
		cause: `volumes[0].name: Invalid value: "Data": ` + dns1123LabelMsg},
	{name: "volume name missing", mutate: withVolume(corev1.Volume{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}),
		cause: `volumes[0].name: Required value`},
	{name: "volume name twice", mutate: func(s *corev1.PodSpec) {
		v := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		s.Volumes = []corev1.Volume{v, v}
	}, cause: `volumes[1].name: Duplicate value: "data"`},
	{name: "two volume sources", mutate: withVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/srv"}}}),
		cause: `volumes[0].hostPath: Forbidden: may not specify more than 1 volume type`},
	{name: "second source downwardAPI", mutate: withVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{}, DownwardAPI: &corev1.DownwardAPIVolumeSource{}}}),
		cause: `volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type`},
	{name: "hostPath without path", mutate: withVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}}),
		cause: `volumes[0].hostPath.path: Required value`},
	{name: "hostPath with ..", mutate: withVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/../etc"}}}),
		cause: `volumes[0].hostPath.path: Invalid value: "/srv/../etc": must not contain '..'`},
	{name: "hostPath bad type", mutate: withVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv", Type: ptr(corev1.HostPathType("Dir"))}}}),
		cause: `volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`},
	{name: "configMap without name", mutate: withVolume(corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}),
		cause: `volumes[0].configMap.name: Required value`},
	{name: "configMap item path absolute", mutate: withVolume(corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "k", Path: "/etc/k"}}}}}),
		cause: `volumes[0].configMap.items[0].path: Invalid value: "/etc/k": must be a relative path`},
	{name: "secret without secretName", mutate: withVolume(corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}}),
		cause: `volumes[0].secret.secretName: Required value`},
	{name: "secret mode over 0777", mutate: withVolume(corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr[int32](01000)}}}),
		cause: `volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive`},
	{name: "projected source with two kinds", mutate: withVolume(corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}},
			Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}}}}}}),
		cause: `volumes[0].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source`},
	{name: "projected token too short", mutate: func(s *corev1.PodSpec) {
		s.ServiceAccountName = "default"
		s.Volumes = []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr[int64](60)}}}}}}}
	}, cause: `volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes`},
	{name: "projected token without service account", mutate: withVolume(corev1.Volume{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}),
		cause: `volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set`, podOnly: true},
	{name: "projected duplicate paths", mutate: withVolume(corev1.Volume{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Items: []corev1.KeyToPath{{Key: "k", Path: "x"}}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Items: []corev1.KeyToPath{{Key: "k", Path: "x"}}}}}}}}),
		cause: `volumes[0].projected: Invalid value: "b": conflicting duplicate paths`},
	{name: "emptyDir negative sizeLimit", mutate: withVolume(corev1.Volume{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("-1Gi"))}}}),
		cause: `volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity`},
	{name: "pvc without claimName", mutate: withVolume(corev1.Volume{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}}),
		cause: `volumes[0].persistentVolumeClaim.claimName: Required value`},
	{name: "nfs relative path", mutate: withVolume(corev1.Volume{Name: "n", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "srv"}}}),
		cause: `volumes[0].nfs.path: Invalid value: "srv": must be an absolute path`},
	{name: "downwardAPI item unknown field", mutate: withVolume(corev1.Volume{Name: "d", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "ip", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}}}),
		cause: `volumes[0].downwardAPI.fieldRef.fieldPath: Unsupported value: "status.podIP": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`},

	// volume mounts
	{name: "mount of no volume", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}, cause: `containers[0].volumeMounts[0].name: Not found: "data"`},
	{name: "mount without mountPath", mutate: func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data"}}
	}, cause: `containers[0].volumeMounts[0].mountPath: Required value`},
	{name: "mountPath twice", mutate: func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "a", MountPath: "/data"}, {Name: "b", MountPath: "/data"}}
	}, cause: `containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`},
	{name: "subPath absolute", mutate: func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "a", MountPath: "/data", SubPath: "/x"}}
	}, cause: `containers[0].volumeMounts.subPath: Invalid value: "/x": must be a relative path`},
	{name: "bidirectional propagation unprivileged", mutate: func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "a", MountPath: "/data", MountPropagation: ptr(corev1.MountPropagationBidirectional)}}
	}, cause: `containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers`},
	{name: "volume device on an emptyDir", mutate: func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "a", DevicePath: "/dev/xvda"}}
	}, cause: `containers[0].volumeDevices[0].name: Invalid value: "a": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode`},

	// probes and lifecycle
	{name: "probe without handler", mutate: withProbe(liveness, corev1.Probe{}),
		cause: `containers[0].livenessProbe: Required value: must specify a handler type`},
	{name: "probe with two handlers", mutate: withProbe(readiness, corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"true"}}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}),
		cause: `containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type`},
	{name: "probe port out of range", mutate: withProbe(readiness, tcpProbe(70000)),
		cause: `containers[0].readinessProbe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive`},
	{name: "probe named port invalid", mutate: withProbe(readiness, corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("-http")}}}),
		cause: `containers[0].readinessProbe.httpGet.port: Invalid value: "-http": must not begin or end with a hyphen`},
	{name: "exec probe without command", mutate: withProbe(startup, corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}),
		cause: `containers[0].startupProbe.exec.command: Required value`},
	{name: "probe negative period", mutate: withProbe(readiness, func() corev1.Probe { p := tcpProbe(80); p.PeriodSeconds = -1; return p }()),
		cause: `containers[0].readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0`},
	{name: "probe negative timeout", mutate: withProbe(readiness, func() corev1.Probe { p := tcpProbe(80); p.TimeoutSeconds = -5; return p }()),
		cause: `containers[0].readinessProbe.timeoutSeconds: Invalid value: -5: must be greater than or equal to 0`},
	{name: "probe negative failureThreshold", mutate: withProbe(readiness, func() corev1.Probe { p := tcpProbe(80); p.FailureThreshold = -3; return p }()),
		cause: `containers[0].readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0`},
	{name: "liveness successThreshold 2", mutate: withProbe(liveness, func() corev1.Probe { p := tcpProbe(80); p.SuccessThreshold = 2; return p }()),
		cause: `containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`},
	{name: "startup successThreshold 3", mutate: withProbe(startup, func() corev1.Probe { p := tcpProbe(80); p.SuccessThreshold = 3; return p }()),
		cause: `containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1`},
	{name: "readiness probe grace period", mutate: withProbe(readiness, func() corev1.Probe { p := tcpProbe(80); p.TerminationGracePeriodSeconds = ptr[int64](5); return p }()),
		cause: `containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes`},
	{name: "preStop sleep beyond grace period", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 60}}}
	}, cause: `containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)`},

	// resources
	{name: "request above limit", mutate: withResources(corev1.ResourceRequirements{Requests: list("cpu", "1"), Limits: list("cpu", "500m")}),
		cause: `containers[0].resources.requests: Invalid value: "1": must be less than or equal to cpu limit of 500m`},
	{name: "negative request", mutate: withResources(corev1.ResourceRequirements{Requests: list("memory", "-1Mi")}),
		cause: `containers[0].resources.requests[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`},
	{name: "fractional extended resource", mutate: withResources(corev1.ResourceRequirements{Requests: list("example.com/gpu", "500m"), Limits: list("example.com/gpu", "500m")}),
		cause: `containers[0].resources.limits[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:"500m", Format:"DecimalSI"}: must be an integer`, more: 1},
	{name: "extended request without limit", mutate: withResources(corev1.ResourceRequirements{Requests: list("example.com/gpu", "1")}),
		cause: `containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources`},
	{name: "extended request below limit", mutate: withResources(corev1.ResourceRequirements{Requests: list("example.com/gpu", "1"), Limits: list("example.com/gpu", "2")}),
		cause: `containers[0].resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2`},
	{name: "not a container resource", mutate: withResources(corev1.ResourceRequirements{Requests: list("pods", "1")}),
		cause: `containers[0].resources.requests[pods]: Invalid value: pods: must be a standard resource for containers`},
	{name: "hugepages without cpu or memory", mutate: withResources(corev1.ResourceRequirements{Limits: list("hugepages-2Mi", "4Mi"), Requests: list("hugepages-2Mi", "4Mi")}),
		cause: `containers[0].resources: Forbidden: HugePages require cpu or memory`},

	// security contexts
	{name: "negative runAsUser", mutate: withSecurityContext(corev1.SecurityContext{RunAsUser: ptr[int64](-1)}),
		cause: `containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`},
	{name: "pod negative runAsGroup", mutate: func(s *corev1.PodSpec) { s.SecurityContext = &corev1.PodSecurityContext{RunAsGroup: ptr[int64](-2)} },
		cause: `securityContext.runAsGroup: Invalid value: -2: must be between 0 and 2147483647, inclusive`},
	{name: "privileged without privilege escalation", mutate: withSecurityContext(corev1.SecurityContext{Privileged: ptr(true), AllowPrivilegeEscalation: ptr(false)}),
		cause: "containers[0].securityContext: Invalid value: <obj>: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"},
	{name: "CAP_SYS_ADMIN without privilege escalation", mutate: withSecurityContext(corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false),
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}}),
		cause: "containers[0].securityContext: Invalid value: <obj>: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"},
	{name: "bad procMount", mutate: withSecurityContext(corev1.SecurityContext{ProcMount: ptr(corev1.ProcMountType("Open"))}),
		cause: `containers[0].securityContext.procMount: Unsupported value: "Open": supported values: "Default", "Unmasked"`},
	{name: "Unmasked procMount with host users", mutate: withSecurityContext(corev1.SecurityContext{ProcMount: ptr(corev1.UnmaskedProcMount)}),
		cause: `containers[0].securityContext.procMount: Invalid value: "Unmasked": ` + "`hostUsers` must be false to use `Unmasked`"},
	{name: "seccomp Localhost without profile", mutate: withSecurityContext(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}),
		cause: `containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost`},
	{name: "seccomp profile for RuntimeDefault", mutate: func(s *corev1.PodSpec) {
		s.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault, LocalhostProfile: ptr("p.json")}}
	}, cause: `securityContext.seccompProfile.localhostProfile: Invalid value: <obj>: can only be set when seccomp type is Localhost`},
	{name: "seccomp localhost profile absolute", mutate: withSecurityContext(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{
		Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("/etc/p.json")}}),
		cause: `containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/p.json": must be a relative path`},
	{name: "seccomp without type", mutate: withSecurityContext(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{}}),
		cause: `containers[0].securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set`},

	// env
	{name: "env name with =", mutate: withEnv(corev1.EnvVar{Name: "A=B", Value: "x"}),
		cause: `containers[0].env[0].name: Invalid value: "A=B": ` + utilvalidation.IsRelaxedEnvVarName("A=B")[0]},
	{name: "env name missing", mutate: withEnv(corev1.EnvVar{Value: "x"}),
		cause: `containers[0].env[0].name: Required value`},
	{name: "env valueFrom empty", mutate: withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{}}),
		cause: "containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"},
	{name: "env valueFrom two sources", mutate: withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"},
		SecretKeyRef:    &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}),
		cause: `containers[0].env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time`},
	{name: "env value and valueFrom", mutate: withEnv(corev1.EnvVar{Name: "A", Value: "x", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}),
		cause: "containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty"},
	{name: "env secretKeyRef without key", mutate: withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}),
		cause: `containers[0].env[0].valueFrom.secretKeyRef.key: Required value`},
	{name: "env fieldRef unsupported", mutate: withEnv(corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}),
		cause: `containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`},
	{name: "envFrom without source", mutate: func(s *corev1.PodSpec) { s.Containers[0].EnvFrom = []corev1.EnvFromSource{{Prefix: "P_"}} },
		cause: "containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`"},

	// pod-level fields
	{name: "restartPolicy unknown", mutate: func(s *corev1.PodSpec) { s.RestartPolicy = "Sometimes" },
		cause: `restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`, podOnly: true},
	{name: "dnsPolicy unknown", mutate: func(s *corev1.PodSpec) { s.DNSPolicy = "Cluster" },
		cause: `dnsPolicy: Unsupported value: "Cluster": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
	{name: "dnsPolicy None without dnsConfig", mutate: func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone },
		cause: "dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
	{name: "dnsConfig bad nameserver", mutate: func(s *corev1.PodSpec) { s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"dns"}} },
		cause: `dnsConfig.nameservers[0]: Invalid value: "dns": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
	{name: "dnsConfig option without name", mutate: func(s *corev1.PodSpec) { s.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{}}} },
		cause: `dnsConfig.options[0]: Required value: must not be empty`},
	{name: "hostname not a DNS label", mutate: func(s *corev1.PodSpec) { s.Hostname = "Data" },
		cause: `hostname: Invalid value: "Data": ` + dns1123LabelMsg},
	{name: "subdomain not a DNS label", mutate: func(s *corev1.PodSpec) { s.Subdomain = "Data" },
		cause: `subdomain: Invalid value: "Data": ` + dns1123LabelMsg},
	{name: "toleration Exists with value", mutate: func(s *corev1.PodSpec) {
		s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
	}, cause: `tolerations[0].operator: Invalid value: "v": value must be empty when ` + "`operator` is 'Exists'"},
	{name: "toleration unknown effect", mutate: func(s *corev1.PodSpec) { s.Tolerations = []corev1.Toleration{{Key: "k", Value: "v", Effect: "NoRun"}} },
		cause: `tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
	{name: "toleration empty key with Equal", mutate: func(s *corev1.PodSpec) { s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpEqual}} },
		cause: `tolerations[0].operator: Invalid value: "Equal": operator must be Exists when ` + "`key` is empty, which means \"match all values and all keys\""},
	{name: "toleration seconds without NoExecute", mutate: func(s *corev1.PodSpec) {
		s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr[int64](5)}}
	}, cause: `tolerations[0].effect: Invalid value: "NoSchedule": effect must be 'NoExecute' when ` + "`tolerationSeconds` is set"},
	{name: "node affinity without terms", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
	}, cause: `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term`},
	{name: "node affinity In without values", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn}}}}}}}
	}, cause: `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when ` + "`operator` is 'In' or 'NotIn'"},
	{name: "pod anti-affinity weight 0", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone"}}}}}
	}, cause: `affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100`},
	{name: "pod affinity without topologyKey", mutate: func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{}}}}
	}, cause: `affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty`, more: 2},
	{name: "negative terminationGracePeriodSeconds is allowed", mutate: func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr[int64](-1) }},
	{name: "activeDeadlineSeconds 0", mutate: func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr[int64](0) },
		cause: `activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive`, podOnly: true},
	{name: "topology spread maxSkew 0", mutate: func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	}, cause: `topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero`},
	{name: "host port with hostNetwork", mutate: func(s *corev1.PodSpec) {
		s.HostNetwork = true
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	}, cause: "containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"},
	{name: "host port taken twice", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 8080}}
	}, cause: `containers[0].ports[1].hostPort: Duplicate value: "TCP//8080"`},
	{name: "image with whitespace", mutate: func(s *corev1.PodSpec) { s.Containers[0].Image = " nginx" },
		cause: `containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace`, podOnly: true},

	// init containers and sidecars
	{name: "init container probe without restartPolicy Always", mutate: func(s *corev1.PodSpec) {
		p := tcpProbe(80)
		s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", ReadinessProbe: &p}}
	}, cause: `initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always`},
	{name: "sidecar may have probes", mutate: func(s *corev1.PodSpec) {
		p := tcpProbe(80)
		s.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), ReadinessProbe: &p}}
	}},
	{name: "sidecar liveness successThreshold 2", mutate: func(s *corev1.PodSpec) {
		p := tcpProbe(80)
		p.SuccessThreshold = 2
		s.InitContainers = []corev1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), LivenessProbe: &p}}
	}, cause: `initContainers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`},
	{name: "init container restartPolicy Never", mutate: func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "init", Image: "busybox", RestartPolicy: ptr(corev1.ContainerRestartPolicy("Never"))}}
	}, cause: `initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"`},
	{name: "regular container restartPolicy", mutate: func(s *corev1.PodSpec) { s.Containers[0].RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways) },
		cause: `containers[0].restartPolicy: Forbidden: may not be set for non-init containers`},
	{name: "init container named as a container", mutate: func(s *corev1.PodSpec) {
		s.InitContainers = []corev1.Container{{Name: "c", Image: "busybox"}}
	}, cause: `initContainers[0].name: Duplicate value: "c"`},
}

// TestPodSpecValidation: each rule, on a pod and on the pod template of every kind that
// validates one, with the template's path in front.
func TestPodSpecValidation(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	kinds := []struct {
		group, resource, prefix string
		spec                    func(runtime.Object) *corev1.PodSpec
	}{
		{"", "pods", "spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*corev1.Pod).Spec }},
		{"", "podtemplates", "template.spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*corev1.PodTemplate).Template.Spec }},
		{"", "replicationcontrollers", "spec.template.spec", func(o runtime.Object) *corev1.PodSpec {
			return &o.(*corev1.ReplicationController).Spec.Template.Spec
		}},
		{"apps", "replicasets", "spec.template.spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*appsv1.ReplicaSet).Spec.Template.Spec }},
		{"apps", "deployments", "spec.template.spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*appsv1.Deployment).Spec.Template.Spec }},
		{"apps", "daemonsets", "spec.template.spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*appsv1.DaemonSet).Spec.Template.Spec }},
		{"batch", "jobs", "spec.template.spec", func(o runtime.Object) *corev1.PodSpec { return &o.(*batchv1.Job).Spec.Template.Spec }},
		{"batch", "cronjobs", "spec.jobTemplate.spec.template.spec", func(o runtime.Object) *corev1.PodSpec {
			return &o.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Spec
		}},
	}
	for _, k := range kinds {
		for i, tc := range podSpecCases {
			if tc.podOnly && k.resource != "pods" {
				continue
			}
			t.Run(k.resource+"/"+tc.name, func(t *testing.T) {
				obj := sample(k.resource, fmt.Sprintf("v%d", i))
				if k.resource == "deployments" {
					obj = deployment(fmt.Sprintf("v%d", i))
				}
				tc.mutate(k.spec(obj))
				_, err := store(r, k.group, k.resource).Create(ctx, "default", "", obj, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if tc.cause == "" {
					if err != nil {
						t.Fatalf("want accepted, got %v", err)
					}
					return
				}
				if !apierrors.IsInvalid(err) {
					t.Fatalf("want 422 Invalid, got %v", err)
				}
				msgs := causeMessages(err)
				// <obj> stands for an object's value, printed as upstream's field errors print it
				want := k.prefix + "." + tc.cause
				head, tail, _ := strings.Cut(want, "<obj>")
				first, _, _ := strings.Cut(msgs, "\n")
				if strings.Count(msgs, "\n") != tc.more || !strings.HasPrefix(first, head) || !strings.HasSuffix(first, tail) || (tail == "" && first != head) {
					t.Fatalf("want the one cause\n%s\ngot\n%s", want, msgs)
				}
			})
		}
	}
}

// TestPodSpecValidationAcceptsUpstreamPods: what upstream accepts passes, among it the
// defaults it fills in (a host-network pod's host ports) and a StatefulSet whose containers
// mount its claim templates (upstream does not validate a StatefulSet's pod spec).
func TestPodSpecValidationAcceptsUpstreamPods(t *testing.T) {
	r := newRegistry(t)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "full"}, Spec: corev1.PodSpec{
		HostNetwork:        true,
		ServiceAccountName: "default",
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("1Gi"))}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}}},
			{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log", Type: ptr(corev1.HostPathDirectory)}}},
		},
		InitContainers: []corev1.Container{{Name: "proxy", Image: "envoy:1.30", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("admin")}}}}},
		Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
			Ports:         []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Env:           []corev1.EnvVar{{Name: "my.env-name", Value: "x"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
			Resources:     corev1.ResourceRequirements{Requests: list("cpu", "100m", "example.com/gpu", "1"), Limits: list("cpu", "1", "memory", "1Gi", "example.com/gpu", "1")},
			VolumeMounts:  []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "app"}, {Name: "token", MountPath: "/var/run/secrets/tokens", ReadOnly: true}, {Name: "host", MountPath: "/host", ReadOnly: true}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}},
			Lifecycle:     &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}},
			SecurityContext: &corev1.SecurityContext{RunAsUser: ptr[int64](1000), AllowPrivilegeEscalation: ptr(false),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("profiles/app.json")}},
		}},
		DNSPolicy: corev1.DNSNone,
		DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10"}, Searches: []string{"_srv.example.com", "."}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}}},
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr[int64](300)}},
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}},
		Hostname: "web-0", Subdomain: "web",
	}}
	got, err := store(r, "", "pods").Create(ctx, "default", "", pod, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("upstream accepts this pod: %v", err)
	}
	if hp := got.(*corev1.Pod).Spec.Containers[0].Ports[0].HostPort; hp != 8080 {
		t.Errorf("host port defaulted to %d, want the container port 8080", hp)
	}

	sts := sample("statefulsets", "db").(*appsv1.StatefulSet)
	sts.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "pgdata"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: list("storage", "1Gi")}}}}
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "pgdata", MountPath: "/var/lib/postgresql"}}
	if _, err := store(r, "apps", "statefulsets").Create(ctx, "default", "", sts, &metav1.CreateOptions{}); err != nil {
		t.Fatalf("upstream accepts this StatefulSet: %v", err)
	}

	// an ephemeral container may be added through its subresource only
	eph := sample("pods", "eph").(*corev1.Pod)
	eph.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	_, err = store(r, "", "pods").Create(ctx, "default", "", eph, &metav1.CreateOptions{})
	if msgs := causeMessages(err); msgs != "spec.ephemeralContainers: Forbidden: cannot be set on create" {
		t.Fatalf("ephemeral container on create: %v", err)
	}
}
