package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// The secure server's connection limits, kube-apiserver's (k8s.io/apiserver's
// SecureServingInfo.Serve).
const (
	// defaultIdleTimeout closes keep-alive connections (HTTP/1.1 and HTTP/2) idle this
	// long: http.DefaultTransport's keep-alive timeout, so clients close first.
	defaultIdleTimeout = 90 * time.Second
	// readHeaderTimeout is just shy of upstream's request timeout upper bound.
	readHeaderTimeout = 32 * time.Second
	// http2MaxStreams matches the concurrent streams clients open (http2's initial
	// setting), so a client cannot open hundreds of streams before it is told the limit.
	http2MaxStreams = 100
	// http2StreamBuffer (and frame size) fits 99% of API objects in one frame, small
	// enough to be multiplied by http2MaxStreams for the connection's buffer.
	http2StreamBuffer = 256 << 10
)

// newSecureServer is the HTTPS server of h as kube-apiserver configures its own: idle
// connections closed after idle (defaultIdleTimeout when 0), a bound on reading headers,
// and HTTP/2 with upstream's stream limit and buffers. tlsCfg gets HTTP/2's protocol.
func newSecureServer(h http.Handler, tlsCfg *tls.Config, idle time.Duration, log *slog.Logger) (*http.Server, error) {
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsCfg,
		IdleTimeout:       idle,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	h2 := &http2.Server{
		IdleTimeout:                  idle,
		MaxConcurrentStreams:         http2MaxStreams,
		MaxUploadBufferPerStream:     http2StreamBuffer,
		MaxUploadBufferPerConnection: http2StreamBuffer * http2MaxStreams,
		MaxReadFrameSize:             http2StreamBuffer,
	}
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return nil, fmt.Errorf("apiserver: configure HTTP/2: %w", err)
	}
	return srv, nil
}
