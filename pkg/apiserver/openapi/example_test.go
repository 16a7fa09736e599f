package openapi_test

import (
	"fmt"
	"log"
	"net/http"

	"github.com/hacp/hacp/pkg/apiserver/openapi"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func ExampleNew() {
	verbs := []string{"get", "list", "create", "update", "patch", "delete", "deletecollection", "watch"}
	spec, err := openapi.New([]openapi.Resource{
		{Version: "v1", Kind: "Pod", ListKind: "PodList", Plural: "pods", Namespaced: true, Verbs: verbs,
			Subresources: []string{"status", "binding"}, Object: &corev1.Pod{}, List: &corev1.PodList{}},
		{Group: "apps", Version: "v1", Kind: "Deployment", ListKind: "DeploymentList", Plural: "deployments", Namespaced: true, Verbs: verbs,
			Subresources: []string{"status", "scale"}, Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Serve /openapi/v2, /openapi/v3 and /openapi/v3/{group-version}.
	mux := http.NewServeMux()
	mux.Handle("/openapi/", spec.Handler())

	fmt.Println(spec.V3Paths())
	// Output: [api/v1 apis/apps/v1]
}
