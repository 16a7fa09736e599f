package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/openapi"
	openapiaggregator "k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// maxOpenAPIV2 bounds an extension server's /openapi/v2 document.
const maxOpenAPIV2 = 64 << 20

// openAPIV2 is an extension server's Swagger 2.0 document, cut down to its group version's
// paths and the definitions they use.
type openAPIV2 struct {
	etag string // the server's ETag, to ask again with If-None-Match
	spec *spec.Swagger
	gen  uint64 // changes with every new document
}

// mergedV2 is the /openapi/v2 document with the extension servers' merged in, for one
// local document and one set of extension documents.
type mergedV2 struct {
	key       string
	json      []byte
	hash      string
	modified  time.Time
	protoOnce sync.Once
	proto     []byte
	protoErr  error
}

func (m *mergedV2) toProto() ([]byte, error) {
	m.protoOnce.Do(func() { m.proto, m.protoErr = openapi.ProtoFromV2(m.json) })
	return m.proto, m.protoErr
}

// fetchOpenAPIV2 downloads the backend's /openapi/v2 document (when it changed) and keeps
// its group version's part, which /openapi/v2 then merges in, as kube-aggregator's OpenAPI
// controller does.
func (a *Aggregator) fetchOpenAPIV2(ctx context.Context, b *backend) {
	b.mu.Lock()
	prev := b.openapiV2
	b.mu.Unlock()
	doc, err := a.readOpenAPIV2(ctx, b, prev)
	if err != nil {
		a.log.Debug("aggregator: openapi v2", "apiservice", b.name, "err", err)
		return // keep the last one
	}
	b.mu.Lock()
	b.openapiV2 = doc
	b.mu.Unlock()
}

func (a *Aggregator) readOpenAPIV2(ctx context.Context, b *backend, prev *openAPIV2) (*openAPIV2, error) {
	host, err := a.resolve(ctx, b.spec.Service)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/openapi/v2", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", checkUser)
	req.Header.Set("X-Remote-Group", checkGroup)
	if prev != nil && prev.etag != "" {
		req.Header.Set("If-None-Match", prev.etag)
	}
	resp, err := checkClient(b).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && prev != nil {
		return prev, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi/v2: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxOpenAPIV2))
	if err != nil {
		return nil, fmt.Errorf("GET /openapi/v2: %w", err)
	}
	var sw spec.Swagger
	if err := json.Unmarshal(body, &sw); err != nil {
		return nil, fmt.Errorf("GET /openapi/v2: %w", err)
	}
	doc := &openAPIV2{etag: resp.Header.Get("Etag"), gen: a.openapiGen.Add(1),
		spec: openapiaggregator.FilterSpecByPathsWithoutSideEffects(&sw, []string{"/apis/" + b.gv.Group + "/" + b.gv.Version + "/"})}
	return doc, nil
}

// serveOpenAPIV2 answers /openapi/v2 with the available extension servers' documents merged
// into the local one (paths of the local document win; definitions that differ under one name
// are renamed, as kube-aggregator does), and reports whether it did.
func (a *Aggregator) serveOpenAPIV2(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
	type part struct {
		name string
		doc  *openAPIV2
	}
	var parts []part
	for _, b := range a.view.Load().byGV {
		b.mu.Lock()
		doc := b.openapiV2
		b.mu.Unlock()
		if b.available.Load() && doc != nil {
			parts = append(parts, part{b.name, doc})
		}
	}
	if len(parts) == 0 {
		return false
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].name < parts[j].name })
	local := unconditional(r)
	local.Header.Set("Accept", "application/json")
	rec := record(next, local)
	if rec.code != http.StatusOK {
		rec.replay(w)
		return true
	}
	var key strings.Builder
	key.WriteString(rec.header.Get("Etag"))
	for _, p := range parts {
		fmt.Fprintf(&key, " %s=%d", p.name, p.doc.gen)
	}
	merged := a.mergedV2.Load()
	if merged == nil || merged.key != key.String() {
		var sw spec.Swagger
		if err := json.Unmarshal(rec.body.Bytes(), &sw); err != nil {
			rec.replay(w)
			return true
		}
		// The merge records in a local definition the group-version-kinds an extension's
		// equal definition adds, and needs the extensions map for that.
		for name, d := range sw.Definitions {
			if d.Extensions == nil {
				d.Extensions = spec.Extensions{}
				sw.Definitions[name] = d
			}
		}
		for _, p := range parts {
			if err := openapiaggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(&sw, p.doc.spec); err != nil {
				a.log.Warn("aggregator: merge openapi v2", "apiservice", p.name, "err", err)
			}
		}
		body, err := json.Marshal(&sw)
		if err != nil {
			rec.replay(w)
			return true
		}
		merged = &mergedV2{key: key.String(), json: body, hash: openapi.Hash(body), modified: time.Now()}
		a.mergedV2.Store(merged)
	}
	openapi.ServeV2(w, r, merged.json, merged.hash, merged.toProto, merged.modified)
	return true
}
