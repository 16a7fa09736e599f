package openapi

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
)

// Media types of /openapi/v2, as kube-openapi's handler offers them.
const (
	subTypeJSON                 = "json"
	subTypeProtobufV2           = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	subTypeProtobufV2Deprecated = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	contentTypeProtobufV2       = "application/" + subTypeProtobufV2
)

// toProto converts the v2 JSON document to the gnostic protobuf encoding.
func toProto(v2 []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse v2 for protobuf: %w", err)
	}
	data, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v2 protobuf: %w", err)
	}
	return data, nil
}

// Service serves /openapi/v2, /openapi/v3 and /openapi/v3/{group-version}
// from the current Spec. Update swaps the Spec atomically (for example when
// a CustomResourceDefinition is added); requests in flight finish with the
// Spec they started with.
type Service struct {
	spec     atomic.Pointer[Spec]
	modified atomic.Pointer[time.Time]
}

// NewService returns a Service serving s.
func NewService(s *Spec) *Service {
	svc := &Service{}
	svc.Update(s)
	return svc
}

// Update replaces the served Spec. Its documents are rendered by the first request for
// them: several MB of JSON that a server nobody asks for them need not hold.
func (svc *Service) Update(s *Spec) {
	now := time.Now()
	svc.spec.Store(s)
	svc.modified.Store(&now)
}

// Spec returns the served Spec.
func (svc *Service) Spec() *Spec { return svc.spec.Load() }

// Handler returns a handler serving s alone (see Service for updates).
func (s *Spec) Handler() http.Handler { return NewService(s) }

// ServeHTTP implements http.Handler for the paths /openapi/v2, /openapi/v3
// and /openapi/v3/{path}; anything else is 404.
func (svc *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s, modified := svc.spec.Load(), *svc.modified.Load()
	if err := s.Render(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	switch path := r.URL.Path; {
	case path == "/openapi/v2":
		svc.serveV2(w, r, s, modified)
	case path == "/openapi/v3" || path == "/openapi/v3/":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Etag", strconv.Quote(hash(s.v3Root)))
		http.ServeContent(w, r, "", modified, bytes.NewReader(s.v3Root))
	case strings.HasPrefix(path, "/openapi/v3/"):
		svc.serveV3(w, r, s, strings.TrimPrefix(path, "/openapi/v3/"), modified)
	default:
		http.NotFound(w, r)
	}
}

// accepts reports the first clause of the Accept header (by preference)
// that one of the offered subtypes of "application" matches, or "" if none.
func accepts(r *http.Request, offered ...string) string {
	header := r.Header.Get("Accept")
	if header == "" {
		header = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(header) {
		if clause.Type != "application" && clause.Type != "*" {
			continue
		}
		for _, sub := range offered {
			if clause.SubType == sub || clause.SubType == "*" {
				return sub
			}
		}
	}
	return ""
}

func (svc *Service) serveV2(w http.ResponseWriter, r *http.Request, s *Spec, modified time.Time) {
	ServeV2(w, r, s.v2, s.v2Hash, s.V2Proto, modified)
}

// ServeV2 answers a GET of /openapi/v2 with doc (the JSON document whose hash is etag), or
// with its protobuf form from toProto, as the Accept header asks (kube-openapi's handler
// offers both).
func ServeV2(w http.ResponseWriter, r *http.Request, doc []byte, etag string, toProto func() ([]byte, error), modified time.Time) {
	w.Header().Add("Vary", "Accept")
	var data []byte
	switch accepts(r, subTypeJSON, subTypeProtobufV2Deprecated, subTypeProtobufV2) {
	case subTypeJSON:
		data = doc
		w.Header().Set("Content-Type", "application/json")
	case subTypeProtobufV2, subTypeProtobufV2Deprecated:
		var err error
		if data, err = toProto(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", contentTypeProtobufV2)
	default:
		http.Error(w, "not acceptable: /openapi/v2 serves application/json and "+contentTypeProtobufV2, http.StatusNotAcceptable)
		return
	}
	// The JSON hash serves as ETag for both encodings: Vary keeps caches apart.
	w.Header().Set("Etag", strconv.Quote(etag))
	http.ServeContent(w, r, "", modified, bytes.NewReader(data))
}

// ProtoFromV2 converts a v2 JSON document to the gnostic protobuf encoding.
func ProtoFromV2(v2 []byte) ([]byte, error) { return toProto(v2) }

// Hash is the hash /openapi/v2 and /openapi/v3 use as ETag.
func Hash(data []byte) string { return hash(data) }

func (svc *Service) serveV3(w http.ResponseWriter, r *http.Request, s *Spec, gvPath string, modified time.Time) {
	w.Header().Add("Vary", "Accept")
	d, ok := s.v3[gvPath]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if accepts(r, subTypeJSON) == "" {
		http.Error(w, "not acceptable: /openapi/v3 serves application/json", http.StatusNotAcceptable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", strconv.Quote(d.hash))
	if h := r.URL.Query().Get("hash"); h != "" {
		if h != d.hash {
			// A client holding an old discovery document: send it to the
			// current one, as upstream does.
			http.Redirect(w, r, "/openapi/v3/"+gvPath+"?hash="+d.hash, http.StatusMovedPermanently)
			return
		}
		w.Header().Set("Cache-Control", "public, immutable")
		w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
	}
	http.ServeContent(w, r, "", modified, bytes.NewReader(d.data))
}
