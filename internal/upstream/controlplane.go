package upstream

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerManagerArgs is kube-controller-manager's command line as kubeadm's static pod
// runs it on a master (leader election on, ServiceAccount credentials per controller),
// against the apiserver in kubeconfig, with the cluster's ServiceAccount signing key and
// CA; extra is appended.
func ControllerManagerArgs(kubeconfig, saKey, caCert, caKey string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=10257",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + saKey,
		"--root-ca-file=" + caCert,
		"--cluster-signing-cert-file=" + caCert, "--cluster-signing-key-file=" + caKey,
		"--leader-elect=true", "--v=1",
	}, extra...)
}

// SchedulerArgs is kube-scheduler's command line as kubeadm's static pod runs it, against
// the apiserver in kubeconfig.
func SchedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig, "--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=10259", "--leader-elect=true", "--v=1",
	}
}

// Deployment is a Deployment of n nginx pods labelled app=name, for kwok's nodes to run.
func Deployment(name string, n int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}
