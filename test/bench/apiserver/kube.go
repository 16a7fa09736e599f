package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hacp/hacp/internal/upstream"
	"github.com/hacp/hacp/pkg/apiserver/embedetcd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeRows puts hacp (the cache rows' server with its watch cache, on its embedded etcd)
// side by side with kube-apiserver 1.33 (built from its module, as the tests build it) on
// the same etcd member, so that both serve the same objects from the same store: creates,
// patches, gets and lists in alternating rounds, the fan-out, and the memory of each.
func kubeRows(ctx context.Context, dir string, n int, on *cacheServer, filled bool) {
	if !filled {
		on.fill(ctx, "big", *bigN)
		on.fill(ctx, "list100", 100)
	}
	bin, err := upstream.Build(ctx, upstream.Root(), "kube-apiserver")
	must(err)
	kube := startKubeAPIServer(dir, bin, etcdURLOf(on), etcdTLSArgs(on.pki)...)
	defer kube.stop()
	_, err = on.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-create"}}, metav1.CreateOptions{})
	must(err)
	// kube-apiserver learns of hacp's writes through its own watch: wait for the objects.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		l, err := kube.cs.CoreV1().ConfigMaps("big").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		_, nsErr := kube.cs.CoreV1().Namespaces().Get(ctx, "kube-create", metav1.GetOptions{ResourceVersion: "0"})
		if err == nil && nsErr == nil && l != nil && len(l.Items) == *bigN {
			break
		}
		if time.Now().After(deadline) {
			must(fmt.Errorf("kube-apiserver does not serve all of hacp's objects: %v, %v", err, nsErr))
		}
		time.Sleep(50 * time.Millisecond) // poll
	}

	both := func(name string, conc, ops int, op func(s *cacheServer, who string, i int) error) cpuRow {
		return measureServerCPU(on.cmd.Process.Pid, kube.cmd.Process.Pid, name, conc, ops,
			func(i int) error { return op(on, "h", i) }, func(i int) error { return op(kube, "k", i) })
	}
	var rows []cpuRow
	for _, conc := range []int{1, 32} {
		ops := n
		if conc > 1 {
			ops = 4 * n
		}
		rows = append(rows, both("create", conc, ops, func(s *cacheServer, who string, i int) error {
			_, err := s.cs.CoreV1().ConfigMaps("kube-create").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%s-%05d", conc, who, i)},
				Data: map[string]string{"key": "value"}}, metav1.CreateOptions{})
			return err
		}))
		rows = append(rows, both("merge-patch", conc, ops, func(s *cacheServer, who string, i int) error {
			_, err := s.cs.CoreV1().ConfigMaps("kube-create").Patch(ctx, fmt.Sprintf("c%d-%s-%05d", conc, who, i), types.MergePatchType,
				[]byte(fmt.Sprintf(`{"data":{"n":"%d"}}`, i)), metav1.PatchOptions{})
			return err
		}))
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("get rv="+rvName(rv), conc, ops, func(s *cacheServer, _ string, i int) error {
				_, err := s.cs.CoreV1().ConfigMaps("big").Get(ctx, fmt.Sprintf("cm-%05d", i%*bigN), metav1.GetOptions{ResourceVersion: rv})
				return err
			}))
		}
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("list100 rv="+rvName(rv), conc, ops/2, func(s *cacheServer, _ string, i int) error {
				l, err := s.cs.CoreV1().ConfigMaps("list100").List(ctx, metav1.ListOptions{ResourceVersion: rv})
				if err == nil && len(l.Items) != 100 {
					err = fmt.Errorf("list100 returned %d items", len(l.Items))
				}
				return err
			}))
		}
		// The same lists, the response read to its end but not decoded (rawList100).
		for _, rv := range []string{"", "0"} {
			rows = append(rows, both("list100 raw rv="+rvName(rv), conc, ops/2, func(s *cacheServer, _ string, i int) error {
				return rawList100(ctx, s, rv)
			}))
		}
	}
	for _, rv := range []string{"", "0"} {
		rows = append(rows, both(fmt.Sprintf("list%dk rv=%s", *bigN/1000, rvName(rv)), 1, 20, func(s *cacheServer, _ string, i int) error {
			l, err := s.cs.CoreV1().ConfigMaps("big").List(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err == nil && len(l.Items) != *bigN {
				err = fmt.Errorf("big list returned %d items", len(l.Items))
			}
			return err
		}))
	}
	fmt.Printf("\nhacp (with its watch cache) vs kube-apiserver 1.33 (%s), each its own process, on the same etcd member\n", filepath.Base(bin))
	fmt.Printf("(hacp's embedded one) holding %d + 100 configmaps; %d alternating rounds per row, load average %s\n\n", *bigN, rounds, loadavg())
	// On this shared machine a process's own CPU time per request moves far less with the
	// other load than rates do; and the bench's client, which decodes every response on the
	// same cores, is not in it.
	printRatesAndCPU(rows, "hacp", "kube", "hacp's includes the etcd member both use, serving hacp's requests; kube-apiserver's does not include etcd\n")
	fmt.Printf("\nRSS after the rows: hacp %s (with the etcd member both use), kube-apiserver %s\n",
		readRSS(on.cmd.Process.Pid), readRSS(kube.cmd.Process.Pid))
	if strings.Contains(","+*cacheParts+",", ",fanout,") {
		fanout(ctx, kube)
	}
}

// startKubeAPIServer runs kube-apiserver on etcdURL as the tests run it
// (upstream.KubeAPIServerArgs) and extra flags, with the admin token in the kubeconfig it
// writes, and waits until it is ready.
func startKubeAPIServer(dir, bin, etcdURL string, extra ...string) *cacheServer {
	dir = filepath.Join(dir, "kube-apiserver")
	must(os.MkdirAll(dir, 0o700))
	free, err := embedetcd.FreeLocalURL()
	must(err)
	port := strings.TrimPrefix(free, "http://127.0.0.1:")
	args, err := upstream.KubeAPIServerArgs(dir, etcdURL, port, "bench-token")
	must(err)
	logf, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	must(err)
	defer logf.Close()
	// No in-flight limits, as the hacp side of the rows.
	args = append(args, "--max-requests-inflight=0", "--max-mutating-requests-inflight=0")
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	must(cmd.Start())
	prev := onExit
	onExit = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); prev() }
	host := "https://127.0.0.1:" + port
	kc := filepath.Join(dir, "admin.kubeconfig")
	must(os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kube
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: bench-token}
contexts:
- name: kube
  context: {cluster: kube, user: admin}
current-context: kube
`, host)), 0o600))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	for t0 := time.Now(); ; {
		req, _ := http.NewRequest(http.MethodGet, host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer bench-token")
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(t0) > 3*time.Minute {
			must(fmt.Errorf("kube-apiserver not ready after 3m (log %s)", logf.Name()))
		}
		time.Sleep(50 * time.Millisecond) // poll
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	must(err)
	rc.QPS, rc.Burst = 1e6, 1e6
	return &cacheServer{name: "kube-apiserver", cmd: cmd, cs: kubernetes.NewForConfigOrDie(rc), kubeconfig: kc}
}
