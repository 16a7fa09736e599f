package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestRequestHeader: with the generated PKI, a front proxy's client certificate (the
// front-proxy CA's, CN front-proxy-client) authenticates as the user its X-Remote-* headers
// name, as kube-apiserver's request-header authenticator; the same headers from any other
// client are ignored; and the settings are published for delegated authentication.
func TestRequestHeader(t *testing.T) {
	s := servertest.New(t, nil)
	ctx := context.Background()
	b := s.Certs()
	whoamiWith := func(rc *rest.Config, headers http.Header) (authenticationv1.UserInfo, error) {
		rc = rest.CopyConfig(rc)
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				for k, v := range headers {
					r.Header[k] = v
				}
				return rt.RoundTrip(r)
			})
		})
		res, err := kubernetes.NewForConfigOrDie(rc).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return res.Status.UserInfo, nil
	}
	proxy := rest.AnonymousClientConfig(servertest.RestConfig(t, s))
	proxy.CertFile, proxy.KeyFile = b.FrontProxyClientCert, b.FrontProxyClientKey
	headers := http.Header{"X-Remote-User": {"bob"}, "X-Remote-Group": {"devs", "ops"}, "X-Remote-Extra-Scopes": {"a", "b"},
		"X-Remote-Extra-Acme.com%2fproject": {"x"}}

	u, err := whoamiWith(proxy, headers)
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "bob" || !slices.Equal(u.Groups, []string{"devs", "ops", "system:authenticated"}) ||
		!slices.Equal(u.Extra["scopes"], authenticationv1.ExtraValue{"a", "b"}) || !slices.Equal(u.Extra["acme.com/project"], authenticationv1.ExtraValue{"x"}) {
		t.Fatalf("through the front proxy: %+v", u)
	}
	// The proxy's certificate without a user header is nobody.
	if _, err := whoamiWith(proxy, nil); err == nil {
		t.Fatal("front-proxy certificate without X-Remote-User was accepted")
	} else {
		isUnauthorized(t, err)
	}
	// A client certificate of the cluster CA cannot claim another user through the headers.
	u, err = whoamiWith(servertest.RestConfig(t, s), headers)
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "admin" || slices.Contains(u.Groups, "devs") {
		t.Fatalf("admin with X-Remote-* headers became %+v", u)
	}

	cm, err := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s)).CoreV1().ConfigMaps("kube-system").Get(ctx, server.AuthenticationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(k string) []string {
		var v []string
		if err := json.Unmarshal([]byte(cm.Data[k]), &v); err != nil {
			t.Fatalf("%s: %q: %v", k, cm.Data[k], err)
		}
		return v
	}
	if cm.Data["requestheader-client-ca-file"] != string(b.FrontProxyCAPEM) || cm.Data["client-ca-file"] != string(b.CAPEM) ||
		!slices.Equal(list("requestheader-allowed-names"), []string{"front-proxy-client"}) ||
		!slices.Equal(list("requestheader-username-headers"), []string{"X-Remote-User"}) ||
		!slices.Equal(list("requestheader-group-headers"), []string{"X-Remote-Group"}) ||
		!slices.Equal(list("requestheader-extra-headers-prefix"), []string{"X-Remote-Extra-"}) {
		t.Fatalf("published: %v", cm.Data)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
