package aggregator

import "testing"

// TestHeaderKeyEscape: extra keys are escaped as client-go's SetAuthProxyHeaders escapes
// them, which the extension server's request-header authenticator unescapes.
func TestHeaderKeyEscape(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"scopes", "scopes"},
		{"example.org/scope", "example.org%2Fscope"},
		{"100%", "100%25"},
		{"with space", "with%20space"},
		{"ü", "%C3%BC"},
		{"a_b-c.d~e", "a_b-c.d~e"},
	} {
		if got := headerKeyEscape(tc.key); got != tc.want {
			t.Errorf("headerKeyEscape(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}
