package upstream

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStagingReplace: the staging modules are read from k8s.io/kubernetes's replace block.
func TestStagingReplace(t *testing.T) {
	gomod := "module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n" +
		"\tk8s.io/cri-client => ./staging/src/k8s.io/cri-client\n\tgithub.com/x/y => github.com/x/z v1.0.0\n)\n"
	var got []string
	for _, m := range stagingReplace.FindAllStringSubmatch(gomod, -1) {
		got = append(got, m[1])
	}
	if want := []string{"k8s.io/api", "k8s.io/cri-client"}; !slices.Equal(got, want) {
		t.Fatalf("staging modules %v, want %v", got, want)
	}
}

// TestStagingVersion: a release's staging modules are v0.MINOR.PATCH; anything else is refused.
func TestStagingVersion(t *testing.T) {
	for in, want := range map[string]string{"v1.37.2": "v0.37.2", "v1.33.13": "v0.33.13", "1.37.2": "", "v1.37": "", "v2.0.1": "", "v1.37.2-rc.0": ""} {
		got, ok := stagingVersion(in)
		if got != want || ok != (want != "") {
			t.Errorf("stagingVersion(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, err := BuildAt(context.Background(), t.TempDir(), Kubectl, "1.37"); err == nil || !strings.Contains(err.Error(), "want v1.MINOR.PATCH") {
		t.Errorf("BuildAt with a bad version: %v", err)
	}
	if _, err := BuildAt(context.Background(), t.TempDir(), Kwok, LatestKubernetesVersion); err == nil || !strings.Contains(err.Error(), "unknown program") {
		t.Errorf("BuildAt of kwok: %v", err)
	}
}

func TestBuildUnknownProgram(t *testing.T) {
	if _, err := Build(context.Background(), t.TempDir(), "kubelet-nope"); err == nil || !strings.Contains(err.Error(), "unknown program") {
		t.Fatalf("err = %v", err)
	}
}

// TestBinary: each upstream program is built (or found in the cache) and runs.
func TestBinary(t *testing.T) {
	for _, name := range append(slices.Clone(Kubernetes), Kwok, SampleAPIServer, Promtool) {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(Binary(t, name), "--help").CombinedOutput()
			if err != nil || !strings.Contains(strings.ToLower(string(out)), "usage") {
				t.Fatalf("%s --help: %v\n%.500s", name, err, out)
			}
		})
	}
}

// TestKubectlVersions: kubectl is built at each release the kubectl tests run with, and says
// which release it is (the build stamps it, as upstream's release build does).
func TestKubectlVersions(t *testing.T) {
	for _, v := range KubectlVersions {
		t.Run(v, func(t *testing.T) {
			out, err := exec.Command(BinaryAt(t, Kubectl, v), "version", "--client", "-o", "json").CombinedOutput()
			if err != nil || !strings.Contains(string(out), `"gitVersion": "`+v+`"`) || !strings.Contains(string(out), `"minor": "`+strings.Split(v, ".")[1]+`"`) {
				t.Fatalf("kubectl %s version --client: %v\n%s", v, err, out)
			}
		})
	}
}

// TestDropUnstamped: a cached kubectl that reports v0.0.0-master is removed, so that BuildAt
// builds it again stamped; a stamped one stays.
func TestDropUnstamped(t *testing.T) {
	for gitVersion, kept := range map[string]bool{"v0.0.0-master+$Format:%H$": false, "v1.37.2": true} {
		bin := filepath.Join(t.TempDir(), Kubectl)
		script := "#!/bin/sh\necho '{\"clientVersion\": {\"gitVersion\": \"" + gitVersion + "\"}}'\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		dropUnstamped(bin)
		if _, err := os.Stat(bin); (err == nil) != kept {
			t.Errorf("kubectl reporting %s: still there %v, want %v", gitVersion, err == nil, kept)
		}
	}
}
