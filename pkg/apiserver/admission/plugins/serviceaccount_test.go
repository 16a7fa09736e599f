package plugins

import (
	"context"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestServiceAccountWaitsForDefault: as upstream's plugin, a pod in a namespace whose
// default account does not exist yet (it is created just after the namespace) waits for it
// through a few lookups; a missing named account is refused at once.
func TestServiceAccountWaitsForDefault(t *testing.T) {
	for _, tc := range []struct {
		name      string
		account   string
		appearsAt int // the lookup that finds the account; 0: never
		wantCalls int
		wantErr   string
	}{
		{"default appears", "", 3, 3, ""},
		{"default never appears", "", 0, defaultAccountAttempts, `error looking up service account ns/default: serviceaccounts "default" not found`},
		{"named account is looked up once", "robot", 0, 1, `error looking up service account ns/robot: serviceaccounts "robot" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			get := func(_ context.Context, ns, name string) (runtime.Object, error) {
				calls++
				if calls == tc.appearsAt {
					return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, nil
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccounts"}, name)
			}
			sa := NewServiceAccount(nil, get)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
				Spec: corev1.PodSpec{ServiceAccountName: tc.account, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
			a := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
				Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Name: "p", Object: pod}
			err := sa.Admit(context.Background(), a)
			if calls != tc.wantCalls {
				t.Fatalf("%d lookups, want %d", calls, tc.wantCalls)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want 403 with %q", err, tc.wantErr)
			}
		})
	}
}
