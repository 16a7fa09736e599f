// Command kubectl runs the project's kubectl tests once per supported kubectl release (make
// test-kubectl): every Test that reaches testenv.Kubectl, with HACP_KUBECTL set to kubectl
// built at that release by internal/upstream (built on first use, cached in _output/upstream).
// A release that cannot be built is skipped on a developer's machine and fails in CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hacp/hacp/internal/testenv"
	"github.com/hacp/hacp/internal/upstream"
)

// leftOut are tests that run kubectl but stay out of the matrix, with the reason: what their
// kubectl does the others do too, and their time goes to something else.
var leftOut = map[string]string{
	"TestQuickStart": "creates a Deployment and lists pods as TestKubectlSession does; its time goes to building and starting make run-cluster",
}

// release is a Kubernetes release kubectl can be built at.
var release = regexp.MustCompile(`^v1\.\d+\.\d+$`)

func main() {
	versions := flag.String("versions", strings.Join(upstream.KubectlVersions, ","), "comma-separated kubectl releases to run the tests with")
	kubectl := flag.String("kubectl", "", "run the tests once with this kubectl binary instead of the releases")
	list := flag.Bool("list", false, "print the packages and tests that run kubectl, and exit")
	timeout := flag.Duration("timeout", 30*time.Minute, "go test -timeout of each release's run")
	flag.Parse()
	if err := run(strings.Split(*versions, ","), *kubectl, *list, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "test-kubectl:", err)
		os.Exit(1)
	}
}

func run(versions []string, kubectl string, list bool, timeout time.Duration) error {
	root, err := repoRoot()
	if err != nil {
		return fmt.Errorf("run it inside the hacp checkout: %w", err)
	}
	found, err := kubectlTests(root)
	if err != nil {
		return err
	}
	if list {
		for _, dir := range slices.Sorted(maps.Keys(found)) {
			fmt.Println("./"+dir, strings.Join(found[dir], " "))
		}
		for _, name := range slices.Sorted(maps.Keys(leftOut)) {
			fmt.Printf("left out: %s (%s)\n", name, leftOut[name])
		}
		return nil
	}
	pkgs, pattern := goTestArgs(found, leftOut)
	if len(pkgs) == 0 {
		return fmt.Errorf("no test under %s calls testenv.Kubectl", root)
	}
	if kubectl != "" {
		bin, err := filepath.Abs(kubectl) // the tests run in their package's directory
		if err != nil {
			return err
		}
		return goTest(root, kubectl, bin, pkgs, pattern, timeout)
	}
	for _, v := range versions {
		if !release.MatchString(v) {
			return fmt.Errorf("kubectl release %q: want v1.MINOR.PATCH", v)
		}
	}
	var failed []string
	for _, v := range versions {
		bin, err := upstream.BuildAt(context.Background(), upstream.Root(), upstream.Kubectl, v)
		if err != nil {
			if testenv.CI() {
				return fmt.Errorf("kubectl %s: %w", v, err)
			}
			fmt.Printf("test-kubectl: kubectl %s: SKIP (cannot build it: %v)\n", v, err)
			continue
		}
		if goTest(root, v, bin, pkgs, pattern, timeout) != nil {
			failed = append(failed, v)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the kubectl tests failed with kubectl %s", strings.Join(failed, ", "))
	}
	return nil
}

// goTest runs the tests pattern selects in pkgs with HACP_KUBECTL=bin, and says how long it took.
func goTest(root, name, bin string, pkgs []string, pattern string, timeout time.Duration) error {
	fmt.Printf("test-kubectl: kubectl %s (%s): %d tests in %d packages\n", name, bin, strings.Count(pattern, "|")+1, len(pkgs))
	start := time.Now()
	cmd := exec.Command("go", append([]string{"test", "-count=1", "-timeout", timeout.String(), "-run", pattern}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), testenv.KubectlEnv+"="+bin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	result := "ok"
	if err != nil {
		result = "FAIL"
	}
	fmt.Printf("test-kubectl: kubectl %s: %s in %s\n", name, result, time.Since(start).Round(time.Second))
	return err
}

// goTestArgs returns the packages (./dir) and the -run pattern that select the tests found,
// less those left out.
func goTestArgs(found map[string][]string, leftOut map[string]string) ([]string, string) {
	var pkgs []string
	seen := map[string]bool{}
	var names []string
	for _, dir := range slices.Sorted(maps.Keys(found)) {
		n := len(names)
		for _, name := range found[dir] {
			if _, out := leftOut[name]; !out && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		if len(names) > n {
			pkgs = append(pkgs, "./"+dir)
		}
	}
	sort.Strings(names)
	return pkgs, "^(" + strings.Join(names, "|") + ")$"
}
