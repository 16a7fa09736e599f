package server

import (
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"
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
// connections closed after idle (defaultIdleTimeout when 0; HTTP/2 takes it from the
// server too), a bound on reading headers, and HTTP/2 with upstream's stream limit and
// buffers (net/http's own HTTP/2, as x/net's http2.ConfigureServer is deprecated).
func newSecureServer(h http.Handler, tlsCfg *tls.Config, idle time.Duration, log *slog.Logger) *http.Server {
	if idle <= 0 {
		idle = defaultIdleTimeout
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsCfg,
		IdleTimeout:       idle,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          http2MaxStreams,
			MaxReadFrameSize:              http2StreamBuffer,
			MaxReceiveBufferPerStream:     http2StreamBuffer,
			MaxReceiveBufferPerConnection: http2StreamBuffer * http2MaxStreams,
		},
	}
}
