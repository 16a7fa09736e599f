// Command diffupstream runs the differential harness (`make diff-upstream`): kube-apiserver
// at UPSTREAM_K8S_VERSION (default upstream.LatestKubernetesVersion, built into
// _output/upstream on first use) and hacp side by side, the same corpus to both, the report
// in _output/diff-upstream. It exits 1 on a difference test/upstream/diff-allow.yaml does
// not allow; see docs/compatibility.md#the-differential-harness.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/test/upstream/diffupstream"
)

func main() {
	def := os.Getenv("UPSTREAM_K8S_VERSION")
	if def == "" {
		def = upstream.LatestKubernetesVersion
	}
	version := flag.String("version", def, "kube-apiserver release to compare with (env UPSTREAM_K8S_VERSION)")
	bin := flag.String("kube-apiserver", "", "kube-apiserver binary (default: built at -version into _output/upstream)")
	out := flag.String("out", "_output/diff-upstream", "directory for report.json, summary.md and kube-apiserver.log")
	allow := flag.String("allow", "test/upstream/diff-allow.yaml", "allow-list of reviewed differences")
	testdata := flag.String("testdata", "test/upstream/testdata", "directory of the corpus (golden/corpus.yaml, diff/mutations.yaml)")
	record := flag.Bool("record", false, "rewrite the golden files (testdata/golden/results) from kube-apiserver's answers")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	failed, err := run(ctx, *version, *bin, *out, *allow, *testdata, *record)
	if err != nil {
		fmt.Fprintf(os.Stderr, "diff-upstream: %v\n", err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "diff-upstream: %d differences not in %s (see %s/summary.md)\n", failed, *allow, *out)
		os.Exit(1)
	}
}

func run(ctx context.Context, version, bin, out, allow, testdata string, record bool) (int, error) {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if record && version != upstream.KubernetesVersion {
		return 0, fmt.Errorf("-record writes the golden files TestGolden compares hacp with, so only from the release the suite's peers are at: run with UPSTREAM_K8S_VERSION=%s (upstream.KubernetesVersion), not %s", upstream.KubernetesVersion, version)
	}
	if bin == "" {
		log.Info("kube-apiserver", "version", version, "dir", upstream.Root())
		var err error
		if bin, err = upstream.BuildAt(ctx, upstream.Root(), "kube-apiserver", version); err != nil {
			return 0, err
		}
	}
	r, err := diffupstream.Run(ctx, diffupstream.Options{KubeAPIServer: bin, Version: version, TestData: testdata,
		AllowFile: allow, OutDir: out, Record: record, Log: log})
	if err != nil {
		return 0, err
	}
	fmt.Print(r.CountsTable())
	if record {
		fmt.Printf("recorded %s/golden/results from kube-apiserver %s\n", testdata, version)
	}
	return len(r.Failed()), nil
}
