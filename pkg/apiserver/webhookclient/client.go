// Package webhookclient calls the webhooks API objects name: admission webhooks and the
// conversion webhooks of CustomResourceDefinitions share the shape of their clientConfig
// (a URL or a service reference, and a caBundle) and how kube-apiserver dials it.
package webhookclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxResponse bounds what a webhook may answer, as upstream's 3 MiB.
const maxResponse = 3 << 20

// ServiceResolver turns a service reference into the host:port to dial.
type ServiceResolver func(ctx context.Context, namespace, name string, port int32) (string, error)

// Config is where a webhook is and whom to trust: URL or Service, and the CA bundle
// (the system roots when empty).
type Config struct {
	URL      *string
	Service  *Service
	CABundle []byte
}

// Service references a webhook served behind a Service; Port defaults to 443.
type Service struct {
	Namespace, Name string
	Path            *string
	Port            *int32
}

// Clients posts to webhooks, keeping one HTTP client per CA bundle and server name so that
// connections are reused.
type Clients struct {
	resolve ServiceResolver

	mu      sync.Mutex
	clients map[[32]byte]*http.Client
}

// New returns Clients that resolve service references with resolve.
func New(resolve ServiceResolver) *Clients {
	return &Clients{resolve: resolve, clients: map[[32]byte]*http.Client{}}
}

// Post sends body as JSON to the webhook and returns its answer. Only 200 is an answer:
// another status is an error carrying the status and body.
func (c *Clients) Post(ctx context.Context, cc Config, body []byte) ([]byte, error) {
	target, serverName, err := c.target(ctx, cc)
	if err != nil {
		return nil, err
	}
	client, err := c.client(cc.CABundle, serverName)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("received invalid webhook response status %d: %s", resp.StatusCode, bytes.TrimSpace(data))
	}
	return data, nil
}

// target is the URL to post to and the TLS server name to verify.
func (c *Clients) target(ctx context.Context, cc Config) (string, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil || u.Scheme != "https" {
			return "", "", fmt.Errorf("webhook url %q is not an https URL", *cc.URL)
		}
		return u.String(), u.Hostname(), nil
	}
	if cc.Service == nil {
		return "", "", errors.New("webhook has neither url nor service")
	}
	port := int32(443)
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	if c.resolve == nil {
		return "", "", errors.New("no service resolver")
	}
	hostPort, err := c.resolve(ctx, cc.Service.Namespace, cc.Service.Name, port)
	if err != nil {
		return "", "", err
	}
	path := ""
	if cc.Service.Path != nil {
		path = *cc.Service.Path
	}
	// The certificate is checked for the service's DNS name, as upstream.
	return "https://" + hostPort + path, cc.Service.Name + "." + cc.Service.Namespace + ".svc", nil
}

// client returns a client trusting caBundle (the system roots when empty) and verifying
// serverName.
func (c *Clients) client(caBundle []byte, serverName string) (*http.Client, error) {
	key := sha256.Sum256(append(append([]byte(serverName), 0), caBundle...))
	c.mu.Lock()
	defer c.mu.Unlock()
	if hc, ok := c.clients[key]; ok {
		return hc, nil
	}
	tlsCfg := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 10, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}}
	c.clients[key] = hc
	return hc, nil
}

// EndpointsResolver resolves a service to the first address of its Endpoints for the
// service port, or its ClusterIP when it has none: hacp has no cluster DNS, and a ClusterIP
// only works where something (kube-proxy) routes it.
func EndpointsResolver(getService, getEndpoints func(ctx context.Context, ns, name string) (runtime.Object, error)) ServiceResolver {
	return func(ctx context.Context, ns, name string, port int32) (string, error) {
		obj, err := getService(ctx, ns, name)
		if err != nil {
			return "", err
		}
		svc := obj.(*corev1.Service)
		var sp *corev1.ServicePort
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Port == port {
				sp = &svc.Spec.Ports[i]
			}
		}
		if sp == nil {
			return "", fmt.Errorf("service %s/%s has no port %d", ns, name, port)
		}
		if obj, err := getEndpoints(ctx, ns, name); err == nil {
			//lint:ignore SA1019 core/v1 Endpoints is what hacp's controllers keep for every service
			ep := obj.(*corev1.Endpoints)
			for _, ss := range ep.Subsets {
				for _, p := range ss.Ports {
					if p.Name == sp.Name && len(ss.Addresses) > 0 {
						return net.JoinHostPort(ss.Addresses[0].IP, strconv.Itoa(int(p.Port))), nil
					}
				}
			}
		}
		if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port))), nil
		}
		return "", fmt.Errorf("service %s/%s has no endpoints", ns, name)
	}
}
