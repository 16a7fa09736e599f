package controlplane

import (
	"github.com/hacp/hacp/pkg/apiserver/admission"
)

// SetAdmission installs the admission chain on every store, custom resources' included, and
// on the subresources and views whose body is an object of its own. Call it before serving,
// after every subresource is added.
func (r *Registry) SetAdmission(chain admission.Interface) {
	r.crd.SetAdmission(chain) // custom resources: those served already and those served later
	for _, res := range r.Resources {
		res.SetAdmission(chain)
	}
	for _, v := range r.Views {
		v.SetAdmission(chain)
	}
}
