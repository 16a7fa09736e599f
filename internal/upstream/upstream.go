// Package upstream builds the upstream Kubernetes programs that compatibility tests run
// against hacp (kube-apiserver, kube-controller-manager, kube-scheduler, kwok), and promtool
// for the monitoring rules' tests, from their Go modules, once per pinned version, into
// _output/upstream/ (never committed).
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/hacp/hacp/internal/testenv"
)

const (
	// KubernetesVersion is the k8s.io/kubernetes module the control-plane programs come from.
	KubernetesVersion = "v1.37.2"
	// KwokVersion is the sigs.k8s.io/kwok module kwok comes from.
	KwokVersion = "v0.8.0"
	// SampleAPIServerVersion is the k8s.io/sample-apiserver module the extension API server
	// of the aggregation tests comes from (the newest v0.33 the module proxy serves).
	SampleAPIServerVersion = "v0.33.5"
)

// Kubernetes names the programs built from k8s.io/kubernetes, in one go build.
var Kubernetes = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Kubectl is the command-line client, built from k8s.io/kubernetes on its own (the kubectl
// tests run several releases of it).
const Kubectl = "kubectl"

// KubectlVersions are the kubectl releases the kubectl tests run with (make test-kubectl):
// the newest patch of each supported Kubernetes minor.
var KubectlVersions = []string{"v1.35.4", "v1.36.3", LatestKubernetesVersion}

// LatestKubernetesVersion is the newest k8s.io/kubernetes release the module proxy serves:
// the default of the differential harness and the release hacp moves to.
const LatestKubernetesVersion = "v1.37.2"

// Kwok is the fake-node program, built by go install from its own module.
const Kwok = "kwok"

// SampleAPIServer is the extension API server (wardle.example.com flunders), built by go
// install from its own module.
const SampleAPIServer = "sample-apiserver"

// Root is the cache directory: _output/upstream under the repository root.
func Root() string {
	if d := os.Getenv("HACP_UPSTREAM_DIR"); d != "" {
		return d
	}
	return filepath.Join(repoRoot(), "_output", "upstream")
}

// repoRoot is the hacp checkout this package was compiled from or, when the binary was built
// with -trimpath, the nearest directory above the working directory holding hacp's go.mod.
func repoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..")
	}
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/hacp/hacp\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// Binary returns the path of the named upstream program (one of Kubernetes, Kwok,
// SampleAPIServer, Promtool or PromQLNames), building
// it on first use. A failed build skips the test on a developer's machine and fails it in CI.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path, err := Build(context.Background(), Root(), name)
	if err != nil {
		testenv.Require(t, false, fmt.Sprintf("upstream %s: %v", name, err))
	}
	return path
}

// Build returns the path of the named program under root, building it if it is missing.
// The Kubernetes programs are built together (one go build shares the compile of their
// common packages). A lock file under root makes parallel test processes wait for one build.
func Build(ctx context.Context, root, name string) (string, error) {
	switch {
	case name == Kwok:
		dir := filepath.Join(root, "kwok-"+KwokVersion)
		return buildLocked(ctx, dir, name, buildKwok)
	case name == SampleAPIServer:
		dir := filepath.Join(root, "sample-apiserver-"+SampleAPIServerVersion)
		return buildLocked(ctx, dir, name, buildSampleAPIServer)
	case name == Promtool || name == PromQLNames:
		dir := filepath.Join(root, "prometheus-"+PrometheusVersion)
		return buildLocked(ctx, dir, name, buildPromtool)
	case contains(Kubernetes, name) || name == Kubectl:
		return BuildAt(ctx, root, name, KubernetesVersion)
	}
	return "", fmt.Errorf("unknown program %q (want one of %s, %s, %s, %s, %s or %s)", name, strings.Join(Kubernetes, ", "), Kubectl, Kwok, SampleAPIServer, Promtool, PromQLNames)
}

// BinaryAt is Binary for a program of k8s.io/kubernetes (Kubernetes or Kubectl) at the
// given release, e.g. "v1.37.2".
func BinaryAt(t testing.TB, name, version string) string {
	t.Helper()
	path, err := BuildAt(context.Background(), Root(), name, version)
	if err != nil {
		testenv.Require(t, false, fmt.Sprintf("upstream %s %s: %v", name, version, err))
	}
	return path
}

// BuildAt is Build for a program of k8s.io/kubernetes at the given release, into
// root/kubernetes-<version>/bin. The Kubernetes programs are built together, kubectl alone.
func BuildAt(ctx context.Context, root, name, version string) (string, error) {
	staging, ok := stagingVersion(version)
	if !ok {
		return "", fmt.Errorf("kubernetes version %q: want v1.MINOR.PATCH", version)
	}
	names := Kubernetes
	switch {
	case name == Kubectl:
		names = []string{Kubectl}
	case !contains(Kubernetes, name):
		return "", fmt.Errorf("unknown program %q of k8s.io/kubernetes (want one of %s or %s)", name, strings.Join(Kubernetes, ", "), Kubectl)
	}
	dir := filepath.Join(root, "kubernetes-"+version)
	if name == Kubectl {
		dropUnstamped(filepath.Join(dir, "bin", Kubectl))
	}
	return buildLocked(ctx, dir, name, func(ctx context.Context, dir string) error {
		return buildKubernetes(ctx, dir, version, staging, names)
	})
}

var minorPatch = regexp.MustCompile(`^\d+\.\d+$`)

// stagingVersion maps a Kubernetes release to its staging modules' version: v1.37.2 to v0.37.2.
func stagingVersion(version string) (string, bool) {
	rest, ok := strings.CutPrefix(version, "v1.")
	if !ok || !minorPatch.MatchString(rest) {
		return "", false
	}
	return "v0." + rest, true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func buildLocked(ctx context.Context, dir, name string, build func(context.Context, string) error) (string, error) {
	bin := filepath.Join(dir, "bin", name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil { // built by whoever held the lock before us
		return bin, nil
	}
	if err := build(ctx, dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("build finished without %s: %w", bin, err)
	}
	return bin, nil
}

// stagingReplace matches the replace lines of k8s.io/kubernetes's go.mod that point a staging
// module at its own tree, e.g. "k8s.io/api => ./staging/src/k8s.io/api".
var stagingReplace = regexp.MustCompile(`(?m)^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/`)

// goDirective is the go line of a go.mod: the scratch module needs the Go version the release does.
var goDirective = regexp.MustCompile(`(?m)^go\s+(\S+)\s*$`)

// buildKubernetes writes a scratch module that requires k8s.io/kubernetes and replaces every
// staging module it lists with the published module of the matching version, then builds the
// programs into dir/bin (through bin.tmp, so an interrupted build leaves no half binary).
func buildKubernetes(ctx context.Context, dir, version, stagingVersion string, names []string) error {
	gomod, err := downloadGoMod(ctx, dir, "k8s.io/kubernetes@"+version)
	if err != nil {
		return err
	}
	var staging []string
	for _, m := range stagingReplace.FindAllStringSubmatch(string(gomod), -1) {
		staging = append(staging, m[1])
	}
	if len(staging) == 0 {
		return errors.New("k8s.io/kubernetes go.mod lists no staging replacements")
	}
	sort.Strings(staging)
	goVersion := "1.24.0"
	if m := goDirective.FindSubmatch(gomod); m != nil {
		goVersion = string(m[1])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module hacp.local/upstream\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n", goVersion, version)
	for _, m := range staging {
		fmt.Fprintf(&b, "\t%s => %s %s\n", m, m, stagingVersion)
	}
	b.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	tmp := filepath.Join(dir, "bin.tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-mod=mod", "-trimpath", "-o", tmp + "/"}
	if len(names) == 1 && names[0] == Kubectl {
		// kubectl parses the release it was built as (`kubectl version` fails on the
		// unstamped v0.0.0-master+$Format:%H$), so it is stamped as upstream's release build
		// does; the control-plane programs are left as they were built before.
		args = append(args, "-ldflags", versionLDFlags(version))
	}
	for _, n := range names {
		args = append(args, "k8s.io/kubernetes/cmd/"+n)
	}
	if err := goCmd(ctx, dir, nil, args...); err != nil {
		return err
	}
	return moveBins(dir, tmp, names)
}

// dropUnstamped removes a kubectl of a cache made before kubectl was stamped with its release
// (it reports v0.0.0-master and its `kubectl version` fails), so that it is built again.
func dropUnstamped(bin string) {
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	if err == nil && bytes.Contains(out, []byte(`"gitVersion": "v0.0.0-master`)) {
		_ = os.Remove(bin)
	}
}

// versionLDFlags sets the release in both packages upstream's hack/lib/version.sh stamps.
func versionLDFlags(version string) string {
	minor := strings.SplitN(strings.TrimPrefix(version, "v1."), ".", 2)[0]
	var flags []string
	for _, pkg := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		for _, kv := range [][2]string{{"gitVersion", version}, {"gitMajor", "1"}, {"gitMinor", minor}, {"gitTreeState", "clean"}} {
			flags = append(flags, fmt.Sprintf("-X %s.%s=%s", pkg, kv[0], kv[1]))
		}
	}
	return strings.Join(flags, " ")
}

// buildKwok installs kwok at its pinned version (go install pkg@version needs no module).
func buildKwok(ctx context.Context, dir string) error {
	tmp := filepath.Join(dir, "bin.tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := goCmd(ctx, dir, []string{"GOBIN=" + tmp}, "install", "-trimpath", "sigs.k8s.io/kwok/cmd/kwok@"+KwokVersion); err != nil {
		return err
	}
	return moveBins(dir, tmp, []string{Kwok})
}

// buildSampleAPIServer installs sample-apiserver at its pinned version (its module has no
// replace directives, so go install pkg@version builds it as published).
func buildSampleAPIServer(ctx context.Context, dir string) error {
	tmp := filepath.Join(dir, "bin.tmp")
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	if err := goCmd(ctx, dir, []string{"GOBIN=" + tmp}, "install", "-trimpath", "k8s.io/sample-apiserver@"+SampleAPIServerVersion); err != nil {
		return err
	}
	return moveBins(dir, tmp, []string{SampleAPIServer})
}

func moveBins(dir, tmp string, names []string) error {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, "bin", n)); err != nil {
			return err
		}
	}
	return os.RemoveAll(tmp)
}

// downloadGoMod fetches a module through the module proxy and returns its go.mod.
func downloadGoMod(ctx context.Context, dir, modVersion string) ([]byte, error) {
	info, err := downloadModule(ctx, modVersion)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(info.GoMod)
}

// module is what go mod download -json reports of a module.
type module struct{ GoMod, Dir, Error string }

// downloadModule fetches a module through the module proxy into the module cache.
func downloadModule(ctx context.Context, modVersion string) (*module, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir() // outside any module: the download needs none
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go mod download %s: %w (%s)", modVersion, err, strings.TrimSpace(out.String()))
	}
	var info module
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		return nil, fmt.Errorf("go mod download %s: %w", modVersion, err)
	}
	if info.Error != "" {
		return nil, fmt.Errorf("go mod download %s: %s", modVersion, info.Error)
	}
	return &info, nil
}

// kwokStageDirs are the stage sets of kwok's "fast" profile (its kustomize/stage/fast): nodes
// become Ready at once and heartbeat through their Lease, pods run and become Ready at once,
// and a deleted pod is gone as soon as it has no finalizers.
var kwokStageDirs = []string{"node/fast", "node/heartbeat-with-lease", "pod/fast"}

// KwokStages returns a kwok configuration file holding the Stages of kwok's fast profile, as
// its module publishes them (kwok runs no stage without configuration). The file is written
// once under root from the module cache.
func KwokStages(ctx context.Context, root string) (string, error) {
	path := filepath.Join(root, "kwok-"+KwokVersion, "stages-fast.yaml")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	info, err := downloadModule(ctx, "sigs.k8s.io/kwok@"+KwokVersion)
	if err != nil {
		return "", err
	}
	var docs [][]byte
	for _, d := range kwokStageDirs {
		files, err := filepath.Glob(filepath.Join(info.Dir, "kustomize", "stage", d, "*.yaml"))
		if err != nil {
			return "", err
		}
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			docs = append(docs, bytes.TrimSpace(b))
		}
	}
	if len(docs) == 0 {
		return "", fmt.Errorf("kwok %s: no stages under %s/kustomize/stage", KwokVersion, info.Dir)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(bytes.Join(docs, []byte("\n---\n")), '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

func goCmd(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false"), env...)
	// A test binary that dies (its -timeout) takes its build along: an orphaned build would
	// go on competing for the cores with the next test's build of the same binaries.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		tail := out.String()
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		return fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), dir, err, tail)
	}
	return nil
}

// KwokDebugConfig returns a kwok configuration that makes its node server serve, for every
// pod it runs, logs and attach from logsFile (a CRI-format log, followed), exec by running
// the command on kwok's own host with KWOK_EXEC=execEnv, and port-forward to forwardPort on
// kwok's loopback.
func KwokDebugConfig(logsFile string, forwardPort int, execEnv string) []byte {
	return fmt.Appendf(nil, kwokDebugConfig, logsFile, forwardPort, execEnv)
}

const kwokDebugConfig = `kind: ClusterLogs
apiVersion: kwok.x-k8s.io/v1alpha1
metadata:
  name: logs
spec:
  logs:
  - logsFile: %[1]s
    follow: true
---
kind: ClusterExec
apiVersion: kwok.x-k8s.io/v1alpha1
metadata:
  name: exec
spec:
  execs:
  - local:
      envs:
      - name: KWOK_EXEC
        value: %[3]s
---
kind: ClusterAttach
apiVersion: kwok.x-k8s.io/v1alpha1
metadata:
  name: attach
spec:
  attaches:
  - logsFile: %[1]s
---
kind: ClusterPortForward
apiVersion: kwok.x-k8s.io/v1alpha1
metadata:
  name: port-forward
spec:
  forwards:
  - target:
      port: %[2]d
      address: 127.0.0.1
`
