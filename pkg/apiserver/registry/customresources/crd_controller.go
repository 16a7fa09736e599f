package customresources

import (
	"context"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// startCRDController keeps the served custom resources in step with the definitions of the
// shared informer, sets their status (names accepted, established, as upstream's naming and
// establishing controllers) and removes the custom objects of a definition being deleted,
// until ctx ends. Changes are coalesced: each pass works on the informer's whole content.
func (r *Manager) startCRDController(ctx context.Context) {
	crds := informer.For[*apiextensionsv1.CustomResourceDefinition](r.cfg.Informers, crdGR)
	dirty := make(chan struct{}, 1)
	crds.AddHandler(informer.OnChange[*apiextensionsv1.CustomResourceDefinition](func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if crds.WaitForSync(ctx) != nil {
			return
		}
		for {
			all := map[string]*apiextensionsv1.CustomResourceDefinition{}
			for _, crd := range crds.List("") {
				all[crd.Name] = crd
			}
			r.replaceCRDs(ctx, all)
			select {
			case <-ctx.Done():
				return
			case <-dirty:
			}
		}
	}()
}
