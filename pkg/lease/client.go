package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// client reads and writes one Lease over the apiserver's REST API with plain net/http.
type client struct {
	creds *Credentials
	hc    *http.Client
	ns    string
	name  string
}

var (
	errNotFound = errors.New("lease: not found")
	errConflict = errors.New("lease: conflict")
)

func newClient(creds *Credentials, ns, name string) *client {
	tr := &http.Transport{
		TLSClientConfig:     creds.TLS,
		TLSHandshakeTimeout: 5 * time.Second,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	return &client{creds: creds, hc: &http.Client{Transport: tr}, ns: ns, name: name}
}

func (c *client) collection() string {
	return c.creds.Server + "/apis/coordination.k8s.io/v1/namespaces/" + url.PathEscape(c.ns) + "/leases"
}

func (c *client) do(ctx context.Context, method, u string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "vipd-lease")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.creds.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.creds.Token)
	}
	return c.hc.Do(req)
}

// result decodes a Lease from a 2xx answer, or turns the answer into an error.
func result(resp *http.Response, err error) (*coordinationv1.Lease, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, errNotFound
	case resp.StatusCode == http.StatusConflict:
		return nil, errConflict
	case resp.StatusCode/100 != 2:
		var st metav1.Status
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			return nil, fmt.Errorf("lease: apiserver answered %d: %s", resp.StatusCode, st.Message)
		}
		return nil, fmt.Errorf("lease: apiserver answered %d", resp.StatusCode)
	}
	var l coordinationv1.Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("lease: decode: %w", err)
	}
	return &l, nil
}

func (c *client) get(ctx context.Context) (*coordinationv1.Lease, error) {
	return result(c.do(ctx, http.MethodGet, c.collection()+"/"+url.PathEscape(c.name), nil))
}

// create creates the Lease; errConflict means someone else created it first.
func (c *client) create(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l.APIVersion, l.Kind = "coordination.k8s.io/v1", "Lease"
	l.Name, l.Namespace = c.name, c.ns
	return result(c.do(ctx, http.MethodPost, c.collection(), l))
}

// update replaces the Lease if its resourceVersion is still l's; errConflict otherwise.
func (c *client) update(ctx context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	l.APIVersion, l.Kind = "coordination.k8s.io/v1", "Lease"
	return result(c.do(ctx, http.MethodPut, c.collection()+"/"+url.PathEscape(c.name), l))
}

// watch calls changed with the Lease's state (nil once deleted) on every change, starting
// with the current one, until ctx ends or the stream breaks.
func (c *client) watch(ctx context.Context, changed func(*coordinationv1.Lease)) error {
	q := url.Values{}
	q.Set("watch", "true")
	q.Set("fieldSelector", "metadata.name="+c.name)
	resp, err := c.do(ctx, http.MethodGet, c.collection()+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("lease: watch: apiserver answered %d", resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string               `json:"type"`
			Object coordinationv1.Lease `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			return err
		}
		switch ev.Type {
		case "ERROR":
			return errors.New("lease: watch: the apiserver ended the watch")
		case "DELETED":
			changed(nil)
		case "ADDED", "MODIFIED":
			changed(&ev.Object)
		}
	}
}
