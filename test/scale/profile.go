package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
)

// profileSeconds is the CPU profile's length: 20 s, or less to end 3 s before the fault
// (m1, the profiled master, is the one killed).
func profileSeconds(steady time.Duration) int {
	return int(max(min(20*time.Second, steady-3*time.Second), time.Second) / time.Second)
}

// profilePrefix is the profiles' file name prefix: the step's N in a search.
func (b *bench) profilePrefix() string {
	if b.opts.search != nil {
		return fmt.Sprintf("n%d-", b.opts.nodes)
	}
	return ""
}

// profile, with -profile, starts fetching m1's apiserver's heap profile and a CPU profile
// of profileSeconds from its /debug/pprof (through m1's address, as the admin) into
// <out>/logs/<server>/[n<N>-]heap.pprof and cpu.pprof. Best effort: failures are logged.
func (r *runState) profile(ctx context.Context) {
	b := r.s.b
	if !b.opts.profile {
		return
	}
	cs, err := kubernetes.NewForConfig(restConfig(b.bundle, b.client, apiURL(b.masters[0]), b.bundle.AdminCertPEM, b.bundle.AdminKeyPEM, nil, 1e6))
	if err != nil {
		b.progress("%s: profile: %v", r.s.name, err)
		return
	}
	dir := filepath.Join(b.opts.out, "logs", r.s.name)
	prefix := b.profilePrefix()
	secs := profileSeconds(r.steadyWindow())
	fetch := func(file, path string, params map[string]string) {
		req := cs.CoreV1().RESTClient().Get().AbsPath(path)
		for k, v := range params {
			req = req.Param(k, v)
		}
		body, err := req.DoRaw(ctx)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, prefix+file), body, 0o644)
		}
		if err != nil {
			b.progress("%s: profile %s: %v", r.s.name, file, err)
			return
		}
		b.progress("%s: wrote %s (%d bytes)", r.s.name, filepath.Join(dir, prefix+file), len(body))
	}
	b.progress("%s: profiling m1's apiserver: heap now, CPU for %d s", r.s.name, secs)
	go fetch("heap.pprof", "/debug/pprof/heap", nil)
	go fetch("cpu.pprof", "/debug/pprof/profile", map[string]string{"seconds": fmt.Sprint(secs)})
}
