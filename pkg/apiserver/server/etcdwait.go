package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// etcdDialTimeout bounds how long Start waits for one of --etcd-servers to answer before it
// gives up: kube-apiserver's own bound (the etcd3 storage factory's dialTimeout, which has no
// flag; --storage-initialization-timeout is something else, how long /readyz waits for the
// storage after start).
const etcdDialTimeout = 20 * time.Second

// etcdAttempt bounds one probe of one endpoint; the pause between rounds of probes starts
// at a second and doubles up to etcdAttempt*2.5, so that a long wait logs a few lines, not
// one a second.
const etcdAttempt = 2 * time.Second

// waitForEtcd probes each of endpoints with etcd's Status call, over connections with c's
// TLS, until one answers, and returns nil then. Until then it logs each failure with its
// endpoint and cause; after timeout (or when ctx ends) it returns an error that names every
// endpoint and what went wrong with it (an x509 error, a refused connection, ...), which is
// what an operator has to fix, where kube-apiserver says only "context deadline exceeded".
func waitForEtcd(ctx context.Context, c *clientv3.Client, tlsCfg *tls.Config, endpoints []string, timeout time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conns := make([]*grpc.ClientConn, len(endpoints))
	defer func() {
		for _, conn := range conns {
			if conn != nil {
				conn.Close()
			}
		}
	}()
	causes := make([]string, len(endpoints))
	for pause := time.Second; ; pause = min(2*pause, etcdAttempt*5/2) {
		for i, ep := range endpoints {
			err := probeEtcd(ctx, c, &conns[i], ep)
			if err == nil {
				return nil
			}
			if ctx.Err() != nil && causes[i] != "" {
				continue // the wait, not the endpoint, ran out
			}
			cause := etcdCause(err)
			if !strings.Contains(cause, "tls:") {
				if tlsCause := tlsRefusal(ctx, ep, tlsCfg); tlsCause != "" {
					cause = tlsCause + " (gRPC saw: " + cause + ")"
				}
			}
			causes[i] = cause
			log.Warn("etcd not reachable yet, retrying", "endpoint", ep, "err", cause, "gives-up-in", time.Until(deadlineOf(ctx)).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return etcdUnreachable(endpoints, causes, timeout, ctx.Err())
		case <-time.After(pause):
		}
	}
}

// probeEtcd asks the member at ep for its status over *conn, dialled on first use, and
// fails at once (not waiting for the connection to become ready) if it cannot connect.
func probeEtcd(ctx context.Context, c *clientv3.Client, conn **grpc.ClientConn, ep string) error {
	if *conn == nil {
		cc, err := c.Dial(ep)
		if err != nil {
			return err
		}
		*conn = cc
	}
	ctx, cancel := context.WithTimeout(ctx, etcdAttempt)
	defer cancel()
	_, err := pb.NewMaintenanceClient(*conn).Status(ctx, &pb.StatusRequest{}, grpc.WaitForReady(false))
	return err
}

// tlsRefusal returns, for an https endpoint, what etcd's TLS says when the apiserver
// connects with tlsCfg and sends nothing: a refused client certificate shows as a TLS alert
// only after the handshake (TLS 1.3), and gRPC, writing at once, usually sees just a broken
// pipe or a reset. It returns "" when TLS has nothing to say.
func tlsRefusal(ctx context.Context, ep string, tlsCfg *tls.Config) string {
	u, err := url.Parse(ep)
	if err != nil || u.Scheme != "https" || tlsCfg == nil {
		return ""
	}
	cfg := tlsCfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	ctx, cancel := context.WithTimeout(ctx, etcdAttempt)
	defer cancel()
	conn, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		if strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:") {
			return err.Error()
		}
		return ""
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	if _, err := conn.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "tls:") {
		return err.Error()
	}
	return ""
}

// etcdCause is err as an operator reads it: gRPC's description of why it could not connect,
// without the status code and wrappers around it.
func etcdCause(err error) string {
	s, ok := status.FromError(err)
	if !ok {
		return err.Error()
	}
	msg, balancer := strings.CutPrefix(s.Message(), "latest balancer error: ")
	if !balancer && s.Code() == codes.DeadlineExceeded {
		return fmt.Sprintf("no answer within %s", etcdAttempt)
	}
	if desc, ok := strings.CutPrefix(msg, "connection error: desc = "); ok {
		if unquoted, err := strconv.Unquote(desc); err == nil {
			return unquoted
		}
	}
	return msg
}

// etcdUnreachable is Start's error when no endpoint answered: each endpoint with the
// causes seen, and a hint at the setting to check.
func etcdUnreachable(endpoints []string, causes []string, timeout time.Duration, ctxErr error) error {
	var b strings.Builder
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		fmt.Fprintf(&b, "no etcd server reachable after %s:", timeout)
	} else {
		b.WriteString("stopped waiting for etcd:")
	}
	for i, ep := range endpoints {
		fmt.Fprintf(&b, " %s: %s", ep, causes[i])
		if hint := etcdHint(ep, causes[i]); hint != "" {
			fmt.Fprintf(&b, " (%s)", hint)
		}
		if i < len(endpoints)-1 {
			b.WriteString(";")
		}
	}
	return errors.New(b.String())
}

// etcdHint names the setting an endpoint's causes point at, or "".
func etcdHint(ep, cause string) string {
	switch {
	case strings.Contains(cause, "x509:"):
		return "is --etcd-cafile the CA that signed etcd's serving certificate, for this host name or IP?"
	case strings.Contains(cause, "remote error: tls:"):
		return "etcd refused the client certificate: is --etcd-certfile signed by the CA etcd trusts (its --trusted-ca-file)?"
	case strings.HasPrefix(ep, "http://") && strings.Contains(cause, "server preface"):
		return "etcd closed a plain-HTTP connection: if it serves TLS, use https:// with --etcd-cafile, --etcd-certfile and --etcd-keyfile"
	case strings.Contains(cause, "connection refused"):
		return "is etcd running and listening at this address?"
	}
	return ""
}

// deadlineOf is ctx's deadline (ctx has one).
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
