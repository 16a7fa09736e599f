package aggregator

import (
	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/informer"
)

// apiServicesGR is where the APIServices are served.
var apiServicesGR = apiregistration.Resource("apiservices")

// follow keeps a.known, and from it the backends and the view requests read, in step with
// the APIServices of the shared informer.
func (a *Aggregator) follow() {
	a.informer.AddHandler(informer.Handler[*apiregistration.APIService]{
		OnAdd:    func(s *apiregistration.APIService) { a.setKnown(s.Name, s) },
		OnUpdate: func(_, s *apiregistration.APIService) { a.setKnown(s.Name, s) },
		OnDelete: func(s *apiregistration.APIService) { a.setKnown(s.Name, nil) },
	})
}

// setKnown records APIService name as s (nil: deleted) and rebuilds what depends on it.
func (a *Aggregator) setKnown(name string, s *apiregistration.APIService) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s == nil {
		delete(a.known, name)
	} else {
		a.known[name] = s
	}
	a.rebuildLocked()
}
