package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	hnetns "github.com/hacp/hacp/internal/netns"
)

// dialCtl dials from the control namespace: the socket is created on an OS thread
// switched into it and stays there.
func dialCtl(ctx context.Context, network, addr string) (net.Conn, error) {
	return hnetns.DialContext(ctx, ctlNS, network, addr)
}

// newClient returns a clientset for https://VIP:8443 with the admin certificate, whose
// every request uses a new TCP and TLS connection (HTTP/1.1), as separate kubectl runs do.
func (e *e2e) newClient(timeout time.Duration) (*kubernetes.Clientset, error) {
	pki := filepath.Join(e.out, "pki")
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(pki, name)) }
	ca, err := read("ca.crt")
	if err != nil {
		return nil, err
	}
	crt, err := read("admin.crt")
	if err != nil {
		return nil, err
	}
	key, err := read("admin.key")
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://%s:%d", vip, vipPort),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertData: crt, KeyData: key},
		Timeout:         timeout,
		QPS:             -1,
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.Transport = &http.Transport{
		DialContext:         dialCtl,
		TLSClientConfig:     tlsCfg,
		DisableKeepAlives:   true,
		TLSHandshakeTimeout: timeout,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return kubernetes.NewForConfig(cfg)
}

// writeStats is what a background writer saw.
type writeStats struct {
	OK, Failed int
	LongestGap time.Duration // longest time between two successful writes
	FirstError string
}

// writer creates ConfigMaps through the VIP one after another, every 50 ms, until ctx
// ends. Failures are counted, never retried.
type writer struct {
	mu    sync.Mutex
	stats writeStats
	done  chan struct{}
}

func startWriter(ctx context.Context, cs *kubernetes.Clientset, name string) *writer {
	w := &writer{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		last := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)},
				Data:       map[string]string{"i": fmt.Sprint(i)},
			}
			sent := time.Now()
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := cs.CoreV1().ConfigMaps("default").Create(rctx, cm, metav1.CreateOptions{})
			cancel()
			now := time.Now()
			w.mu.Lock()
			if err != nil {
				w.stats.Failed++
				if w.stats.FirstError == "" {
					w.stats.FirstError = fmt.Sprintf("%s at %s (sent %s): %v", cm.Name, now.UTC().Format("15:04:05.000"), sent.UTC().Format("15:04:05.000"), err)
				}
			} else {
				w.stats.OK++
				w.stats.LongestGap = max(w.stats.LongestGap, now.Sub(last))
				last = now
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop waits for the writer to end (ctx must be cancelled) and returns its stats.
func (w *writer) result() writeStats {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// readStats is what a background reader saw.
type readStats struct {
	OK, Failed int
	FirstError string
}

// reader gets Secrets through the VIP in turn, every 50 ms, until ctx ends, and checks
// each one's data. Failures (an error or wrong data) are counted, never retried.
type reader struct {
	mu    sync.Mutex
	stats readStats
	done  chan struct{}
}

func startReader(ctx context.Context, cs *kubernetes.Clientset, ns string, secrets []rotationSecret) *reader {
	r := &reader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s := secrets[i%len(secrets)]
			sent := time.Now()
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			got, err := cs.CoreV1().Secrets(ns).Get(rctx, s.name, metav1.GetOptions{})
			cancel()
			if err == nil && string(got.Data["token"]) != s.token {
				err = fmt.Errorf("data.token %q, want %q", got.Data["token"], s.token)
			}
			r.record(s.name, sent, err)
		}
	}()
	return r
}

// record counts one read.
func (r *reader) record(name string, sent time.Time, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.stats.OK++
		return
	}
	r.stats.Failed++
	if r.stats.FirstError == "" {
		r.stats.FirstError = fmt.Sprintf("%s at %s (sent %s): %v", name, time.Now().UTC().Format("15:04:05.000"), sent.UTC().Format("15:04:05.000"), err)
	}
}

// result waits for the reader to end (ctx must be cancelled) and returns its stats.
func (r *reader) result() readStats {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}
