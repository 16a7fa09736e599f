package aggregator

import (
	"context"
	"reflect"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/aggregator/apiregistration"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// priority is an APIService's place in discovery.
type priority struct{ group, version int32 }

// builtinPriorities are kube-apiserver 1.37's apiVersionPriorities (its aggregator.go merged
// over DefaultGenericAPIServicePriorities) and kube-aggregator's own group: a served group
// version not listed gets no APIService.
var builtinPriorities = map[schema.GroupVersion]priority{
	{Group: "", Version: "v1"}:                                   {18000, 1},
	{Group: "apiregistration.k8s.io", Version: "v1"}:             {18000, 15},
	{Group: "apps", Version: "v1"}:                               {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                      {17750, 15},
	{Group: "events.k8s.io", Version: "v1beta1"}:                 {17750, 5},
	{Group: "authentication.k8s.io", Version: "v1"}:              {17700, 15},
	{Group: "authentication.k8s.io", Version: "v1beta1"}:         {17700, 9},
	{Group: "authentication.k8s.io", Version: "v1alpha1"}:        {17700, 1},
	{Group: "authorization.k8s.io", Version: "v1"}:               {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                        {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                        {17500, 30},
	{Group: "autoscaling", Version: "v2beta1"}:                   {17500, 9},
	{Group: "autoscaling", Version: "v2beta2"}:                   {17500, 1},
	{Group: "batch", Version: "v1"}:                              {17400, 15},
	{Group: "batch", Version: "v1beta1"}:                         {17400, 9},
	{Group: "batch", Version: "v2alpha1"}:                        {17400, 9},
	{Group: "certificates.k8s.io", Version: "v1"}:                {17300, 15},
	{Group: "certificates.k8s.io", Version: "v1beta1"}:           {17300, 9},
	{Group: "certificates.k8s.io", Version: "v1alpha1"}:          {17300, 1},
	{Group: "networking.k8s.io", Version: "v1"}:                  {17200, 15},
	{Group: "networking.k8s.io", Version: "v1beta1"}:             {17200, 9},
	{Group: "policy", Version: "v1"}:                             {17100, 15},
	{Group: "policy", Version: "v1beta1"}:                        {17100, 9},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:          {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:                     {16800, 15},
	{Group: "storage.k8s.io", Version: "v1beta1"}:                {16800, 9},
	{Group: "storage.k8s.io", Version: "v1alpha1"}:               {16800, 1},
	{Group: "apiextensions.k8s.io", Version: "v1"}:               {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:       {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}:  {16700, 12},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}: {16700, 9},
	{Group: "scheduling.k8s.io", Version: "v1"}:                  {16600, 15},
	{Group: "scheduling.k8s.io", Version: "v1beta1"}:             {16600, 9},
	{Group: "scheduling.k8s.io", Version: "v1alpha3"}:            {16600, 3},
	{Group: "coordination.k8s.io", Version: "v1"}:                {16500, 15},
	{Group: "coordination.k8s.io", Version: "v1beta1"}:           {16500, 13},
	{Group: "coordination.k8s.io", Version: "v1alpha2"}:          {16500, 12},
	{Group: "node.k8s.io", Version: "v1"}:                        {16300, 15},
	{Group: "node.k8s.io", Version: "v1beta1"}:                   {16300, 9},
	{Group: "node.k8s.io", Version: "v1alpha1"}:                  {16300, 1},
	{Group: "discovery.k8s.io", Version: "v1"}:                   {16200, 15},
	{Group: "discovery.k8s.io", Version: "v1beta1"}:              {16200, 12},
	{Group: "resource.k8s.io", Version: "v1"}:                    {16200, 21},
	{Group: "resource.k8s.io", Version: "v1beta2"}:               {16200, 15},
	{Group: "resource.k8s.io", Version: "v1beta1"}:               {16200, 9},
	{Group: "resource.k8s.io", Version: "v1alpha3"}:              {16200, 1},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:       {16100, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3"}:  {16100, 18},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta2"}:  {16100, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1"}:  {16100, 12},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1alpha1"}: {16100, 9},
	{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}:    {16000, 9},
	{Group: "storagemigration.k8s.io", Version: "v1"}:            {15800, 15},
	{Group: "storagemigration.k8s.io", Version: "v1beta1"}:       {15800, 9},
	{Group: "lifecycle.k8s.io", Version: "v1alpha1"}:             {15700, 1},
}

// crdPriority is what upstream's crdregistration controller gives a CRD's group versions.
var crdPriority = priority{1000, 100}

// The automanaged label's values: kept from start-up (built-ins) or while the CRD exists.
const (
	managedOnStart = "onstart"
	managedSync    = "true"
)

// Local APIServices are always available, with this reason and message (upstream's).
const (
	localReason  = "Local"
	localMessage = "Local APIServices are always available"
)

func localAPIService(gv schema.GroupVersion, p priority, managed string) *apiregistration.APIService {
	return &apiregistration.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{AutoManagedLabel: managed}},
		Spec:       apiregistration.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.group, VersionPriority: p.version},
	}
}

// keepLocal keeps an APIService for every locally served group version, and Available
// status on every local APIService, until ctx ends.
func (a *Aggregator) keepLocal(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-a.synced:
	}
	for {
		if err := a.syncLocal(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("aggregator: local apiservices", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-a.localChanged:
		case <-time.After(a.cfg.CheckInterval):
		}
	}
}

func (a *Aggregator) syncLocal(ctx context.Context) error {
	want := map[string]*apiregistration.APIService{}
	for _, gv := range a.cfg.BuiltIn {
		if p, ok := builtinPriorities[gv]; ok {
			s := localAPIService(gv, p, managedOnStart)
			want[s.Name] = s
		}
	}
	for _, gv := range a.cfg.Custom() {
		s := localAPIService(gv, crdPriority, managedSync)
		if _, builtin := want[s.Name]; !builtin {
			want[s.Name] = s
		}
	}
	known := a.snapshot()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for name, s := range want {
		cur := known[name]
		switch {
		case cur == nil:
			created, err := a.apiServices.Create(ctx, "", "", s, &metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue // another apiserver made it; the watch brings it
			}
			if err != nil {
				keep(err)
				continue
			}
			known[name] = created.(*apiregistration.APIService)
		case cur.Labels[AutoManagedLabel] != "" && cur.Spec.Service == nil && !reflect.DeepEqual(cur.Spec, s.Spec):
			_, _, err := a.apiServices.Update(ctx, "", name, func(_ context.Context, obj runtime.Object) (runtime.Object, error) {
				c := obj.(*apiregistration.APIService).DeepCopy()
				c.Spec = s.Spec
				return c, nil
			}, &metav1.UpdateOptions{})
			keep(err)
		}
	}
	for name, cur := range known {
		if cur.Labels[AutoManagedLabel] == managedSync && want[name] == nil {
			_, _, err := a.apiServices.Delete(ctx, "", name, &metav1.DeleteOptions{})
			if !apierrors.IsNotFound(err) {
				keep(err)
			}
			continue
		}
		if cur.Spec.Service == nil {
			keep(a.setCondition(ctx, cur, apiregistration.APIServiceCondition{
				Type: apiregistration.Available, Status: apiregistration.ConditionTrue, Reason: localReason, Message: localMessage}))
		}
	}
	return firstErr
}

// statusUpdater is the status subresource's store.
type statusUpdater interface {
	Update(ctx context.Context, ns, name string, transform registry.TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error)
}

// setCondition writes cond into the APIService's status unless it says so already. The
// transition time moves only when the status changes (upstream's SetAPIServiceCondition).
func (a *Aggregator) setCondition(ctx context.Context, s *apiregistration.APIService, cond apiregistration.APIServiceCondition) error {
	if c := s.Status.Condition(cond.Type); c != nil && c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
		return nil
	}
	st, ok := a.status.(statusUpdater)
	if !ok {
		return nil
	}
	_, _, err := st.Update(ctx, "", s.Name, func(_ context.Context, obj runtime.Object) (runtime.Object, error) {
		c := obj.(*apiregistration.APIService).DeepCopy()
		cond := cond
		cond.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
		if old := c.Status.Condition(cond.Type); old != nil {
			if old.Status == cond.Status {
				cond.LastTransitionTime = old.LastTransitionTime
			}
			*old = cond
		} else {
			c.Status.Conditions = append(c.Status.Conditions, cond)
		}
		return c, nil
	}, &metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
