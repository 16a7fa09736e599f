package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInterpretStorageErrors: the storage errors #12 added reach clients as upstream's Status.
func TestInterpretStorageErrors(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name    string
		err     error
		code    int32
		reason  metav1.StatusReason
		cont    string
		message string
	}{
		{"unknown outcome", &storage.Error{Code: storage.ErrCodeUnknownOutcome, Msg: "the write may have succeeded: x"},
			http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "", "may have succeeded"},
		{"expired continue", &storage.Error{Code: storage.ErrCodeExpired, Msg: "The provided continue parameter is too old", Continue: "tok"},
			http.StatusGone, metav1.StatusReasonExpired, "tok", "too old"},
		{"bad token", &storage.Error{Code: storage.ErrCodeInvalidRV, Msg: "continue key is not valid"},
			http.StatusBadRequest, metav1.StatusReasonBadRequest, "", "not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var se *apierrors.StatusError
			if !errors.As(Interpret(tt.err, gr, "a"), &se) {
				t.Fatalf("not a Status: %v", Interpret(tt.err, gr, "a"))
			}
			st := se.ErrStatus
			if st.Code != tt.code || st.Reason != tt.reason || st.Continue != tt.cont || !strings.Contains(st.Message, tt.message) {
				t.Fatalf("got %d %s continue=%q %q", st.Code, st.Reason, st.Continue, st.Message)
			}
		})
	}
}
