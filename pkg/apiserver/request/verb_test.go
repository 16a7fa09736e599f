package request

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestParseWatchSpellings: every spelling of the watch parameter gets the verb upstream's
// RequestInfoFactory gives it, the verb the handler then serves (IsWatch).
func TestParseWatchSpellings(t *testing.T) {
	for _, tc := range []struct {
		query, verb, name string
	}{
		{"", "list", ""},
		{"watch", "watch", ""},
		{"watch=", "watch", ""},
		{"watch=1", "watch", ""},
		{"watch=true", "watch", ""},
		{"watch=TRUE", "watch", ""},
		{"watch=yes", "watch", ""},
		{"watch=f", "watch", ""},
		{"watch=no", "watch", ""},
		{"watch=%20false", "watch", ""},
		{"watch=False", "list", ""},
		{"watch=FALSE", "list", ""},
		{"watch=0", "list", ""},
		{"watch=false", "list", ""},
		{"watch=00", "watch", ""},
		// the first value decides
		{"watch=false&watch=true", "list", ""},
		{"watch=true&watch=false", "watch", ""},
		{"watch=0&watch=1", "list", ""},
		{"watch&watch=false", "watch", ""},
		// Unicode case folding: "falſe" is false to the parameter codec, true to the fallback
		// that upstream uses when the query does not decode.
		{"watch=fal%C5%BFe", "list", ""},
		{"watch=fal%C5%BFe&limit=x", "watch", ""},
		{"watch=false&limit=x", "list", ""},
		{"watch=yes&limit=x", "watch", ""},
		// a metadata.name field selector names the object, unless the query does not decode
		{"watch=yes&fieldSelector=metadata.name%3Dcm", "watch", "cm"},
		{"fieldSelector=metadata.name%3Dcm", "list", "cm"},
		{"fieldSelector=metadata.name%3Dcm&limit=x", "list", ""},
		{"fieldSelector=metadata.name%3Dcm&labelSelector=%21%21", "list", ""},
		{"fieldSelector=metadata.name%3D..", "list", ""},
		{"fieldSelector=metadata.name%21%3Dcm", "list", ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/configmaps?"+tc.query, nil)
			info, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if info.Verb != tc.verb || info.Name != tc.name {
				t.Fatalf("verb %q name %q, want %q %q", info.Verb, info.Name, tc.verb, tc.name)
			}
			if got, want := IsWatch(r), tc.verb == "watch"; got != want {
				t.Fatalf("IsWatch = %v, want %v", got, want)
			}
			if got := IsWatch(r.WithContext(WithInfo(r.Context(), info))); got != (tc.verb == "watch") {
				t.Fatalf("IsWatch with the parsed Info = %v, want %v", got, tc.verb == "watch")
			}
		})
	}
}

// TestParseNameOnlyForListAndWatch: a field selector names the object of a list or watch
// only; a deletecollection with one stays nameless, as upstream.
func TestParseNameOnlyForListAndWatch(t *testing.T) {
	r := httptest.NewRequest("DELETE", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm", nil)
	info, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	if info.Verb != "deletecollection" || info.Name != "" {
		t.Fatalf("verb %q name %q, want deletecollection without a name", info.Verb, info.Name)
	}
}

// upstreamCollectionVerb transcribes upstream's RequestInfoFactory for a GET without a
// name (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go): the oracle of
// FuzzCollectionVerb.
func upstreamCollectionVerb(q url.Values) (verb, name string) {
	opts := metainternalversion.ListOptions{}
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		opts = metainternalversion.ListOptions{}
		if values := q["watch"]; len(values) > 0 {
			switch strings.ToLower(values[0]) {
			case "false", "0":
			default:
				opts.Watch = true
			}
		}
	}
	verb = "list"
	if opts.Watch {
		verb = "watch"
	}
	if opts.FieldSelector != nil {
		if n, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(n)) == 0 {
			name = n
		}
	}
	return verb, name
}

// FuzzCollectionVerb: collectionVerb, which decodes the query only when the outcome can
// change its answer, answers as upstream's full decode does, for any query.
func FuzzCollectionVerb(f *testing.F) {
	for _, q := range []string{"watch", "watch=", "watch=yes", "watch=False", "watch=fal%C5%BFe&limit=x",
		"fieldSelector=metadata.name%3Dcm&limit=x", "watch=0&watch=1", "fieldSelector=metadata.name%3Dcm,a%3Db", "timeoutSeconds=-1&watch=f"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		verb, name := collectionVerb(q)
		wantVerb, wantName := upstreamCollectionVerb(q)
		if verb != wantVerb || name != wantName {
			t.Fatalf("%q: %q %q, upstream %q %q", raw, verb, name, wantVerb, wantName)
		}
	})
}
