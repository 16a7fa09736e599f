package main

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// deployment20 is a Deployment of 20 containers (each with a port and an env var), every
// container's image tagged tag: the object of the server-side apply rows.
func deployment20(name, tag string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
	}
	for c := range 20 {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{
			Name:  fmt.Sprintf("c%02d", c),
			Image: "registry.example/app:" + tag,
			Ports: []corev1.ContainerPort{{ContainerPort: int32(8000 + c), Protocol: corev1.ProtocolTCP}},
			Env:   []corev1.EnvVar{{Name: "INDEX", Value: fmt.Sprint(c)}},
		})
	}
	return d
}

// applyRows measures server-side apply of a 20-container Deployment against what a client does
// without it, on the same server in alternating rounds: creating by apply (a PATCH of a missing
// object, managedFields of an Apply) against a POST (managedFields of an Update), and changing
// all 20 images by apply against a merge patch making the same change.
func applyRows(ctx context.Context, cs kubernetes.Interface, n int) []pair {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apply"}}, metav1.CreateOptions{})
	must(err)
	deps := cs.AppsV1().Deployments("apply")
	applyBody := func(name, tag string) []byte {
		data, err := json.Marshal(deployment20(name, tag))
		must(err)
		return data
	}
	var rows []pair
	for _, conc := range []int{1, 32} {
		ops := n / 2
		if conc > 1 {
			ops = n
		}
		prefix := fmt.Sprintf("c%d-", conc)
		rows = append(rows, measureOps("deploy20 create", conc, ops, func(i int) error {
			_, err := deps.Patch(ctx, fmt.Sprintf("%sa%05d", prefix, i), types.ApplyPatchType, applyBody(fmt.Sprintf("%sa%05d", prefix, i), "1"), metav1.PatchOptions{FieldManager: "bench"})
			return err
		}, func(i int) error {
			_, err := deps.Create(ctx, deployment20(fmt.Sprintf("%sm%05d", prefix, i), "1"), metav1.CreateOptions{FieldManager: "bench"})
			return err
		}))
		rows = append(rows, measureOps("deploy20 images", conc, ops, func(i int) error {
			name := fmt.Sprintf("%sa%05d", prefix, i%ops)
			_, err := deps.Patch(ctx, name, types.ApplyPatchType, applyBody(name, fmt.Sprint(i+2)), metav1.PatchOptions{FieldManager: "bench"})
			return err
		}, func(i int) error {
			d := deployment20("", fmt.Sprint(i+2))
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": d.Spec.Template.Spec.Containers}}}})
			if err != nil {
				return err
			}
			_, err = deps.Patch(ctx, fmt.Sprintf("%sm%05d", prefix, i%ops), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "bench"})
			return err
		}))
	}
	return rows
}

func printApplyRows(rows []pair) {
	printSideBySide("server-side apply of a 20-container Deployment vs the same write without apply, same server, same run (create: apply of a missing object vs POST; images: apply vs merge patch; ratio: apply/other):",
		"apply", "other", rows)
}
