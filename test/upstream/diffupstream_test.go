package upstream_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/test/upstream/diffupstream"
)

// TestDiffUpstream runs the differential harness against kube-apiserver at the release the
// suite's peers are at (upstream.KubernetesVersion, the release hacp serves) and fails for
// every difference test/upstream/diff-allow.yaml does not allow, and for allow-list entries
// of that release that no longer match anything. The report goes to
// _output/diff-upstream/<release> of the repository.
func TestDiffUpstream(t *testing.T) {
	bin := upstream.BinaryAt(t, "kube-apiserver", upstream.KubernetesVersion)
	out := filepath.Join("..", "..", "_output", "diff-upstream", upstream.KubernetesVersion)
	r, err := diffupstream.Run(context.Background(), diffupstream.Options{KubeAPIServer: bin, Version: upstream.KubernetesVersion,
		TestData: "testdata", AllowFile: "diff-allow.yaml", OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("took %s\n%s", r.Took, r.CountsTable())
	if len(r.Checks) < 2000 {
		t.Errorf("only %d checks: the corpus compared too little", len(r.Checks))
	}
	for _, c := range r.Failed() {
		msg := strings.Join(c.Diffs, "\n  ")
		if c.KubeMessage != c.HacpMessage {
			msg += "\n  messages: kube-apiserver " + c.KubeMessage + "\n            hacp " + c.HacpMessage
		}
		t.Errorf("%s:\n  %s", c.ID, msg)
	}
	for _, id := range r.UnusedAllow {
		t.Errorf("allow-list entry %s matches no difference against %s any more: remove it (or scope it to other versions)", id, upstream.KubernetesVersion)
	}
}
