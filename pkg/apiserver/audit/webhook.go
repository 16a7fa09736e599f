package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Webhook backend defaults, kube-apiserver's (--audit-webhook-*).
const (
	DefaultWebhookBatchBufferSize = 10000
	DefaultWebhookBatchMaxSize    = 400
	DefaultWebhookBatchMaxWait    = 30 * time.Second
	DefaultWebhookInitialBackoff  = 10 * time.Second
	DefaultWebhookThrottleQPS     = 10
	DefaultWebhookThrottleBurst   = 15
)

// webhookRetries is how many times a batch is sent before it is dropped (upstream retries
// with exponential backoff a few times too).
const webhookRetries = 3

// WebhookConfig configures the webhook backend.
type WebhookConfig struct {
	// KubeconfigFile names the remote service: its current context's cluster server (the
	// URL events are POSTed to), certificate authority and client credentials.
	KubeconfigFile string
	// Mode is ModeBatch (the default: a goroutine sends events in batches) or ModeBlocking
	// (each event is sent before the request goes on).
	Mode string
	// Batch mode: events held at most (more are dropped), per request at most, and how long
	// an event waits for a batch to fill.
	BatchBufferSize, BatchMaxSize int
	BatchMaxWait                  time.Duration
	// InitialBackoff is the wait before the first retry of a failed send (doubling after).
	InitialBackoff time.Duration
	// Throttle, when set, limits batch mode to ThrottleQPS requests a second with bursts
	// of ThrottleBurst (upstream's --audit-webhook-batch-throttle-*: on, 10, 15).
	Throttle      bool
	ThrottleQPS   float64
	ThrottleBurst int
	// Truncate limits event and request sizes (off by default, as upstream).
	Truncate Truncate
	Logger   *slog.Logger
}

// WebhookBackend POSTs audit.k8s.io/v1 EventLists to a remote service, as kube-apiserver's
// --audit-webhook-config-file backend.
type WebhookBackend struct {
	cfg     WebhookConfig
	client  *http.Client
	url     string
	limiter *rate.Limiter // nil: not throttled

	stopCtx    context.Context // done at Close
	cancelStop context.CancelFunc

	mu     sync.Mutex // guards closed
	closed bool
	batch  *batchQueue // batch mode: the sender's queue
}

// LoadWebhookKubeconfig checks that file is a kubeconfig whose current context names a
// server; it returns the client and the URL events go to.
func LoadWebhookKubeconfig(file string) (*http.Client, string, error) {
	kc, err := clientcmd.LoadFromFile(file)
	if err != nil {
		return nil, "", err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	if rc.Host == "" {
		return nil, "", fmt.Errorf("%s: the current context's cluster has no server", file)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", file, err)
	}
	if rc.Timeout == 0 {
		hc.Timeout = 30 * time.Second
	}
	return hc, rc.Host, nil
}

// NewWebhookBackend loads the kubeconfig and, in batch mode, starts the sender.
func NewWebhookBackend(cfg WebhookConfig) (*WebhookBackend, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeBatch
	}
	if cfg.BatchBufferSize <= 0 {
		cfg.BatchBufferSize = DefaultWebhookBatchBufferSize
	}
	if cfg.BatchMaxSize <= 0 {
		cfg.BatchMaxSize = DefaultWebhookBatchMaxSize
	}
	if cfg.BatchMaxWait <= 0 {
		cfg.BatchMaxWait = DefaultWebhookBatchMaxWait
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultWebhookInitialBackoff
	}
	hc, url, err := LoadWebhookKubeconfig(cfg.KubeconfigFile)
	if err != nil {
		return nil, err
	}
	b := &WebhookBackend{cfg: cfg, client: hc, url: url}
	b.stopCtx, b.cancelStop = context.WithCancel(context.Background())
	if cfg.Mode == ModeBatch && cfg.Throttle {
		qps, burst := cfg.ThrottleQPS, cfg.ThrottleBurst
		if qps <= 0 {
			qps = DefaultWebhookThrottleQPS
		}
		if burst <= 0 {
			burst = DefaultWebhookThrottleBurst
		}
		b.limiter = rate.NewLimiter(rate.Limit(qps), burst)
	}
	if cfg.Mode == ModeBatch {
		b.batch = startBatchQueue(cfg.BatchBufferSize, "audit webhook", cfg.Logger, b.run)
	}
	return b, nil
}

// Process implements Sink.
func (b *WebhookBackend) Process(ev *Event) {
	data, err := b.cfg.Truncate.encode(ev)
	if err != nil {
		b.cfg.Logger.Error("audit webhook: event dropped", "auditID", ev.AuditID, "err", err)
		return
	}
	if b.batch == nil {
		if err := b.send(context.Background(), []json.RawMessage{data}, 1); err != nil {
			b.cfg.Logger.Error("audit webhook: event not sent", "auditID", ev.AuditID, "err", err)
		}
		return
	}
	b.batch.put(data)
}

// run collects batches: a batch goes when it holds BatchMaxSize events or its first event
// has waited BatchMaxWait, and what is left goes at Close.
func (b *WebhookBackend) run(events <-chan []byte) {
	var batch []json.RawMessage
	var timer <-chan time.Time
	flush := func() {
		if len(batch) == 0 {
			return
		}
		for _, part := range b.cfg.Truncate.split(batch) {
			if err := b.throttle(); err != nil {
				b.cfg.Logger.Error("audit webhook: batch dropped", "events", len(part), "err", err)
				continue
			}
			if err := b.send(context.Background(), part, webhookRetries); err != nil {
				b.cfg.Logger.Error("audit webhook: batch dropped", "events", len(part), "err", err)
			}
		}
		batch, timer = nil, nil
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				flush()
				return
			}
			batch = append(batch, ev)
			if len(batch) == 1 {
				timer = time.After(b.cfg.BatchMaxWait)
			}
			if len(batch) >= b.cfg.BatchMaxSize {
				flush()
			}
		case <-timer:
			flush()
		}
	}
}

// throttle waits for the limiter, if any; once Close began, what is left goes at once.
func (b *WebhookBackend) throttle() error {
	if b.limiter == nil {
		return nil
	}
	if err := b.limiter.Wait(b.stopCtx); err != nil && b.stopCtx.Err() == nil {
		return err
	}
	return nil
}

// send POSTs one EventList, retrying a failed send with backoff (not after Close).
func (b *WebhookBackend) send(ctx context.Context, events []json.RawMessage, tries int) error {
	var buf bytes.Buffer
	buf.WriteString(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[`)
	for i, ev := range events {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(ev)
	}
	buf.WriteString("]}")
	body := buf.Bytes()
	backoff := b.cfg.InitialBackoff
	var err error
	for try := 0; try < tries; try++ {
		if try > 0 {
			select {
			case <-time.After(backoff):
			case <-b.stopCtx.Done():
				return fmt.Errorf("shutting down after: %w", err)
			}
			backoff *= 2
		}
		if err = b.post(ctx, body); err == nil {
			return nil
		}
	}
	return err
}

func (b *WebhookBackend) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: %s: %s", b.url, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// Close sends what batch mode holds (without waiting for retries) and stops.
func (b *WebhookBackend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.cancelStop()
	b.mu.Unlock()
	if b.batch != nil {
		b.batch.close()
	}
	return nil
}

// Sinks sends every event to each sink in turn.
type Sinks []Sink

// Process implements Sink.
func (s Sinks) Process(ev *Event) {
	for _, k := range s {
		k.Process(ev)
	}
}
