// Package diffupstream is the differential harness against upstream: it starts
// kube-apiserver at a given release and hacp's apiserver side by side, each on its own etcd,
// sends both the same corpus (discovery, OpenAPI v3, and requests over every built-in kind)
// and compares the answers check by check. Differences not in the reviewed allow-list
// (test/upstream/diff-allow.yaml) fail it; `make diff-upstream` and TestDiffUpstream run it.
package diffupstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AdmissionOff are the admission plugins kube-apiserver enables by default that change or
// judge objects. Both servers run without them, so that the answers hold what the
// registry's defaulting and validation make of an object (hacp accepts every upstream plugin
// name in --disable-admission-plugins).
var AdmissionOff = []string{"LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
	"DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PersistentVolumeClaimResize",
	"RuntimeClass", "CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook", "ResourceQuota"}

// Options says what to run against what.
type Options struct {
	// KubeAPIServer is the kube-apiserver binary; Version is its release (for the report and
	// the allow-list's per-version entries).
	KubeAPIServer, Version string
	// TestData is test/upstream/testdata (the corpus); AllowFile the allow-list.
	TestData, AllowFile string
	// OutDir receives report.json and summary.md (and the servers' logs); empty: nowhere.
	OutDir string
	// Record rewrites the golden files (TestData/golden/results) from kube-apiserver's answers.
	Record bool
	// Log gets progress lines; nil: none.
	Log *slog.Logger
}

// Run starts both servers, runs every check and returns the report (written to OutDir). The
// error is for a harness that could not run, not for differences (see Report.Failed).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	allow, err := LoadAllowList(o.AllowFile)
	if err != nil {
		return nil, err
	}
	corpus, err := loadCorpus(o.TestData)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "diff-upstream-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	start := time.Now()
	kube, hacp, stop, err := startServers(work, o)
	if err != nil {
		return nil, err
	}
	defer stop()
	o.Log.Info("servers ready", "kube", kube.base, "hacp", hacp.base, "took", time.Since(start).Round(time.Millisecond))
	r := &Report{Version: o.Version}
	p := &pair{kube: kube, hacp: hacp, report: r, ctx: ctx}
	idx, err := compareDiscovery(p)
	if err != nil {
		return nil, err
	}
	o.Log.Info("discovery compared", "checks", len(r.Checks))
	if err := compareOpenAPI(p); err != nil {
		return nil, err
	}
	o.Log.Info("openapi compared", "checks", len(r.Checks))
	golden, err := runRequests(p, idx, corpus)
	if err != nil {
		return nil, err
	}
	o.Log.Info("requests compared", "checks", len(r.Checks))
	r.apply(allow)
	r.Took = time.Since(start).Round(time.Millisecond).String()
	if o.Record {
		if err := writeGolden(filepath.Join(o.TestData, "golden", "results"), corpus.objects, golden); err != nil {
			return r, err
		}
	}
	if o.OutDir != "" {
		if err := r.write(o.OutDir); err != nil {
			return r, err
		}
	}
	return r, nil
}

// startServers starts kube-apiserver on an etcd of its own and hacp on its embedded etcd,
// both without the AdmissionOff plugins; stop ends all three.
func startServers(work string, o Options) (kube, hacp *target, stop func(), err error) {
	etcd, err := embedetcd.StartLocal(filepath.Join(work, "etcd"), true)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("etcd for kube-apiserver: %w", err)
	}
	kdir := filepath.Join(work, "kube")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		etcd.Close()
		return nil, nil, nil, err
	}
	k, err := upstream.StartKubeAPIServer(o.KubeAPIServer, etcd.ClientURL(), kdir,
		"--disable-admission-plugins="+strings.Join(AdmissionOff, ","))
	if err != nil {
		etcd.Close()
		return nil, nil, nil, err
	}
	h, err := startHacp(filepath.Join(work, "hacp"))
	if err != nil {
		k.Kill()
		etcd.Close()
		return nil, nil, nil, err
	}
	stop = func() {
		if o.OutDir != "" {
			_ = os.MkdirAll(o.OutDir, 0o755)
			_ = os.WriteFile(filepath.Join(o.OutDir, "kube-apiserver.log"), []byte(k.LogTail(1<<20)), 0o644)
		}
		_ = k.Stop()
		_ = h.Shutdown()
		etcd.Close()
	}
	if kube, err = newTarget("kube-apiserver", k.Config); err == nil {
		var rc *rest.Config
		if rc, err = clientcmd.BuildConfigFromFlags("", h.KubeconfigPath()); err == nil {
			hacp, err = newTarget("hacp", rc)
		}
	}
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return kube, hacp, stop, nil
}

// startHacp starts hacp's apiserver with its embedded etcd under dir, retrying a start that
// lost one of its picked ports.
func startHacp(dir string) (*server.Server, error) {
	var err error
	for i := range 5 {
		var cfg *server.Config
		if cfg, err = servertest.Config(filepath.Join(dir, fmt.Sprint(i))); err != nil {
			return nil, err
		}
		cfg.DisableAdmissionPlugins = AdmissionOff
		// As the peer (upstream.KubeAPIServerArgs): API Priority and Fairness off, so that
		// neither server writes the FlowSchemas' Dangling conditions while the corpus runs.
		cfg.EnablePriorityAndFairness = false
		var s *server.Server
		if s, err = servertest.Start(cfg, nil); err == nil {
			return s, nil
		}
		if !embedetcd.IsAddrInUse(err) {
			break
		}
	}
	return nil, fmt.Errorf("hacp: %w", err)
}
