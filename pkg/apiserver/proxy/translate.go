package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	pfconst "k8s.io/apimachinery/pkg/util/portforward"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// kube-apiserver's values for the WebSocket side of a translated stream (the kubelet's own
// WebSocket server uses the same idle timeout) and the SPDY pings toward the kubelet.
const (
	wsIdleTimeout      = 4 * time.Hour
	wsStatusDeadline   = 10 * time.Second
	spdyPingPeriod     = 5 * time.Second
	tunnelReplyTimeout = 10 * time.Second
)

// Metrics count the WebSocket streams the apiserver translated to SPDY toward kubelets,
// with kube-apiserver's metric names.
type Metrics struct {
	// Translated counts exec and attach over WebSocket (v5.channel.k8s.io) by the HTTP code
	// the stream ended with.
	Translated *prometheus.CounterVec
	// Tunneled counts port-forward streams tunnelled in WebSocket by the code of the upgrade.
	Tunneled *prometheus.CounterVec
}

func newMetrics() *Metrics {
	return &Metrics{
		Translated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_stream_translator_requests_total",
			Help: "WebSocket exec and attach requests translated to SPDY toward the kubelet, by the code they ended with.",
		}, []string{"code"}),
		Tunneled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_stream_tunnel_requests_total",
			Help: "WebSocket port-forward requests tunnelling SPDY to the kubelet, by the code of the upgrade.",
		}, []string{"code"}),
	}
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Translated, m.Tunneled}
}

// streamOptions are the streams an exec or attach asked for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// streamTranslator serves an exec or attach that arrives as WebSocket (remote command
// protocol v5) by running it against the kubelet as SPDY, as kube-apiserver's
// StreamTranslatorHandler does: kubelets (and kwok) speak SPDY only. The WebSocket side is
// k8s.io/streaming's wsstream server, the SPDY side client-go's remotecommand executor.
type streamTranslator struct {
	location  *url.URL
	transport *http.Transport // dials the kubelet; its connections close with the request
	opts      streamOptions
	metrics   *Metrics
	tracker   *Tracker
}

func (h *streamTranslator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The stream ends when the client's WebSocket does: the connection is hijacked, so the
	// request's context no longer sees the client go.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ws := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		rcconst.StreamProtocolV5Name: {Binary: true, Channels: []wsstream.ChannelType{
			rcconst.StreamStdIn:  channelType(h.opts.stdin, wsstream.ReadChannel),
			rcconst.StreamStdOut: channelType(h.opts.stdout, wsstream.WriteChannel),
			rcconst.StreamStdErr: channelType(h.opts.stderr, wsstream.WriteChannel),
			rcconst.StreamErr:    wsstream.WriteChannel,
			rcconst.StreamResize: wsstream.ReadChannel,
		}},
	})
	ws.SetIdleTimeout(wsIdleTimeout)
	_, streams, err := ws.Open(&hijackWatcher{ResponseWriter: w, closed: cancel}, r)
	if err != nil {
		// The WebSocket library has answered the client.
		h.count(http.StatusBadRequest)
		return
	}
	defer ws.Close()
	h.tracker.add(1)
	defer h.tracker.add(-1)

	writeStatus := func(err *apierrors.StatusError) {
		b, _ := json.Marshal(err.Status())
		ws.SetWriteDeadline(wsStatusDeadline)
		_, _ = streams[rcconst.StreamErr].Write(b)
	}
	// An empty message on the lowest writable channel tells the client the stream is up.
	first := rcconst.StreamErr
	switch {
	case h.opts.stdout:
		first = rcconst.StreamStdOut
	case h.opts.stderr:
		first = rcconst.StreamStdErr
	}
	if _, err := streams[first].Write(nil); err != nil {
		h.count(http.StatusInternalServerError)
		return
	}

	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: h.transport, PingPeriod: spdyPingPeriod})
	if err == nil {
		var executor remotecommand.Executor
		executor, err = remotecommand.NewSPDYExecutorRejectRedirects(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, h.location)
		if err == nil {
			err = executor.StreamWithContext(ctx, h.streamOptions(ctx, streams))
		}
	}
	var statusErr *apierrors.StatusError
	var exitErr exec.CodeExitError
	switch {
	case err == nil:
		h.count(http.StatusOK)
		writeStatus(&apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusSuccess}})
	case errors.As(err, &statusErr):
		h.count(int(statusErr.Status().Code))
		writeStatus(statusErr)
	case errors.As(err, &exitErr) && exitErr.Exited():
		h.count(http.StatusOK)
		writeStatus(exitStatus(exitErr))
	default:
		h.count(http.StatusInternalServerError)
		writeStatus(apierrors.NewInternalError(err))
	}
}

// streamOptions connects the WebSocket channels to the SPDY executor's streams.
func (h *streamTranslator) streamOptions(ctx context.Context, streams []io.ReadWriteCloser) remotecommand.StreamOptions {
	var opts remotecommand.StreamOptions
	if h.opts.stdin {
		opts.Stdin = streams[rcconst.StreamStdIn]
	}
	if h.opts.stdout {
		opts.Stdout = streams[rcconst.StreamStdOut]
	}
	if h.opts.stderr {
		opts.Stderr = streams[rcconst.StreamStdErr]
	}
	if h.opts.tty {
		opts.Tty = true
		sizes := make(chan remotecommand.TerminalSize)
		go resizeEvents(ctx, streams[rcconst.StreamResize], sizes)
		opts.TerminalSizeQueue = sizeQueue(sizes)
	}
	return opts
}

func (h *streamTranslator) count(code int) {
	if h.metrics != nil {
		h.metrics.Translated.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

func channelType(on bool, t wsstream.ChannelType) wsstream.ChannelType {
	if on {
		return t
	}
	return wsstream.IgnoreChannel
}

// resizeEvents decodes the client's terminal sizes (JSON on the resize channel) into sizes
// until the channel or the stream ends.
func resizeEvents(ctx context.Context, stream io.Reader, sizes chan<- remotecommand.TerminalSize) {
	defer close(sizes)
	dec := json.NewDecoder(stream)
	for {
		var size remotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case sizes <- size:
		case <-ctx.Done():
			return
		}
	}
}

// sizeQueue is a remotecommand.TerminalSizeQueue fed by resizeEvents.
type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q
	if !ok {
		return nil
	}
	return &size
}

// exitStatus is the Status a v5 client reads as the command's exit code.
func exitStatus(err exec.CodeExitError) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Reason:  rcconst.NonZeroExitCodeReason,
		Message: fmt.Sprintf("command terminated with non-zero exit code: %v", err),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: rcconst.ExitCodeCauseType, Message: strconv.Itoa(err.ExitStatus()),
		}}},
	}}
}

// hijackWatcher hands the WebSocket library the client's connection and calls closed once
// that connection is closed.
type hijackWatcher struct {
	http.ResponseWriter
	closed func()
}

func (w *hijackWatcher) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &closeNotifyConn{Conn: conn, closed: w.closed}, rw, nil
}

func (w *hijackWatcher) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type closeNotifyConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *closeNotifyConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.closed)
	return err
}

// spdyTunnel serves a port-forward that arrives as WebSocket with the subprotocol
// "SPDY/3.1+portforward.k8s.io": the client speaks SPDY inside WebSocket messages, so the
// apiserver asks the kubelet for a SPDY upgrade and, when it switches, answers the WebSocket
// handshake with the protocol the kubelet chose and splices the SPDY bytes through, as
// kube-apiserver's TunnelingHandler does. client-go's TunnelingConnection is the WebSocket
// side as a net.Conn.
type spdyTunnel struct {
	upgrade *Handler
	metrics *Metrics
}

func (h *spdyTunnel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var protocols []string
	for _, p := range gwebsocket.Subprotocols(r) {
		if strings.HasPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix) && strings.HasSuffix(p, pfconst.KubernetesSuffix) {
			protocols = append(protocols, strings.TrimPrefix(p, pfconst.WebsocketsSPDYTunnelingPrefix))
		}
	}
	if len(protocols) == 0 {
		h.count(http.StatusBadRequest)
		writeStatus(w, apierrors.NewBadRequest("unable to upgrade: no tunneling spdy protocols provided"))
		return
	}
	out := r.Clone(r.Context())
	for _, k := range []string{"Sec-Websocket-Protocol", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions"} {
		out.Header.Del(k)
	}
	out.Method = http.MethodPost
	out.Body = http.NoBody
	out.ContentLength = 0
	out.Header.Set("Connection", "Upgrade")
	out.Header.Set("Upgrade", spdy.HeaderSpdy31)
	out.Header["X-Stream-Protocol-Version"] = protocols
	h.upgrade.serveUpgradeWith(w, out, func(resp *http.Response) (net.Conn, error) {
		if !strings.EqualFold(resp.Header.Get("Upgrade"), spdy.HeaderSpdy31) {
			h.count(http.StatusInternalServerError)
			err := errors.New("unable to upgrade: missing upgrade headers in response")
			writeStatus(w, unknownError(err))
			return nil, err
		}
		chosen := []string{}
		if p := strings.TrimSpace(resp.Header.Get("X-Stream-Protocol-Version")); p != "" {
			chosen = []string{pfconst.WebsocketsSPDYTunnelingPrefix + p}
		}
		up := gwebsocket.Upgrader{
			CheckOrigin:      func(*http.Request) bool { return true },
			Subprotocols:     chosen,
			HandshakeTimeout: tunnelReplyTimeout,
		}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			h.count(http.StatusInternalServerError)
			return nil, err // the upgrader has answered the client
		}
		h.count(http.StatusSwitchingProtocols)
		return portforward.NewTunnelingConnection("server", conn), nil
	}, func(code int) { h.count(code) })
}

func (h *spdyTunnel) count(code int) {
	if h.metrics != nil {
		h.metrics.Tunneled.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

// closeOnDone makes dial's connections close when the context they were dialled with ends,
// so that a kubelet that accepts and never answers cannot hold a translated stream after its
// client has gone.
func closeOnDone(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		context.AfterFunc(ctx, func() { conn.Close() })
		return conn, nil
	}
}
