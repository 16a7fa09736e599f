package server

import (
	"crypto/tls"
	"fmt"

	"github.com/hacp/hacp/pkg/apiserver/aggregator"
	"github.com/hacp/hacp/pkg/apiserver/endpoints"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// newAggregator prepares the API aggregation layer for the resources served: their group
// versions get local APIServices, and the front-proxy client certificate (flags, or the
// generated one) authenticates this server to the extension API servers.
func (s *Server) newAggregator(res []endpoints.Resource) (*aggregator.Aggregator, error) {
	var builtIn []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range res {
		if gv := r.Names.GroupVersion(); !seen[gv] {
			seen[gv] = true
			builtIn = append(builtIn, gv)
		}
	}
	var cert func() *tls.Certificate
	switch {
	case s.certs.proxyClient != nil:
		cert = s.certs.proxyClient.Certificate // reloaded when the files change
	case s.generatedPKI():
		c, err := tls.LoadX509KeyPair(s.bundle.FrontProxyClientCert, s.bundle.FrontProxyClientKey)
		if err != nil {
			return nil, fmt.Errorf("apiserver: generated front-proxy client certificate: %w", err)
		}
		cert = func() *tls.Certificate { return &c }
	}
	return aggregator.New(aggregator.Config{
		Registry:  s.registry,
		Informers: s.registry.Informers(),
		BuiltIn:   builtIn,
		Custom: func() []schema.GroupVersion {
			var out []schema.GroupVersion
			for _, r := range s.registry.CustomResources() {
				out = append(out, r.Store.Names().GroupVersion())
			}
			return out
		},
		ProxyClientCert: cert,
		Stop:            s.watchStop,
		Logger:          s.log,
	}), nil
}
