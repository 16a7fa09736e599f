package certreload

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultInterval is how often Set.Run looks at the files: a renewed certificate is in use
// within this long (kube-apiserver's dynamic certificates look every minute and on inotify
// events; hacp has no inotify, so it looks more often).
const DefaultInterval = 10 * time.Second

var (
	loadedDesc = prometheus.NewDesc("hacp_cert_loaded_expiry_seconds",
		"Seconds until the notAfter of each certificate in use (reloaded from its file when that changes), by role, subject and serial.",
		[]string{"cert", "subject", "serial"}, nil)
	failedDesc = prometheus.NewDesc("hacp_cert_reload_failed",
		"1 while the files of a certificate in use have changed but do not load (the old certificate is kept).",
		[]string{"cert"}, nil)
)

// Set reloads its items every interval and on Trigger (SIGHUP), and exports what is in use
// as metrics.
type Set struct {
	log     *slog.Logger
	trigger chan struct{}
	now     func() time.Time

	mu      sync.Mutex
	items   []Item
	lastErr map[Item]string // the failure logged last, not logged again while it lasts
}

// NewSet returns a set of items, logging to log.
func NewSet(log *slog.Logger, items ...Item) *Set {
	return &Set{log: orDefault(log), trigger: make(chan struct{}, 1), now: time.Now, items: items, lastErr: map[Item]string{}}
}

// Add adds items.
func (s *Set) Add(items ...Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = append(s.items, items...)
}

// Replace makes items the whole set (a program started again with new holders).
func (s *Set) Replace(items ...Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = items
	s.lastErr = map[Item]string{}
}

// Trigger asks Run to reload now.
func (s *Set) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Run reloads every interval and on Trigger until ctx ends.
func (s *Set) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.trigger:
		}
		s.ReloadNow()
	}
}

// ReloadNow reloads every item and returns how many changed. A failure is logged at WARN
// once (until the files change again or load) and the item keeps what it had.
func (s *Set) ReloadNow() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := 0
	for _, it := range s.items {
		ok, err := it.Reload()
		if ok {
			changed++
		}
		if err == nil {
			delete(s.lastErr, it)
			continue
		}
		if s.lastErr[it] != err.Error() {
			s.log.Warn("certificate files changed but do not load: keeping the certificate in use", "cert", it.Role(), "err", err)
		}
		s.lastErr[it] = err.Error()
	}
	return changed
}

// Describe implements prometheus.Collector.
func (s *Set) Describe(ch chan<- *prometheus.Desc) {
	ch <- loadedDesc
	ch <- failedDesc
}

// Collect implements prometheus.Collector.
func (s *Set) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	seen := map[[3]string]bool{}
	for _, it := range s.items {
		failed := 0.0
		if _, ok := s.lastErr[it]; ok {
			failed = 1
		}
		ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.GaugeValue, failed, it.Role())
		for _, c := range it.Loaded() {
			key := [3]string{it.Role(), c.Subject.String(), serialHex(c)}
			if seen[key] {
				continue
			}
			seen[key] = true
			ch <- prometheus.MustNewConstMetric(loadedDesc, prometheus.GaugeValue, c.NotAfter.Sub(now).Seconds(), key[0], key[1], key[2])
		}
	}
}
