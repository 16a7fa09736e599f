package diffupstream

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An Event a server recorded itself leaves the view; the corpus's Events, and any other
// item, stay, even when named like a recorded one; the view given is not changed.
func TestCorpusItems(t *testing.T) {
	corpus := &unstructured.Unstructured{}
	corpus.SetName("made.18ecabeb3d31b187")
	view := map[string]any{"code": 200, "items": toAny([]string{"golden/event-minimal", "golden/made.18ecabeb3d31b187", "golden/svc-minimal.18ecabeb3d31b187", "golden/x.123"})}
	got := corpusItems(view, []*unstructured.Unstructured{corpus})
	if want := "[golden/event-minimal golden/made.18ecabeb3d31b187 golden/x.123]"; fmt.Sprint(got["items"]) != want {
		t.Fatalf("items %v, want %s", got["items"], want)
	}
	if n := len(view["items"].([]any)); n != 4 {
		t.Fatalf("the view given now has %d items", n)
	}
}
