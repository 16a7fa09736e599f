package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The identity the availability and discovery checks use (upstream's).
const (
	checkUser  = "system:kube-aggregator"
	checkGroup = "system:masters"
)

// acceptAggregated asks for aggregated discovery, v2 first.
const acceptAggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

// keepChecking checks every service-backed APIService every CheckInterval, and at once
// when one changes or a proxied request fails, until ctx ends.
func (a *Aggregator) keepChecking(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-a.synced:
	}
	t := time.NewTicker(a.cfg.CheckInterval)
	defer t.Stop()
	for {
		a.checkAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.checkNow:
		}
	}
}

func (a *Aggregator) checkAll(ctx context.Context) {
	a.mu.Lock()
	type job struct {
		s *apiregistration.APIService
		b *backend
	}
	var jobs []job
	for name, b := range a.backends {
		if s := a.known[name]; s != nil {
			jobs = append(jobs, job{s, b})
		}
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			cond := a.availability(ctx, j.s, j.b)
			ok := cond.Status == apiregistration.ConditionTrue
			if ok {
				a.fetchDiscovery(ctx, j.b)
				a.fetchOpenAPIV3(ctx, j.b)
				a.fetchOpenAPIV2(ctx, j.b)
			}
			j.b.setAvailable(ok)
			if err := a.setCondition(ctx, j.s, cond); err != nil && ctx.Err() == nil {
				a.log.Warn("aggregator: apiservice status", "apiservice", j.s.Name, "err", err)
			}
		})
	}
	wg.Wait()
}

// availability is kube-aggregator's remote availability check: the Service, its port and
// endpoints must exist, and the server must answer its group version's discovery.
func (a *Aggregator) availability(ctx context.Context, s *apiregistration.APIService, b *backend) apiregistration.APIServiceCondition {
	ref := s.Spec.Service
	cond := apiregistration.APIServiceCondition{Type: apiregistration.Available, Status: apiregistration.ConditionFalse}
	fail := func(status apiregistration.ConditionStatus, reason, format string, args ...any) apiregistration.APIServiceCondition {
		cond.Status, cond.Reason, cond.Message = status, reason, fmt.Sprintf(format, args...)
		return cond
	}
	obj, err := a.services.Get(ctx, ref.Namespace, ref.Name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fail(apiregistration.ConditionFalse, "ServiceNotFound", "service/%s in %q is not present", ref.Name, ref.Namespace)
	} else if err != nil {
		return fail(apiregistration.ConditionUnknown, "ServiceAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
	}
	svc := obj.(*corev1.Service)
	port := int32(443)
	if ref.Port != nil {
		port = *ref.Port
	}
	if svc.Spec.Type == corev1.ServiceTypeClusterIP {
		portName, found := "", false
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				portName, found = p.Name, true
				break
			}
		}
		if !found {
			return fail(apiregistration.ConditionFalse, "ServicePortError", "service/%s in %q is not listening on port %d", ref.Name, ref.Namespace, port)
		}
		obj, err := a.endpoints.Get(ctx, ref.Namespace, ref.Name, &metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fail(apiregistration.ConditionFalse, "EndpointsNotFound", "cannot find endpoints for service/%s in %q", ref.Name, ref.Namespace)
		} else if err != nil {
			return fail(apiregistration.ConditionUnknown, "EndpointsAccessError", "service/%s in %q cannot be checked due to: %v", ref.Name, ref.Namespace, err)
		}
		//lint:ignore SA1019 upstream's availability check reads core/v1 Endpoints
		eps := obj.(*corev1.Endpoints)
		active := false
		for _, ss := range eps.Subsets {
			for _, p := range ss.Ports {
				active = active || (len(ss.Addresses) > 0 && p.Name == portName)
			}
		}
		if !active {
			return fail(apiregistration.ConditionFalse, "MissingEndpoints", "endpoints for service/%s in %q have no addresses with port name %q", ref.Name, ref.Namespace, portName)
		}
	}
	if b.err != nil {
		return fail(apiregistration.ConditionFalse, "FailedDiscoveryCheck", "%v", b.err)
	}
	// As upstream: five tries at once (each may pick another endpoint); one success will do.
	const attempts = 5
	results := make(chan error, attempts)
	for range attempts {
		go func() { results <- a.discoveryCheck(ctx, s, b) }()
	}
	var lastErr error
	for range attempts {
		if lastErr = <-results; lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		return fail(apiregistration.ConditionFalse, "FailedDiscoveryCheck", "%v", lastErr)
	}
	cond.Status, cond.Reason, cond.Message = apiregistration.ConditionTrue, "Passed", "all checks passed"
	return cond
}

// checkClient is how the checks talk to a backend: quickly, never following redirects.
func checkClient(b *backend) *http.Client {
	return &http.Client{Transport: b.transport, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (a *Aggregator) discoveryCheck(ctx context.Context, s *apiregistration.APIService, b *backend) error {
	host, err := a.resolve(ctx, s.Spec.Service)
	if err != nil {
		return err
	}
	u := "https://" + host + "/apis/" + s.Spec.Group + "/" + s.Spec.Version
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Remote-User", checkUser)
	req.Header.Set("X-Remote-Group", checkGroup)
	resp, err := checkClient(b).Do(req)
	if err != nil {
		return fmt.Errorf("failing or missing response from %v: %w", u, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices {
		return fmt.Errorf("bad status from %v: %d", u, resp.StatusCode)
	}
	return nil
}

// fetchDiscovery reads the backend's aggregated discovery and keeps its entry for the
// APIService's group version; a failure keeps the last one, marked stale.
func (a *Aggregator) fetchDiscovery(ctx context.Context, b *backend) {
	entry, err := a.readDiscovery(ctx, b)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		a.log.Debug("aggregator: discovery", "apiservice", b.name, "err", err)
		b.stale = true
		return
	}
	b.discovery, b.stale = entry, false
}

func (a *Aggregator) readDiscovery(ctx context.Context, b *backend) (*apidiscoveryv2.APIVersionDiscovery, error) {
	host, err := a.resolve(ctx, b.spec.Service)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/apis", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", acceptAggregated)
	req.Header.Set("X-Remote-User", checkUser)
	req.Header.Set("X-Remote-Group", checkGroup)
	resp, err := checkClient(b).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /apis: status %d", resp.StatusCode)
	}
	if !strings.Contains(resp.Header.Get("Content-Type"), "as=APIGroupDiscoveryList") {
		return nil, fmt.Errorf("GET /apis: not aggregated discovery (%s)", resp.Header.Get("Content-Type"))
	}
	var list apidiscoveryv2.APIGroupDiscoveryList // v2beta1 has the same shape
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET /apis: %w", err)
	}
	for _, g := range list.Items {
		if g.Name != b.gv.Group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == b.gv.Version {
				return &v, nil
			}
		}
	}
	return &apidiscoveryv2.APIVersionDiscovery{Version: b.gv.Version}, nil
}

// fetchOpenAPIV3 reads the backend's /openapi/v3 index and keeps the URL of its group
// version's document, which /openapi/v3 then lists (the document itself is proxied).
func (a *Aggregator) fetchOpenAPIV3(ctx context.Context, b *backend) {
	url, err := a.readOpenAPIV3(ctx, b)
	if err != nil {
		a.log.Debug("aggregator: openapi v3", "apiservice", b.name, "err", err)
		return // keep the last one
	}
	b.mu.Lock()
	b.openapiV3 = url
	b.mu.Unlock()
}

func (a *Aggregator) readOpenAPIV3(ctx context.Context, b *backend) (string, error) {
	host, err := a.resolve(ctx, b.spec.Service)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/openapi/v3", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", checkUser)
	req.Header.Set("X-Remote-Group", checkGroup)
	resp, err := checkClient(b).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /openapi/v3: status %d", resp.StatusCode)
	}
	var index openAPIV3Index
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&index); err != nil {
		return "", fmt.Errorf("GET /openapi/v3: %w", err)
	}
	return index.Paths["apis/"+b.gv.Group+"/"+b.gv.Version].ServerRelativeURL, nil
}

// openAPIV3Index is the /openapi/v3 document: a URL per group version.
type openAPIV3Index struct {
	Paths map[string]openAPIV3Path `json:"paths"`
}

type openAPIV3Path struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}
