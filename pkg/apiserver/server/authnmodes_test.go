package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAnonymousOffWithAlwaysAllow: AlwaysAllow anywhere in --authorization-mode turns
// anonymous authentication off, as kube-apiserver does: a request without credentials is
// 401, not allowed by AlwaysAllow. Without AlwaysAllow it is system:anonymous, whom RBAC
// refuses.
func TestAnonymousOffWithAlwaysAllow(t *testing.T) {
	for _, tc := range []struct {
		modes string
		code  int
	}{
		{"AlwaysAllow", http.StatusUnauthorized},
		{"Node,RBAC,AlwaysAllow", http.StatusUnauthorized},
		{"RBAC, AlwaysAllow", http.StatusUnauthorized},
		{"AlwaysAllow,RBAC", http.StatusUnauthorized},
		{"Node,RBAC", http.StatusForbidden},
	} {
		t.Run(tc.modes, func(t *testing.T) {
			s := servertest.New(t, func(c *server.Config) { c.AuthorizationMode = tc.modes })
			anon := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(servertest.RestConfig(t, s)))
			_, err := anon.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
			var status apierrors.APIStatus
			if !errors.As(err, &status) || int(status.Status().Code) != tc.code {
				t.Fatalf("anonymous list of namespaces: %v, want %d", err, tc.code)
			}
		})
	}
}
