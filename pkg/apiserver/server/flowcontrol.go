package server

import (
	"context"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/flowcontrol"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// startFlowControl puts the bootstrap FlowSchemas and PriorityLevelConfigurations in place
// and keeps them (as kube-apiserver does, API Priority and Fairness on or off); with it on
// and seats to divide, it starts the controller the APF filter asks.
func (s *Server) startFlowControl(ctx context.Context) error {
	fss := s.registry.Resource(flowcontrolv1.Resource("flowschemas"))
	pls := s.registry.Resource(flowcontrolv1.Resource("prioritylevelconfigurations"))
	if fss == nil || pls == nil {
		return nil
	}
	seats := s.cfg.MaxRequestsInflight + s.cfg.MaxMutatingRequestsInflight
	if !s.cfg.EnablePriorityAndFairness || seats <= 0 {
		if err := flowcontrol.EnsureBootstrap(ctx, pls.Store, fss.Store); err != nil {
			s.log.Warn("API priority and fairness bootstrap configuration not ensured; retried later", "err", err)
		}
		s.background.Add(1)
		go func() {
			defer s.background.Done()
			flowcontrol.KeepBootstrap(ctx, pls.Store, fss.Store, time.Minute, s.log)
		}()
		return nil
	}
	c := flowcontrol.New(flowcontrol.Options{
		Seats: seats, FlowSchemas: fss.Store, PriorityLevels: pls.Store, Informers: s.registry.Informers(),
		Count: s.storedObjects, WaitLimit: s.cfg.RequestTimeout / 4, Log: s.log,
	})
	if err := registerOnce(s.metrics.registry, c.Collectors()...); err != nil {
		return err
	}
	if err := c.Start(ctx); err != nil {
		return err
	}
	s.background.Add(1)
	go func() { defer s.background.Done(); c.Run(ctx) }()
	s.flowControl = c
	return nil
}

// storedObjects is how many objects of a built-in resource its watch cache holds.
func (s *Server) storedObjects(group, resource string) (int, bool) {
	res := s.registry.Resource(schema.GroupResource{Group: group, Resource: resource})
	if res == nil {
		return 0, false
	}
	if c, ok := res.Store.Storage().(*storage.Cacher); ok && c.Ready() {
		return c.Len(), true
	}
	return 0, false
}
