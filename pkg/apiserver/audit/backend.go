package audit

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Sink receives the events of every request. Process must not keep ev: the filter reuses it
// for the request's next stage.
type Sink interface {
	Process(ev *Event)
}

// Log formats and modes (kube-apiserver's --audit-log-format and --audit-log-mode).
const (
	FormatJSON   = "json"
	FormatLegacy = "legacy"
	ModeBlocking = "blocking"
	ModeBatch    = "batch"
)

// DefaultMaxSizeMB is the size a log file is rotated at when LogConfig.MaxSizeMB is 0, as
// kube-apiserver's (lumberjack's default).
const DefaultMaxSizeMB = 100

// DefaultLogBatchBufferSize is how many events batch mode holds before it drops them
// (upstream's --audit-log-batch-buffer-size default).
const DefaultLogBatchBufferSize = 10000

// LogConfig configures the log backend.
type LogConfig struct {
	// Path is the log file; "-" is standard output (never rotated).
	Path string
	// Format is FormatJSON (one audit.k8s.io/v1 Event per line) or FormatLegacy (one
	// "AUDIT: id=... stage=..." line per event).
	Format string
	// MaxAgeDays removes rotated files older than this many days (0: keep).
	MaxAgeDays int
	// MaxBackups keeps at most this many rotated files (0: all).
	MaxBackups int
	// MaxSizeMB rotates the file before it grows past this many megabytes (0: 100).
	MaxSizeMB int
	// Compress gzips rotated files (NAME.gz), as kube-apiserver's --audit-log-compress.
	Compress bool
	// Mode is ModeBlocking (each request writes its events before it goes on) or
	// ModeBatch (a goroutine writes them; up to BatchBufferSize wait, more are dropped
	// and logged).
	Mode string
	// BatchBufferSize is how many events batch mode holds (0: 10000).
	BatchBufferSize int
	// Truncate limits the size of each event (JSON format; off by default, as upstream).
	Truncate Truncate
	// Logger reports write errors and dropped events.
	Logger *slog.Logger
}

// LogBackend writes events to a file, rotating it by size.
type LogBackend struct {
	cfg    LogConfig
	mu     sync.Mutex // serializes writes in blocking mode, and Close
	w      io.Writer
	closer io.Closer
	closed bool
	batch  *batchQueue // batch mode: the writer's queue
}

// NewLogBackend opens (creating, mode 0600) the log file.
func NewLogBackend(cfg LogConfig) (*LogBackend, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Format == "" {
		cfg.Format = FormatJSON
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeBlocking
	}
	b := &LogBackend{cfg: cfg}
	if cfg.Path == "-" {
		b.w = os.Stdout
	} else {
		maxSize := cfg.MaxSizeMB
		if maxSize == 0 {
			maxSize = DefaultMaxSizeMB
		}
		rf := &rotatingFile{path: cfg.Path, maxSize: int64(maxSize) << 20, maxBackups: cfg.MaxBackups,
			maxAge: time.Duration(cfg.MaxAgeDays) * 24 * time.Hour, compress: cfg.Compress, logger: cfg.Logger}
		if err := rf.open(); err != nil {
			return nil, err
		}
		b.w, b.closer = rf, rf
	}
	if cfg.Mode == ModeBatch {
		size := cfg.BatchBufferSize
		if size <= 0 {
			size = DefaultLogBatchBufferSize
		}
		b.batch = startBatchQueue(size, "audit", cfg.Logger, b.drain)
	}
	return b, nil
}

// Process implements Sink.
func (b *LogBackend) Process(ev *Event) {
	line, err := b.encode(ev)
	if err != nil {
		b.cfg.Logger.Error("audit: event dropped", "auditID", ev.AuditID, "err", err)
		return
	}
	if b.batch != nil {
		b.batch.put(line)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.write(line)
}

func (b *LogBackend) write(line []byte) {
	if _, err := b.w.Write(line); err != nil {
		b.cfg.Logger.Error("audit: cannot write the log", "path", b.cfg.Path, "err", err)
	}
}

func (b *LogBackend) drain(lines <-chan []byte) {
	for line := range lines {
		b.write(line)
	}
}

// Close writes what batch mode still holds and closes the file.
func (b *LogBackend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	if b.batch != nil {
		b.batch.close()
	}
	if b.closer != nil {
		return b.closer.Close()
	}
	return nil
}

func (b *LogBackend) encode(ev *Event) ([]byte, error) {
	if b.cfg.Format == FormatLegacy {
		return []byte(legacyLine(ev) + "\n"), nil
	}
	data, err := b.cfg.Truncate.encode(ev)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// legacyLine is upstream's legacy format (audit.EventString).
func legacyLine(ev *Event) string {
	username, groups := "<none>", "<none>"
	if ev.User.Username != "" {
		username = ev.User.Username
		if len(ev.User.Groups) > 0 {
			groups = quoteList(ev.User.Groups)
		}
	}
	asuser, asgroups := "<self>", "<lookup>"
	if ev.ImpersonatedUser != nil {
		asuser = ev.ImpersonatedUser.Username
		if ev.ImpersonatedUser.Groups != nil {
			asgroups = quoteList(ev.ImpersonatedUser.Groups)
		}
	}
	namespace := "<none>"
	if ev.ObjectRef != nil && ev.ObjectRef.Namespace != "" {
		namespace = ev.ObjectRef.Namespace
	}
	response := "<deferred>"
	if ev.ResponseStatus != nil {
		response = strconv.Itoa(int(ev.ResponseStatus.Code))
	}
	ip := "<unknown>"
	if len(ev.SourceIPs) > 0 {
		ip = ev.SourceIPs[0]
	}
	return fmt.Sprintf("%s AUDIT: id=%q stage=%q ip=%q method=%q user=%q groups=%q as=%q asgroups=%q user-agent=%q namespace=%q uri=%q response=\"%s\"",
		ev.RequestReceivedTimestamp.Format(time.RFC3339Nano), ev.AuditID, ev.Stage, ip, ev.Verb, username, groups, asuser, asgroups, ev.UserAgent, namespace, ev.RequestURI, response)
}

func quoteList(in []string) string {
	q := make([]string, len(in))
	for i, s := range in {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ",")
}

// rotatingFile is an append-only file that is renamed to name-TIMESTAMP.ext (UTC, as
// lumberjack, which kube-apiserver uses, names them) before a write would take it past
// maxSize; then the oldest rotated files beyond maxBackups or older than maxAge go.
type rotatingFile struct {
	path       string
	maxSize    int64
	maxBackups int
	maxAge     time.Duration
	compress   bool
	logger     *slog.Logger
	f          *os.File
	size       int64
	gzipping   sync.WaitGroup // rotated files being compressed
	mill       sync.Mutex     // one compression (and the pruning after it) at a time
}

const backupTimeFormat = "2006-01-02T15-04-05.000"

func (r *rotatingFile) open() error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o700); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	r.f, r.size = f, st.Size()
	return nil
}

func (r *rotatingFile) Write(p []byte) (int, error) {
	if r.f == nil {
		return 0, errors.New("audit: log file closed")
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) Close() error {
	defer r.gzipping.Wait()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// gzipFile compresses name to name.gz (mode 0600) and removes name, as lumberjack does.
func gzipFile(name string) error {
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(name+".gz", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		os.Remove(name + ".gz")
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		os.Remove(name + ".gz")
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(name + ".gz")
		return err
	}
	return os.Remove(name)
}

func (r *rotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("audit: close %s: %w", r.path, err)
	}
	r.f = nil
	dir, base := filepath.Split(r.path)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	stamp := time.Now().UTC()
	name := filepath.Join(dir, prefix+stamp.Format(backupTimeFormat)+ext)
	for i := 0; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		stamp = stamp.Add(time.Millisecond) // two rotations in one millisecond
		name = filepath.Join(dir, prefix+stamp.Format(backupTimeFormat)+ext)
	}
	if err := os.Rename(r.path, name); err != nil {
		return fmt.Errorf("audit: rotate %s: %w", r.path, err)
	}
	if err := r.open(); err != nil {
		return err
	}
	if r.compress {
		r.gzipping.Add(1)
		go func() {
			defer r.gzipping.Done()
			r.mill.Lock()
			defer r.mill.Unlock()
			if err := gzipFile(name); err != nil && r.logger != nil {
				r.logger.Error("audit: cannot compress a rotated log", "file", name, "err", err)
			}
			r.prune(dir, prefix, ext)
		}()
		return nil
	}
	r.prune(dir, prefix, ext)
	return nil
}

// prune removes rotated files beyond maxBackups and older than maxAge.
func (r *rotatingFile) prune(dir, prefix, ext string) {
	if r.maxBackups <= 0 && r.maxAge <= 0 {
		return
	}
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type backup struct {
		name string
		at   time.Time
	}
	var backups []backup
	for _, e := range entries {
		n := e.Name()
		stamp := strings.TrimSuffix(n, ".gz")
		if e.IsDir() || !strings.HasPrefix(stamp, prefix) || !strings.HasSuffix(stamp, ext) {
			continue
		}
		at, err := time.Parse(backupTimeFormat, strings.TrimSuffix(strings.TrimPrefix(stamp, prefix), ext))
		if err != nil {
			continue
		}
		backups = append(backups, backup{n, at})
	}
	sort.Slice(backups, func(i, j int) bool { return backups[i].at.After(backups[j].at) })
	cutoff := time.Now().Add(-r.maxAge)
	for i, b := range backups {
		if (r.maxBackups > 0 && i >= r.maxBackups) || (r.maxAge > 0 && b.at.Before(cutoff)) {
			_ = os.Remove(filepath.Join(dir, b.name))
		}
	}
}
