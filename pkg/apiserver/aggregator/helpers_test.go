package aggregator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/internal/testenv"
)

// kubectl runs the tests' kubectl (testenv.Kubectl) against one server.
type kubectl struct {
	t          *testing.T
	bin        string
	kubeconfig string
	dir        string
}

func newKubectl(t *testing.T, kubeconfig string) *kubectl {
	t.Helper()
	return &kubectl{t: t, bin: testenv.Kubectl(t), kubeconfig: kubeconfig, dir: t.TempDir()}
}

func (k *kubectl) run(stdin string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.kubeconfig, "HOME="+k.dir, "KUBECACHEDIR="+filepath.Join(k.dir, "cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// ok runs kubectl and fails the test unless it succeeds; it returns stdout.
func (k *kubectl) ok(stdin string, args ...string) string {
	k.t.Helper()
	out, errOut, err := k.run(stdin, args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// eventually polls cond until it holds, failing the test after timeout with the last
// message cond returned.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
