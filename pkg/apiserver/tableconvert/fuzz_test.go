package tableconvert

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzToTable feeds arbitrary JSON, read as an object of any kind, through
// the converter: it may fail, never panic.
func FuzzToTable(f *testing.F) {
	seeds := []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"initContainers":[{"name":"i","restartPolicy":"Always"}]},"status":{"initContainerStatuses":[{"name":"i","started":true,"ready":true},{"name":"x","state":{"terminated":{"exitCode":1,"signal":9}}}],"containerStatuses":[{"name":"a","state":{"terminated":{"reason":"Completed"}}},{"name":"b","ready":true,"state":{"running":{}}}]}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Bogus"}]}}}`,
		`{"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer"},"status":{"loadBalancer":{"ingress":[{"hostname":"lb"}]}}}`,
		`{"apiVersion":"v1","kind":"Endpoints","subsets":[{"addresses":[{"ip":"::1"}]}]}`,
		`{"apiVersion":"v1","kind":"Event","series":{"count":3}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"labels":{"node-role.kubernetes.io/":""}}}`,
		`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"}}]}`,
		`{"apiVersion":"v1","kind":"List","items":[{"kind":"Secret"}]}`,
		`{"kind":"Pod","status":"weird"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return
		}
		var obj = any(u)
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return
			}
			obj = l
		}
		for _, policy := range []metav1.IncludeObjectPolicy{metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject} {
			switch o := obj.(type) {
			case *unstructured.Unstructured:
				ToTable(o, metav1.TableOptions{IncludeObject: policy})
			case *unstructured.UnstructuredList:
				ToTable(o, metav1.TableOptions{IncludeObject: policy})
			}
		}
	})
}
