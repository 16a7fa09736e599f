package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
		Containers:     []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// TestAdmissionPlugins runs the built-in plugins on by default against one server, through
// client-go: ServiceAccount, Priority, DefaultStorageClass, LimitRanger.
func TestAdmissionPlugins(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	ctx := context.Background()
	const ns = "adm"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventuallyOK(t, "default service account", func() error {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

	t.Run("NamespaceLifecycle", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyOK(t, "default service account", func() error {
			_, err := cs.CoreV1().ServiceAccounts("doomed").Get(ctx, "default", metav1.GetOptions{})
			return err
		})
		// A pod on a node waits for its kubelet to confirm its deletion, which keeps the
		// namespace terminating until the test deletes it at once.
		p := testPod("held")
		p.Spec.NodeName = "ghost"
		if _, err := cs.CoreV1().Pods("doomed").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventuallyOK(t, "terminating namespace refuses content", func() error {
			i++
			name := fmt.Sprintf("late%d", i)
			_, err := cs.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err == nil {
				return fmt.Errorf("created")
			}
			want := `configmaps "` + name + `" is forbidden: unable to create new content in namespace doomed because it is being terminated`
			if !apierrors.IsForbidden(err) || err.Error() != want {
				t.Fatalf("create in a terminating namespace: %v, want %q", err, want)
			}
			return nil
		})
		if err := cs.CoreV1().Pods("doomed").Delete(ctx, "held", metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		_, err := cs.CoreV1().ConfigMaps("nowhere").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nowhere" not found` {
			t.Fatalf("create in a missing namespace: %v", err)
		}
		err = cs.CoreV1().Namespaces().Delete(ctx, "kube-system", metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != `namespaces "kube-system" is forbidden: this namespace may not be deleted` {
			t.Fatalf("delete kube-system: %v", err)
		}
	})

	t.Run("ServiceAccount", func(t *testing.T) {
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("sa1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.ServiceAccountName != "default" {
			t.Fatalf("serviceAccountName %q", pod.Spec.ServiceAccountName)
		}
		if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") || len(pod.Spec.Volumes[0].Name) != len("kube-api-access-")+5 {
			t.Fatalf("volumes %+v, want one kube-api-access-xxxxx", pod.Spec.Volumes)
		}
		v := pod.Spec.Volumes[0].Projected
		if v == nil || len(v.Sources) != 3 || v.Sources[0].ServiceAccountToken == nil || *v.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
			v.Sources[0].ServiceAccountToken.Path != "token" || v.Sources[1].ConfigMap == nil || v.Sources[1].ConfigMap.Name != "kube-root-ca.crt" ||
			v.Sources[2].DownwardAPI == nil || v.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" || *v.DefaultMode != 0o644 {
			t.Fatalf("projection %+v is not upstream's", v)
		}
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].Name != pod.Spec.Volumes[0].Name {
				t.Fatalf("container %s mounts %+v", c.Name, c.VolumeMounts)
			}
		}
		// automountServiceAccountToken: false on the account, or on the pod.
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: ptr.To(false)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := testPod("sa2")
		p.Spec.ServiceAccountName = "quiet"
		if pod, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || len(pod.Spec.Volumes) != 0 {
			t.Fatalf("account automount false: %v, volumes %+v", err, pod.Spec.Volumes)
		}
		p = testPod("sa3")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		if pod, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil || len(pod.Spec.Volumes) != 0 {
			t.Fatalf("pod automount false: %v, volumes %+v", err, pod.Spec.Volumes)
		}
		p = testPod("sa4")
		p.Spec.ServiceAccountName = "nope"
		_, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		want := `pods "sa4" is forbidden: error looking up service account adm/nope: serviceaccounts "nope" not found`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("missing account: %v, want %q", err, want)
		}
	})

	t.Run("LimitRanger", func(t *testing.T) {
		lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
			Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}}
		if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventuallyOK(t, "defaults from the LimitRange", func() error {
			i++
			pod, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("lr%d", i)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			c := pod.Spec.Containers[0].Resources
			if c.Limits.Cpu().String() != "500m" || c.Requests.Cpu().String() != "100m" {
				return fmt.Errorf("resources %+v", c)
			}
			if got := pod.Annotations["kubernetes.io/limit-ranger"]; got != "LimitRanger plugin set: cpu request for container init; cpu limit for container init; cpu request for container c; cpu limit for container c" {
				return fmt.Errorf("annotation %q", got)
			}
			return nil
		})
		p := testPod("big")
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		want := `pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("over max: %v, want %q", err, want)
		}
		if err := cs.CoreV1().LimitRanges(ns).Delete(ctx, "limits", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("DefaultStorageClass", func(t *testing.T) {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}, Provisioner: "example.com/fast"}
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventuallyOK(t, "default class on a claim", func() error {
			i++
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d", i)}, Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			out, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			if out.Spec.StorageClassName == nil || *out.Spec.StorageClassName != "fast" {
				return fmt.Errorf("storageClassName %v", out.Spec.StorageClassName)
			}
			return nil
		})
		// An explicit empty class stays empty (no dynamic provisioning), as upstream.
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "static"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(""),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if out, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil || *out.Spec.StorageClassName != "" {
			t.Fatalf("explicit empty class: %v %v", err, out)
		}
	})

	t.Run("PodSecurity", func(t *testing.T) {
		warn := &warnings{}
		wcfg := servertest.RestConfig(t, s)
		wcfg.WarningHandler = warn
		wcs := kubernetes.NewForConfigOrDie(wcfg)
		for name, labels := range map[string]map[string]string{
			"restricted": {"pod-security.kubernetes.io/enforce": "restricted"},
			"warned":     {"pod-security.kubernetes.io/warn": "baseline"},
		} {
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventuallyOK(t, "default service account", func() error {
				_, err := cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
				return err
			})
		}
		i := 0
		eventuallyOK(t, "restricted enforced", func() error {
			i++
			_, err := cs.CoreV1().Pods("restricted").Create(ctx, testPod(fmt.Sprintf("ps%d", i)), metav1.CreateOptions{})
			if err == nil {
				return fmt.Errorf("admitted")
			}
			want := fmt.Sprintf(`pods "ps%d" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (containers "init", "c" must set securityContext.allowPrivilegeEscalation=false)`, i)
			if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("err %v, want 403 starting %q", err, want)
			}
			return nil
		})
		ok := testPod("compliant")
		ok.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		for _, cs := range []*[]corev1.Container{&ok.Spec.InitContainers, &ok.Spec.Containers} {
			for i := range *cs {
				(*cs)[i].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
			}
		}
		if _, err := cs.CoreV1().Pods("restricted").Create(ctx, ok, metav1.CreateOptions{}); err != nil {
			t.Fatalf("compliant pod: %v", err)
		}
		eventuallyOK(t, "baseline warned", func() error {
			i++
			p := testPod(fmt.Sprintf("ps%d", i))
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			if _, err := wcs.CoreV1().Pods("warned").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatalf("warn mode refused: %v", err)
			}
			if !warn.has(`would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`) {
				return fmt.Errorf("warnings %v", warn.msgs)
			}
			return nil
		})
		// Workloads' pod templates: warn and audit levels, never enforce.
		dep := func(name string) *appsv1.Deployment {
			p := testPod("")
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: p.Spec}}}
		}
		if _, err := wcs.AppsV1().Deployments("restricted").Create(ctx, dep("priv"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("a deployment is never refused by PodSecurity: %v", err)
		}
		warn.mu.Lock()
		warn.msgs = nil
		warn.mu.Unlock()
		if _, err := wcs.AppsV1().Deployments("warned").Create(ctx, dep("priv"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if w := `would violate PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)`; !warn.has(w) {
			t.Fatalf("deployment warnings %v, want %q", warn.msgs, w)
		}
		// Tightening a namespace's enforce level warns about its existing pods.
		warned, err := cs.CoreV1().Namespaces().Get(ctx, "warned", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		warned.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
		if _, err := wcs.CoreV1().Namespaces().Update(ctx, warned, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if w := `existing pods in namespace "warned" violate the new PodSecurity enforce level "baseline:latest"`; !warn.has(w) {
			t.Fatalf("namespace update warnings %v, want %q", warn.msgs, w)
		}
		found := false
		warn.mu.Lock()
		for _, m := range warn.msgs {
			found = found || (strings.HasPrefix(m, "ps") && strings.HasSuffix(m, ": privileged"))
		}
		warn.mu.Unlock()
		if !found {
			t.Fatalf("namespace update warnings %v, want one naming a privileged pod", warn.msgs)
		}
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "badlabel", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "strictest"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod-security.kubernetes.io/enforce") {
			t.Fatalf("bad label: %v, want 422", err)
		}
	})

	t.Run("Priority", func(t *testing.T) {
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		i := 0
		eventuallyOK(t, "priority from the class", func() error {
			i++
			p := testPod(fmt.Sprintf("pr%d", i))
			p.Spec.PriorityClassName = "high"
			out, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			if out.Spec.Priority == nil || *out.Spec.Priority != 1000 {
				return fmt.Errorf("priority %v", out.Spec.Priority)
			}
			return nil
		})
		p := testPod("pr-bad")
		p.Spec.PriorityClassName = "nope"
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		want := `pods "pr-bad" is forbidden: no PriorityClass with name nope was found`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("unknown class: %v, want %q", err, want)
		}
		p = testPod("pr-set")
		p.Spec.PriorityClassName = "high"
		p.Spec.Priority = ptr.To(int32(5))
		_, err = cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		want = `pods "pr-set" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("priority set: %v, want %q", err, want)
		}
		out, err := cs.CoreV1().Pods(ns).Create(ctx, testPod("pr-none"), metav1.CreateOptions{})
		if err != nil || out.Spec.Priority == nil || *out.Spec.Priority != 0 || out.Spec.PriorityClassName != "" {
			t.Fatalf("no class, no default: %v %+v", err, out.Spec.Priority)
		}
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10, GlobalDefault: true}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyOK(t, "global default class", func() error {
			i++
			out, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("pr%d", i)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				return err
			}
			if out.Spec.PriorityClassName != "low" || out.Spec.Priority == nil || *out.Spec.Priority != 10 {
				return fmt.Errorf("class %q priority %v", out.Spec.PriorityClassName, out.Spec.Priority)
			}
			return nil
		})
		_, err = cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 20, GlobalDefault: true}, metav1.CreateOptions{})
		want = `priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass low is already marked as default. Only one default can exist`
		if !apierrors.IsForbidden(err) || err.Error() != want {
			t.Fatalf("second default: %v, want %q", err, want)
		}
	})
}
