package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

const workloadsYAML = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: fe, namespace: wl}
spec:
  replicas: 1
  selector: {matchLabels: {app: fe}}
  template:
    metadata: {labels: {app: fe}}
    spec: {containers: [{name: c, image: nginx:1.27}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: wl}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: postgres:17}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: wl}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: busybox:1.36}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: wl}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: db}}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: old, namespace: wl}
spec:
  template:
    metadata: {labels: {app: old}}
    spec: {containers: [{name: c, image: nginx:1.27}]}
`

// TestKubectlWorkloads drives the workload kinds with the real kubectl: create job and
// cronjob, apply of every workload kind, autoscale, scale through /scale, get all and the
// printers' columns, and upstream's validation errors.
func TestKubectlWorkloads(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())
	k.ok("create", "namespace", "wl")

	t.Run("discovery", func(t *testing.T) {
		out := k.ok("api-resources")
		for _, line := range []string{
			"replicasets  rs  apps/v1  true  ReplicaSet", "statefulsets  sts  apps/v1  true  StatefulSet",
			"daemonsets  ds  apps/v1  true  DaemonSet", "controllerrevisions  apps/v1  true  ControllerRevision",
			"jobs  batch/v1  true  Job", "cronjobs  cj  batch/v1  true  CronJob",
			"horizontalpodautoscalers  hpa  autoscaling/v2  true  HorizontalPodAutoscaler",
			"poddisruptionbudgets  pdb  policy/v1  true  PodDisruptionBudget",
			"replicationcontrollers  rc  v1  true  ReplicationController", "podtemplates  v1  true  PodTemplate",
		} {
			if !containsFields(out, line) {
				t.Errorf("api-resources has no line %q:\n%s", line, out)
			}
		}
		contains(t, k.ok("api-versions"), "autoscaling/v1", "autoscaling/v2", "batch/v1", "policy/v1")
		var group struct {
			PreferredVersion struct{ Version string } `json:"preferredVersion"`
		}
		if err := json.Unmarshal([]byte(k.ok("get", "--raw", "/apis/autoscaling")), &group); err != nil || group.PreferredVersion.Version != "v2" {
			t.Fatalf("autoscaling preferred version %q (%v)", group.PreferredVersion.Version, err)
		}
	})

	t.Run("create job and cronjob", func(t *testing.T) {
		contains(t, k.ok("-n", "wl", "create", "job", "pi", "--image=busybox:1.36", "--", "echo", "hi"), "job.batch/pi created")
		out := k.ok("-n", "wl", "get", "job", "pi", "-o", `jsonpath={.spec.backoffLimit} {.spec.completionMode} {.spec.template.metadata.labels.batch\.kubernetes\.io/job-name} {.metadata.labels.job-name}`)
		if out != "6 NonIndexed pi pi" {
			t.Fatalf("job defaults: %q", out)
		}
		uid := k.ok("-n", "wl", "get", "job", "pi", "-o", "jsonpath={.metadata.uid}")
		if sel := k.ok("-n", "wl", "get", "job", "pi", "-o", `jsonpath={.spec.selector.matchLabels.batch\.kubernetes\.io/controller-uid}`); sel != uid || uid == "" {
			t.Fatalf("job selector %q, uid %q", sel, uid)
		}
		contains(t, k.ok("-n", "wl", "get", "jobs"), "NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "pi", "Running", "0/1")

		contains(t, k.ok("-n", "wl", "create", "cronjob", "nightly", "--image=busybox:1.36", "--schedule=0 0 * * *"), "cronjob.batch/nightly created")
		contains(t, k.ok("-n", "wl", "get", "cj"), "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "nightly", "0 0 * * *", "False")
		k.fails(`spec.schedule: Invalid value: "every day"`, "-n", "wl", "create", "cronjob", "bad", "--image=busybox:1.36", "--schedule=every day")
	})

	t.Run("apply workloads", func(t *testing.T) {
		f := k.file("workloads.yaml", workloadsYAML)
		contains(t, k.ok("apply", "-f", f), "replicaset.apps/fe created", "statefulset.apps/db created", "daemonset.apps/agent created",
			"poddisruptionbudget.policy/db created", "replicationcontroller/old created")
		contains(t, k.ok("apply", "-f", f), "replicaset.apps/fe unchanged", "statefulset.apps/db unchanged")
		contains(t, k.ok("-n", "wl", "get", "rs", "-o", "wide"), "NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR", "fe", "app=fe")
		contains(t, k.ok("-n", "wl", "get", "sts"), "NAME", "READY", "AGE", "db", "0/1")
		contains(t, k.ok("-n", "wl", "get", "ds"), "DESIRED", "CURRENT", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "agent")
		contains(t, k.ok("-n", "wl", "get", "pdb"), "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "db", "N/A")
		contains(t, k.ok("-n", "wl", "get", "rc"), "DESIRED", "CURRENT", "READY", "old")
		out := k.ok("-n", "wl", "get", "sts", "db", "-o", "jsonpath={.spec.podManagementPolicy} {.spec.updateStrategy.rollingUpdate.partition} {.spec.template.spec.schedulerName}")
		if out != "OrderedReady 0 default-scheduler" {
			t.Fatalf("statefulset defaults: %q", out)
		}
		if out := k.ok("-n", "wl", "get", "rc", "old", "-o", "jsonpath={.spec.replicas} {.spec.selector.app}"); out != "1 old" {
			t.Fatalf("replicationcontroller defaults: %q", out)
		}
		bad := k.file("bad.yaml", strings.Replace(workloadsYAML[:strings.Index(workloadsYAML, "---")], "labels: {app: fe}", "labels: {app: other}", 1))
		k.fails("spec.template.metadata.labels: Invalid value", "apply", "-f", bad)
	})

	t.Run("autoscale", func(t *testing.T) {
		k.ok("-n", "wl", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
		contains(t, k.ok("-n", "wl", "autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=60"), "horizontalpodautoscaler.autoscaling/web autoscaled")
		contains(t, k.ok("-n", "wl", "get", "hpa"), "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "Deployment/web", "cpu: <unknown>/60%")
		if out := k.ok("-n", "wl", "get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}"); out != "autoscaling/v1 60" {
			t.Fatalf("hpa at v1: %q\n%s", out, k.ok("get", "--raw", "/apis/autoscaling/v1/namespaces/wl/horizontalpodautoscalers/web"))
		}
		if out := k.ok("-n", "wl", "get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "jsonpath={.spec.metrics[0].resource.target.averageUtilization}"); out != "60" {
			t.Fatalf("hpa at v2: %q", out)
		}
	})

	t.Run("scale", func(t *testing.T) {
		for _, target := range []string{"deployment/web", "rs/fe", "sts/db", "rc/old"} {
			contains(t, k.ok("-n", "wl", "scale", target, "--replicas=3"), "scaled")
			if out := k.ok("-n", "wl", "get", target, "-o", "jsonpath={.spec.replicas}"); out != "3" {
				t.Errorf("%s: spec.replicas %q after kubectl scale --replicas=3", target, out)
			}
		}
		k.fails("spec.replicas: Invalid value: -1", "-n", "wl", "patch", "rs", "fe", "--subresource=scale", "--type=merge", "-p", `{"spec":{"replicas":-1}}`)
	})

	t.Run("get all", func(t *testing.T) {
		out := k.ok("-n", "wl", "get", "all", "-o", "name")
		for _, want := range []string{"deployment.apps/web", "replicaset.apps/fe", "statefulset.apps/db", "daemonset.apps/agent",
			"job.batch/pi", "cronjob.batch/nightly", "horizontalpodautoscaler.autoscaling/web", "replicationcontroller/old"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get all has no %s:\n%s", want, out)
			}
		}
		if strings.Contains(out, "poddisruptionbudget") {
			t.Errorf("poddisruptionbudgets are not in the all category upstream:\n%s", out)
		}
	})
}

// containsFields reports whether some line of out has exactly the given whitespace-separated
// fields in order (kubectl pads its columns).
func containsFields(out, want string) bool {
	w := strings.Join(strings.Fields(want), " ")
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == w {
			return true
		}
	}
	return false
}
