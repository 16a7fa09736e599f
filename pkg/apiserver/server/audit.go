package server

import (
	"flag"
	"fmt"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/audit"
	"github.com/hacp/hacp/pkg/config"
)

// AuditConfig is kube-apiserver's audit log settings.
type AuditConfig struct {
	AuditPolicyFile   string `yaml:"audit-policy-file"`
	AuditLogPath      string `yaml:"audit-log-path"`
	AuditLogFormat    string `yaml:"audit-log-format"`
	AuditLogMaxAge    int    `yaml:"audit-log-maxage"`
	AuditLogMaxBackup int    `yaml:"audit-log-maxbackup"`
	AuditLogMaxSize   int    `yaml:"audit-log-maxsize"`
	AuditLogMode      string `yaml:"audit-log-mode"`
	AuditLogCompress  bool   `yaml:"audit-log-compress"`
	AuditLogVersion   string `yaml:"audit-log-version"`

	AuditLogBatchBufferSize      int  `yaml:"audit-log-batch-buffer-size"`
	AuditLogTruncateEnabled      bool `yaml:"audit-log-truncate-enabled"`
	AuditLogTruncateMaxEventSize int  `yaml:"audit-log-truncate-max-event-size"`
	AuditLogTruncateMaxBatchSize int  `yaml:"audit-log-truncate-max-batch-size"`

	AuditWebhookConfigFile      string        `yaml:"audit-webhook-config-file"`
	AuditWebhookMode            string        `yaml:"audit-webhook-mode"`
	AuditWebhookBatchBufferSize int           `yaml:"audit-webhook-batch-buffer-size"`
	AuditWebhookBatchMaxSize    int           `yaml:"audit-webhook-batch-max-size"`
	AuditWebhookBatchMaxWait    time.Duration `yaml:"audit-webhook-batch-max-wait"`
	AuditWebhookInitialBackoff  time.Duration `yaml:"audit-webhook-initial-backoff"`
	AuditWebhookVersion         string        `yaml:"audit-webhook-version"`

	AuditWebhookBatchThrottleEnable  bool    `yaml:"audit-webhook-batch-throttle-enable"`
	AuditWebhookBatchThrottleQPS     float64 `yaml:"audit-webhook-batch-throttle-qps"`
	AuditWebhookBatchThrottleBurst   int     `yaml:"audit-webhook-batch-throttle-burst"`
	AuditWebhookTruncateEnabled      bool    `yaml:"audit-webhook-truncate-enabled"`
	AuditWebhookTruncateMaxEventSize int     `yaml:"audit-webhook-truncate-max-event-size"`
	AuditWebhookTruncateMaxBatchSize int     `yaml:"audit-webhook-truncate-max-batch-size"`
}

func (c *AuditConfig) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.AuditPolicyFile, "audit-policy-file", c.AuditPolicyFile, "audit.k8s.io/v1 Policy `file` that picks what the audit log records (goes with --audit-log-path). Secrets, serviceaccounts/token and tokenreviews are recorded at Metadata at most, whatever it says")
	fs.StringVar(&c.AuditLogPath, "audit-log-path", c.AuditLogPath, "write the audit log to this `file` (\"-\": standard output); off when empty")
	fs.StringVar(&c.AuditLogFormat, "audit-log-format", c.AuditLogFormat, "audit log `format`: json (one audit.k8s.io/v1 Event per line) or legacy (one text line per event)")
	fs.IntVar(&c.AuditLogMaxAge, "audit-log-maxage", c.AuditLogMaxAge, "remove rotated audit log files older than this many `days` (0: keep)")
	fs.IntVar(&c.AuditLogMaxBackup, "audit-log-maxbackup", c.AuditLogMaxBackup, "keep at most this `number` of rotated audit log files (0: all)")
	fs.IntVar(&c.AuditLogMaxSize, "audit-log-maxsize", c.AuditLogMaxSize, "rotate the audit log before it grows past this many `megabytes` (0: 100)")
	fs.StringVar(&c.AuditLogMode, "audit-log-mode", c.AuditLogMode, "blocking (a request writes its events before it goes on) or batch (a goroutine writes them; beyond 10000 waiting, events are dropped and logged)")
	fs.BoolVar(&c.AuditLogCompress, "audit-log-compress", c.AuditLogCompress, "gzip rotated audit log files (NAME.gz)")
	fs.StringVar(&c.AuditLogVersion, "audit-log-version", c.AuditLogVersion, "API `version` of the events written (only audit.k8s.io/v1, as kube-apiserver 1.33)")
	fs.IntVar(&c.AuditLogBatchBufferSize, "audit-log-batch-buffer-size", c.AuditLogBatchBufferSize, "batch mode: events held before they are dropped")
	fs.BoolVar(&c.AuditLogTruncateEnabled, "audit-log-truncate-enabled", c.AuditLogTruncateEnabled, "an event larger than --audit-log-truncate-max-event-size loses its request and response objects (annotated audit.k8s.io/truncated), or is dropped if still too large")
	fs.IntVar(&c.AuditLogTruncateMaxEventSize, "audit-log-truncate-max-event-size", c.AuditLogTruncateMaxEventSize, "with truncation: largest event written, in `bytes`")
	fs.IntVar(&c.AuditLogTruncateMaxBatchSize, "audit-log-truncate-max-batch-size", c.AuditLogTruncateMaxBatchSize, "with truncation: largest batch, in `bytes` (accepted for kube-apiserver compatibility: the log writes one event at a time)")
	fs.StringVar(&c.AuditWebhookConfigFile, "audit-webhook-config-file", c.AuditWebhookConfigFile, "kubeconfig `file` naming a remote service audit events are POSTed to (audit.k8s.io/v1 EventLists), as kube-apiserver's; goes with --audit-policy-file")
	fs.StringVar(&c.AuditWebhookMode, "audit-webhook-mode", c.AuditWebhookMode, "batch (a goroutine sends events in batches) or blocking (each event is sent before the request goes on)")
	fs.IntVar(&c.AuditWebhookBatchBufferSize, "audit-webhook-batch-buffer-size", c.AuditWebhookBatchBufferSize, "batch mode: events held before they are dropped")
	fs.IntVar(&c.AuditWebhookBatchMaxSize, "audit-webhook-batch-max-size", c.AuditWebhookBatchMaxSize, "batch mode: most events per request")
	fs.DurationVar(&c.AuditWebhookBatchMaxWait, "audit-webhook-batch-max-wait", c.AuditWebhookBatchMaxWait, "batch mode: longest an event waits for its batch to fill")
	fs.DurationVar(&c.AuditWebhookInitialBackoff, "audit-webhook-initial-backoff", c.AuditWebhookInitialBackoff, "wait before retrying a failed send (doubling for each retry; a batch is tried 3 times)")
	fs.StringVar(&c.AuditWebhookVersion, "audit-webhook-version", c.AuditWebhookVersion, "API `version` of the EventLists sent (only audit.k8s.io/v1, as kube-apiserver 1.33)")
	fs.BoolVar(&c.AuditWebhookBatchThrottleEnable, "audit-webhook-batch-throttle-enable", c.AuditWebhookBatchThrottleEnable, "batch mode: limit the rate of requests to the webhook")
	fs.Float64Var(&c.AuditWebhookBatchThrottleQPS, "audit-webhook-batch-throttle-qps", c.AuditWebhookBatchThrottleQPS, "batch mode, throttled: most requests a second")
	fs.IntVar(&c.AuditWebhookBatchThrottleBurst, "audit-webhook-batch-throttle-burst", c.AuditWebhookBatchThrottleBurst, "batch mode, throttled: most requests at once after a quiet time")
	fs.BoolVar(&c.AuditWebhookTruncateEnabled, "audit-webhook-truncate-enabled", c.AuditWebhookTruncateEnabled, "an event larger than --audit-webhook-truncate-max-event-size loses its request and response objects (annotated audit.k8s.io/truncated), or is dropped if still too large; batches are split to stay under --audit-webhook-truncate-max-batch-size")
	fs.IntVar(&c.AuditWebhookTruncateMaxEventSize, "audit-webhook-truncate-max-event-size", c.AuditWebhookTruncateMaxEventSize, "with truncation: largest event sent, in `bytes`")
	fs.IntVar(&c.AuditWebhookTruncateMaxBatchSize, "audit-webhook-truncate-max-batch-size", c.AuditWebhookTruncateMaxBatchSize, "with truncation: most `bytes` of events in one request")
}

func (c *AuditConfig) validate() []error {
	var errs []error
	switch {
	case c.AuditPolicyFile != "" && c.AuditLogPath == "" && c.AuditWebhookConfigFile == "":
		errs = append(errs, config.FieldErrorf("audit-policy-file", "needs audit-log-path or audit-webhook-config-file, where the events go"))
	case c.AuditPolicyFile == "" && c.AuditLogPath != "":
		errs = append(errs, config.FieldErrorf("audit-log-path", "needs audit-policy-file, which picks what is logged"))
	case c.AuditPolicyFile == "" && c.AuditWebhookConfigFile != "":
		errs = append(errs, config.FieldErrorf("audit-webhook-config-file", "needs audit-policy-file, which picks what is sent"))
	case c.AuditPolicyFile != "":
		if _, err := audit.LoadPolicy(c.AuditPolicyFile); err != nil {
			errs = append(errs, config.FieldErrorf("audit-policy-file", "%v", err))
		}
	}
	if c.AuditLogFormat != audit.FormatJSON && c.AuditLogFormat != audit.FormatLegacy {
		errs = append(errs, config.FieldErrorf("audit-log-format", "must be json or legacy, not %q", c.AuditLogFormat))
	}
	if c.AuditLogMode != audit.ModeBlocking && c.AuditLogMode != audit.ModeBatch {
		errs = append(errs, config.FieldErrorf("audit-log-mode", "must be blocking or batch, not %q", c.AuditLogMode))
	}
	if c.AuditWebhookConfigFile != "" {
		if _, _, err := audit.LoadWebhookKubeconfig(c.AuditWebhookConfigFile); err != nil {
			errs = append(errs, config.FieldErrorf("audit-webhook-config-file", "%v", err))
		}
	}
	if c.AuditWebhookMode != audit.ModeBlocking && c.AuditWebhookMode != audit.ModeBatch {
		errs = append(errs, config.FieldErrorf("audit-webhook-mode", "must be batch or blocking, not %q", c.AuditWebhookMode))
	}
	for key, v := range map[string]int{"audit-webhook-batch-buffer-size": c.AuditWebhookBatchBufferSize, "audit-webhook-batch-max-size": c.AuditWebhookBatchMaxSize,
		"audit-webhook-batch-max-wait": int(c.AuditWebhookBatchMaxWait), "audit-webhook-initial-backoff": int(c.AuditWebhookInitialBackoff)} {
		if v <= 0 {
			errs = append(errs, config.FieldErrorf(key, "must be positive"))
		}
	}
	for key, v := range map[string]string{"audit-log-version": c.AuditLogVersion, "audit-webhook-version": c.AuditWebhookVersion} {
		if v != audit.Version {
			errs = append(errs, config.FieldErrorf(key, "must be %s, the only audit event version served, not %q", audit.Version, v))
		}
	}
	for key, v := range map[string]int{"audit-log-batch-buffer-size": c.AuditLogBatchBufferSize,
		"audit-log-truncate-max-event-size": c.AuditLogTruncateMaxEventSize, "audit-log-truncate-max-batch-size": c.AuditLogTruncateMaxBatchSize,
		"audit-webhook-truncate-max-event-size": c.AuditWebhookTruncateMaxEventSize, "audit-webhook-truncate-max-batch-size": c.AuditWebhookTruncateMaxBatchSize,
		"audit-webhook-batch-throttle-burst": c.AuditWebhookBatchThrottleBurst} {
		if v <= 0 {
			errs = append(errs, config.FieldErrorf(key, "must be positive"))
		}
	}
	if c.AuditWebhookBatchThrottleQPS <= 0 {
		errs = append(errs, config.FieldErrorf("audit-webhook-batch-throttle-qps", "must be positive"))
	}
	for key, v := range map[string]int{"audit-log-maxage": c.AuditLogMaxAge, "audit-log-maxbackup": c.AuditLogMaxBackup, "audit-log-maxsize": c.AuditLogMaxSize} {
		if v < 0 {
			errs = append(errs, config.FieldErrorf(key, "must not be negative, not %d", v))
		}
	}
	return errs
}

// startAudit loads the policy and opens the log; without --audit-policy-file nothing is
// audited (s.auditor stays nil).
func (s *Server) startAudit() error {
	c := &s.cfg.AuditConfig
	if c.AuditPolicyFile == "" {
		return nil
	}
	p, err := audit.LoadPolicy(c.AuditPolicyFile)
	if err != nil {
		return fmt.Errorf("apiserver: --audit-policy-file: %w", err)
	}
	var sinks audit.Sinks
	if c.AuditLogPath != "" {
		b, err := audit.NewLogBackend(audit.LogConfig{Path: c.AuditLogPath, Format: c.AuditLogFormat, MaxAgeDays: c.AuditLogMaxAge,
			MaxBackups: c.AuditLogMaxBackup, MaxSizeMB: c.AuditLogMaxSize, Mode: c.AuditLogMode, Compress: c.AuditLogCompress,
			BatchBufferSize: c.AuditLogBatchBufferSize, Logger: s.log,
			Truncate: audit.Truncate{Enabled: c.AuditLogTruncateEnabled, MaxEventSize: c.AuditLogTruncateMaxEventSize, MaxBatchSize: c.AuditLogTruncateMaxBatchSize}})
		if err != nil {
			return fmt.Errorf("apiserver: --audit-log-path: %w", err)
		}
		s.auditLog = b
		sinks = append(sinks, b)
	}
	if c.AuditWebhookConfigFile != "" {
		w, err := audit.NewWebhookBackend(audit.WebhookConfig{KubeconfigFile: c.AuditWebhookConfigFile, Mode: c.AuditWebhookMode,
			BatchBufferSize: c.AuditWebhookBatchBufferSize, BatchMaxSize: c.AuditWebhookBatchMaxSize, BatchMaxWait: c.AuditWebhookBatchMaxWait,
			InitialBackoff: c.AuditWebhookInitialBackoff, Logger: s.log,
			Throttle: c.AuditWebhookBatchThrottleEnable, ThrottleQPS: c.AuditWebhookBatchThrottleQPS, ThrottleBurst: c.AuditWebhookBatchThrottleBurst,
			Truncate: audit.Truncate{Enabled: c.AuditWebhookTruncateEnabled, MaxEventSize: c.AuditWebhookTruncateMaxEventSize, MaxBatchSize: c.AuditWebhookTruncateMaxBatchSize}})
		if err != nil {
			return fmt.Errorf("apiserver: --audit-webhook-config-file: %w", err)
		}
		s.auditWebhook = w
		sinks = append(sinks, w)
	}
	if len(sinks) == 1 {
		s.auditor = audit.New(p, sinks[0])
	} else {
		s.auditor = audit.New(p, sinks)
	}
	return nil
}

func (s *Server) closeAudit() {
	if s.auditLog != nil {
		if err := s.auditLog.Close(); err != nil {
			s.log.Warn("audit log close", "err", err)
		}
	}
	if s.auditWebhook != nil {
		if err := s.auditWebhook.Close(); err != nil {
			s.log.Warn("audit webhook close", "err", err)
		}
	}
}
