package controlplane

import (
	"github.com/hacp/hacp/pkg/apiserver/admission"
)

// SetAdmission installs the admission chain on every store, custom resources' included, and
// on the subresources whose body is an object of its own. Call it before serving, after every
// subresource is added.
func (r *Registry) SetAdmission(chain admission.Interface) {
	// Custom resources: those served already, and (through r.admission) those served later.
	r.custom.mu.Lock()
	r.admission.Store(&chain)
	for _, list := range r.custom.served {
		for _, res := range list {
			res.Store.SetAdmission(chain)
		}
	}
	r.custom.mu.Unlock()
	for _, res := range r.Resources {
		res.SetAdmission(chain)
	}
}
