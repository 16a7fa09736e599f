package authn

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/request"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestParseTokenCSV(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]request.User
		err      string
	}{
		{"upstream format", "tok1,alice,1,\"dev,ops\"\ntok2,bob,2\n\n tok3, carol, 3,\n", map[string]request.User{
			"tok1": {Name: "alice", UID: "1", Groups: []string{"dev", "ops"}},
			"tok2": {Name: "bob", UID: "2"},
			"tok3": {Name: "carol", UID: "3"},
		}, ""},
		{"too few columns", "tok1,alice,1\ntok2,bob\n", nil, "tokens.csv:2: want at least 3 columns"},
		{"empty token", "tok1,alice,1\n\n,bob,2\n", nil, "tokens.csv:3: empty token"},
		{"empty user", "tok1,,1\n", nil, "tokens.csv:1: empty user name"},
		{"duplicate", "tok1,alice,1\ntok1,bob,2\n", nil, "tokens.csv:2: token given twice"},
		{"bad quoting", "tok1,alice,1\ntok2,\"bob,2\n", nil, "tokens.csv:2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTokenCSV("tokens.csv", strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want prefix %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d tokens, want %d", len(got), len(tc.want))
			}
			for tok, w := range tc.want {
				g := got[tok]
				if g == nil || g.Name != w.Name || g.UID != w.UID || !slices.Equal(g.Groups, w.Groups) {
					t.Errorf("%s = %+v, want %+v", tok, g, w)
				}
			}
		})
	}
}

func FuzzParseTokenCSV(f *testing.F) {
	f.Add("tok1,alice,1,\"dev,ops\"\ntok2,bob,2\n")
	f.Add("a,b\n")
	f.Add("\"unterminated\n")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseTokenCSV("f.csv", strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for tok, u := range got {
			if tok == "" || u.Name == "" {
				t.Fatalf("accepted empty token or user: %q %+v", tok, u)
			}
		}
	})
}

func keys(t testing.TB) map[string]crypto.Signer {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ec384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]crypto.Signer{"ES256": ec, "ES384": ec384, "RS256": rs}
}

// objects is a Getter over a fixed set of objects.
type objects map[string]runtime.Object

func (o objects) get(_ context.Context, resource, ns, name string) (runtime.Object, error) {
	if obj, ok := o[resource+"/"+ns+"/"+name]; ok {
		return obj, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

func TestServiceAccountTokens(t *testing.T) {
	const iss = "https://issuer.example"
	now := time.Unix(1_800_000_000, 0)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns", UID: "sa-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	gone := metav1.NewTime(now.Add(-2 * time.Minute))
	store := objects{"serviceaccounts/ns/robot": sa, "pods/ns/p": pod, "nodes//n1": node}
	others := keys(t)
	for alg, key := range keys(t) {
		t.Run(alg, func(t *testing.T) {
			sg, err := NewSigner(key)
			if err != nil {
				t.Fatal(err)
			}
			if sg.Public().Alg != alg {
				t.Fatalf("alg = %s", sg.Public().Alg)
			}
			other, _ := NewSigner(others[alg])
			v := &ServiceAccounts{Issuers: []string{iss}, Keys: []*PublicKey{other.Public(), sg.Public()}, Audiences: []string{iss}, Get: store.get, Now: func() time.Time { return now }}
			mint := func(mut func(c *Claims)) string {
				c := BoundClaims(iss, sa, []string{iss}, now, time.Hour, pod, nil, node, "jti-1")
				if mut != nil {
					mut(c)
				}
				tok, err := sg.Sign(c)
				if err != nil {
					t.Fatal(err)
				}
				return tok
			}
			u, auds, err := v.AuthenticateToken(context.Background(), mint(nil), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := &request.User{Name: "system:serviceaccount:ns:robot", UID: "sa-uid", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"},
				Extra: map[string][]string{ExtraPodName: {"p"}, ExtraPodUID: {"pod-uid"}, ExtraNodeName: {"n1"}, ExtraNodeUID: {"node-uid"}, ExtraCredentialID: {"JTI=jti-1"}}}
			if u.Name != want.Name || u.UID != want.UID || !slices.Equal(u.Groups, want.Groups) || len(u.Extra) != len(want.Extra) || !slices.Equal(auds, []string{iss}) {
				t.Fatalf("user = %+v %v", u, auds)
			}
			for k, w := range want.Extra {
				if !slices.Equal(u.Extra[k], w) {
					t.Errorf("extra %s = %v, want %v", k, u.Extra[k], w)
				}
			}
			bad := map[string]string{
				"expired":        mint(func(c *Claims) { e := now.Add(-2 * time.Minute).Unix(); c.Expiry = &e }),
				"not yet valid":  mint(func(c *Claims) { n := now.Add(2 * time.Minute).Unix(); c.NotBefore = &n }),
				"wrong audience": mint(func(c *Claims) { c.Audience = Audience{"vault"} }),
				"wrong subject":  mint(func(c *Claims) { c.Subject = "system:serviceaccount:ns:admin" }),
				"sa uid":         mint(func(c *Claims) { c.K8s.ServiceAccount.UID = "old" }),
				"pod uid":        mint(func(c *Claims) { c.K8s.Pod.UID = "old" }),
				"pod gone":       mint(func(c *Claims) { c.K8s.Pod.Name = "q" }),
				"tampered":       strings.Replace(mint(nil), ".", ".e30", 1),
			}
			for name, tok := range bad {
				if u, _, err := v.AuthenticateToken(context.Background(), tok, nil); err == nil {
					t.Errorf("%s: accepted as %+v", name, u)
				}
			}
			// Within the leeway, and a pod deleted gracefully less than a minute ago.
			inLeeway := mint(func(c *Claims) { e := now.Add(-30 * time.Second).Unix(); c.Expiry = &e })
			if _, _, err := v.AuthenticateToken(context.Background(), inLeeway, nil); err != nil {
				t.Errorf("expired within the leeway: %v", err)
			}
			deleting := pod.DeepCopy()
			deleting.DeletionTimestamp = &gone
			store["pods/ns/p"] = deleting
			if _, _, err := v.AuthenticateToken(context.Background(), mint(nil), nil); err == nil {
				t.Error("accepted a token of a pod deleted two minutes ago")
			}
			store["pods/ns/p"] = pod
			if _, _, err := v.AuthenticateToken(context.Background(), mint(func(c *Claims) { c.Issuer = "https://else" }), nil); !errors.Is(err, errNotMine) {
				t.Errorf("foreign issuer: %v, want errNotMine", err)
			}
		})
	}
}

func TestAuthenticateRequest(t *testing.T) {
	a := &Authenticator{Tokens: map[string]*request.User{"tok": {Name: "alice", Groups: []string{"dev"}}}, APIAudiences: []string{"api"}}
	req := func(h string) *http.Request {
		r, _ := http.NewRequest("GET", "https://x/api", nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		return r
	}
	for _, tc := range []struct {
		name, header string
		anonymous    bool
		user         string
		err          bool
	}{
		{"token", "Bearer tok", false, "alice", false},
		{"lower-case scheme", "bearer tok", false, "alice", false},
		{"bad token", "Bearer nope", true, "", true},
		{"empty bearer is no credentials", "Bearer ", true, request.Anonymous, false},
		{"basic is no credentials", "Basic YTpi", true, request.Anonymous, false},
		{"none, anonymous off", "", false, "", false},
		{"none, anonymous on", "", true, request.Anonymous, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.Anonymous = tc.anonymous
			r := req(tc.header)
			u, err := a.AuthenticateRequest(r)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v", err)
			}
			name := ""
			if u != nil {
				name = u.Name
			}
			if name != tc.user {
				t.Fatalf("user = %q, want %q", name, tc.user)
			}
			if tc.user == "alice" {
				if !slices.Equal(u.Groups, []string{"dev", request.AllAuthenticated}) || r.Header.Get("Authorization") != "" {
					t.Errorf("groups %v, Authorization %q", u.Groups, r.Header.Get("Authorization"))
				}
				if !slices.Equal(a.Tokens["tok"].Groups, []string{"dev"}) {
					t.Errorf("the token table changed: %v", a.Tokens["tok"].Groups)
				}
			}
			if tc.user == request.Anonymous && !slices.Equal(u.Groups, []string{request.AllUnauthenticated}) {
				t.Errorf("anonymous groups %v", u.Groups)
			}
		})
	}
}

// FuzzServiceAccountToken feeds arbitrary bearer tokens to the JWT parser and verifier:
// nothing panics and nothing unsigned is accepted.
func FuzzServiceAccountToken(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	sg, _ := NewSigner(key)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot", Namespace: "ns", UID: "sa-uid"}}
	now := time.Now()
	good, _ := sg.Sign(BoundClaims("iss", sa, []string{"iss"}, now, time.Hour, nil, nil, nil, "j"))
	f.Add(good)
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add(strings.Repeat(".", 5))
	store := objects{"serviceaccounts/ns/robot": sa}
	v := &ServiceAccounts{Issuers: []string{"iss"}, Keys: []*PublicKey{sg.Public()}, Audiences: []string{"iss"}, Get: store.get}
	f.Fuzz(func(t *testing.T, tok string) {
		u, _, err := v.AuthenticateToken(context.Background(), tok, nil)
		if err == nil && tok != good {
			// Only a token with a valid signature over its own claims can pass: re-verify.
			j, perr := parseJWS(tok)
			if perr != nil || j.verify(v.Keys) != nil {
				t.Fatalf("accepted an unverifiable token %q as %+v", tok, u)
			}
		}
	})
}
