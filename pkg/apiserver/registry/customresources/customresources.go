package customresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/jsonvalue"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celmodel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// celPerCallLimit and celCostBudget are k8s.io/apiserver/pkg/apis/cel's PerCallLimit and
// RuntimeCELCostBudget (that package is not imported for two constants).
const (
	celPerCallLimit = 1000000
	celCostBudget   = 10000000
)

// customResources is what the registry serves for CustomResourceDefinitions: it follows
// the definitions through the shared informer on every apiserver (crd_controller.go).
type customResources struct {
	mu       sync.RWMutex
	defs     map[string]*apiextensionsv1.CustomResourceDefinition // every definition, by name
	served   map[string][]*registry.Resource                      // served versions of each established definition, storage version first
	byGR     map[schema.GroupResource]*registry.Resource          // storage version of each served resource
	cleaning map[string]bool                                      // definitions this process is emptying
	onChange []func()
}

// OnCustomResourcesChange registers fn, called (serially) after the set of served custom
// resources changed. Call it before Start.
func (r *Manager) OnCustomResourcesChange(fn func()) {
	r.custom.mu.Lock()
	defer r.custom.mu.Unlock()
	r.custom.onChange = append(r.custom.onChange, fn)
}

// CustomResources returns the resources served for CustomResourceDefinitions now, sorted by
// group, resource and version (the storage version of each first).
func (r *Manager) CustomResources() []*registry.Resource {
	r.custom.mu.RLock()
	defer r.custom.mu.RUnlock()
	names := slices.Sorted(maps.Keys(r.custom.served))
	var out []*registry.Resource
	for _, n := range names {
		out = append(out, r.custom.served[n]...)
	}
	return out
}

// customStorageResources returns the storage version of every served custom resource.
func (r *Manager) customStorageResources() []*registry.Resource {
	r.custom.mu.RLock()
	defer r.custom.mu.RUnlock()
	return slices.Collect(maps.Values(r.custom.byGR))
}

func (r *Manager) customResource(gr schema.GroupResource) *registry.Resource {
	r.custom.mu.RLock()
	defer r.custom.mu.RUnlock()
	return r.custom.byGR[gr]
}

func (r *Manager) crds() *registry.Store { return r.cfg.Builtin(crdGR).Store }

// replaceCRDs makes defs the definitions known, serves the established ones, and sets
// status or cleans up where a definition needs it.
func (r *Manager) replaceCRDs(ctx context.Context, defs map[string]*apiextensionsv1.CustomResourceDefinition) {
	r.custom.mu.Lock()
	old := r.custom.defs
	r.custom.defs = defs
	changed := false
	if r.custom.served == nil {
		r.custom.served = map[string][]*registry.Resource{}
	}
	var retired []*registry.Resource // replaced or no longer served: their caches stop
	for name, res := range r.custom.served {
		if defs[name] == nil || !crdEstablished(defs[name]) {
			delete(r.custom.served, name)
			retired = append(retired, res...)
			changed = true
		}
	}
	for name, crd := range defs {
		if !crdEstablished(crd) {
			continue
		}
		if prev := old[name]; prev != nil && servedEqual(prev, crd) && r.custom.served[name] != nil {
			continue // a status-only change: what is served stays
		}
		retired = append(retired, r.custom.served[name]...)
		res, err := r.customResourcesFor(crd)
		if err != nil {
			r.log.Warn("custom resource definition not served", "name", name, "err", err)
			delete(r.custom.served, name)
		} else {
			r.custom.served[name] = res
		}
		changed = true
	}
	r.custom.byGR = map[schema.GroupResource]*registry.Resource{}
	for _, res := range r.custom.served {
		r.custom.byGR[res[0].Store.GroupResource()] = res[0]
	}
	hooks := slices.Clone(r.custom.onChange)
	r.custom.mu.Unlock()
	for _, res := range retired {
		res.StopCache()
	}
	for _, crd := range defs {
		if crd.DeletionTimestamp != nil {
			r.cleanupCRD(crd.Name)
			continue
		}
		if want := crdStatus(crd, defs); !statusEqual(want, crd.Status) {
			r.setCRDStatus(ctx, crd.Name, defs)
		}
	}
	if changed {
		for _, fn := range hooks {
			fn()
		}
	}
}

// servedEqual reports whether two states of a definition serve the same: its spec, accepted
// names and whether it is being deleted.
func servedEqual(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	type served struct {
		Spec     apiextensionsv1.CustomResourceDefinitionSpec
		Names    apiextensionsv1.CustomResourceDefinitionNames
		Deleting bool
	}
	ja, _ := json.Marshal(served{a.Spec, a.Status.AcceptedNames, a.DeletionTimestamp != nil})
	jb, _ := json.Marshal(served{b.Spec, b.Status.AcceptedNames, b.DeletionTimestamp != nil})
	return string(ja) == string(jb)
}

func statusEqual(a, b apiextensionsv1.CustomResourceDefinitionStatus) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// crdStatus is the status crd should have: its names accepted unless another definition of
// the group has them, and then established, as upstream's naming and establishing
// controllers decide.
func crdStatus(crd *apiextensionsv1.CustomResourceDefinition, defs map[string]*apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionStatus {
	st := *crd.Status.DeepCopy()
	names := crd.Spec.Names
	reason, msg := "NoConflicts", "no conflicts found"
	for _, other := range defs {
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		on := other.Status.AcceptedNames
		switch {
		case on.Plural != "" && on.Plural == names.Plural:
			reason, msg = "PluralConflict", fmt.Sprintf("%q is already in use", names.Plural)
		case on.Singular != "" && on.Singular == names.Singular:
			reason, msg = "SingularConflict", fmt.Sprintf("%q is already in use", names.Singular)
		case on.Kind != "" && on.Kind == names.Kind:
			reason, msg = "KindConflict", fmt.Sprintf("%q is already in use", names.Kind)
		case on.ListKind != "" && on.ListKind == names.ListKind:
			reason, msg = "ListKindConflict", fmt.Sprintf("%q is already in use", names.ListKind)
		default:
			for _, s := range names.ShortNames {
				if slices.Contains(on.ShortNames, s) {
					reason, msg = "ShortNamesConflict", fmt.Sprintf("%q is already in use", s)
				}
			}
		}
	}
	// Keep transition times: setCRDCondition only moves them on a change.
	tmp := &apiextensionsv1.CustomResourceDefinition{Status: st}
	if reason == "NoConflicts" {
		tmp.Status.AcceptedNames = names
		setCRDCondition(tmp, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg})
		if crdCondition(tmp, apiextensionsv1.Established) != apiextensionsv1.ConditionTrue {
			setCRDCondition(tmp, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"})
		}
	} else {
		setCRDCondition(tmp, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: reason, Message: msg})
		if crdCondition(tmp, apiextensionsv1.Established) != apiextensionsv1.ConditionTrue {
			setCRDCondition(tmp, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"})
		}
	}
	if c := apiApprovalCondition(crd); c != nil {
		setCRDCondition(tmp, *c)
	}
	// The conditions in upstream's order.
	order := map[apiextensionsv1.CustomResourceDefinitionConditionType]int{apiextensionsv1.NamesAccepted: 0, apiextensionsv1.Established: 1, apiextensionsv1.Terminating: 2,
		apiextensionsv1.KubernetesAPIApprovalPolicyConformant: 3}
	sort.SliceStable(tmp.Status.Conditions, func(i, j int) bool {
		return order[tmp.Status.Conditions[i].Type] < order[tmp.Status.Conditions[j].Type]
	})
	// A change of transition time alone is no change.
	for i := range tmp.Status.Conditions {
		for _, c := range crd.Status.Conditions {
			if c.Type == tmp.Status.Conditions[i].Type && c.Status == tmp.Status.Conditions[i].Status {
				tmp.Status.Conditions[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return tmp.Status
}

// setCRDStatus writes the status crdStatus computes, on the current object.
func (r *Manager) setCRDStatus(ctx context.Context, name string, defs map[string]*apiextensionsv1.CustomResourceDefinition) {
	_, _, err := r.crds().UpdateStatus(ctx, "", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(crdGR, name)
		}
		crd := cur.(*apiextensionsv1.CustomResourceDefinition)
		crd.Status = crdStatus(crd, defs)
		return crd, nil
	}, &metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && r.ctx.Err() == nil {
		r.log.Warn("custom resource definition status not written", "name", name, "err", err)
	}
}

// cleanupCRD deletes every custom object of a definition being deleted, then removes its
// cleanup finalizer, in the background (upstream's finalizing controller). Every apiserver
// may do it at the same time: deletions of what is gone already are no error.
func (r *Manager) cleanupCRD(name string) {
	r.custom.mu.Lock()
	if r.custom.cleaning == nil {
		r.custom.cleaning = map[string]bool{}
	}
	if r.custom.cleaning[name] {
		r.custom.mu.Unlock()
		return
	}
	r.custom.cleaning[name] = true
	r.custom.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.custom.mu.Lock()
			delete(r.custom.cleaning, name)
			r.custom.mu.Unlock()
		}()
		ctx := r.ctx
		for attempt := 0; ctx.Err() == nil; attempt++ {
			done, err := r.finishCRD(ctx, name)
			if done {
				return
			}
			if err != nil && ctx.Err() == nil {
				r.log.Warn("custom resource definition cleanup failed, retrying", "name", name, "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(attempt+1, 10)) * 200 * time.Millisecond):
			}
		}
	}()
}

func (r *Manager) finishCRD(ctx context.Context, name string) (done bool, err error) {
	obj, err := r.crds().Get(ctx, "", name, &metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if crd.DeletionTimestamp == nil || !slices.Contains(crd.Finalizers, CRDCleanupFinalizer) {
		return true, nil
	}
	// Every object of every namespace, through a store of the storage version (served or not).
	if st, err := r.storageStoreFor(crd); err == nil {
		list, err := st.List(ctx, "", &metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		items := list.(*unstructured.UnstructuredList).Items
		for _, it := range items {
			_, _, err := st.Delete(ctx, it.GetNamespace(), it.GetName(), &metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		if len(items) > 0 {
			return false, nil // check that they are gone (finalizers may hold some)
		}
	}
	_, _, err = r.crds().Update(ctx, "", name, func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
		if cur == nil {
			return nil, apierrors.NewNotFound(crdGR, name)
		}
		c := cur.(*apiextensionsv1.CustomResourceDefinition)
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool { return f == CRDCleanupFinalizer })
		return c, nil
	}, &metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	r.log.Info("custom resource definition removed", "name", name)
	return true, nil
}

// storageStoreFor is a store of crd's storage version.
func (r *Manager) storageStoreFor(crd *apiextensionsv1.CustomResourceDefinition) (*registry.Store, error) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			k, err := customKind(crd, v)
			if err != nil {
				return nil, err
			}
			return r.newCustomStore(crd, k, false), nil
		}
	}
	return nil, fmt.Errorf("no storage version")
}

// customResourcesFor builds the resources of every served version of crd, the storage
// version first.
func (r *Manager) customResourcesFor(crd *apiextensionsv1.CustomResourceDefinition) ([]*registry.Resource, error) {
	var kinds []*registry.Kind
	var storageVersion string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
		if !v.Served || r.servesBuiltin(crd.Spec.Group, v.Name, crd.Spec.Names.Plural) {
			continue
		}
		k, err := customKind(crd, v)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		kinds = append(kinds, k)
	}
	convert := convertByAPIVersion
	if wc := r.newWebhookConverter(crd); wc != nil {
		convert = wc.convert
	}
	var out []*registry.Resource
	for _, k := range kinds {
		k.Versions, k.ConvertTo = kinds, convert
		s := r.newCustomStore(crd, k, true)
		if c := r.admission.Load(); c != nil {
			s.SetAdmission(*c) // custom resources are admitted as built-ins are (webhooks included)
		}
		res := registry.NewResourceOf(s)
		if k.Version == storageVersion {
			out = append([]*registry.Resource{res}, out...)
		} else {
			out = append(out, res)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no served version")
	}
	for _, res := range out {
		if c, ok := res.Store.Storage().(interface{ Start(context.Context) }); ok {
			c.Start(r.ctx)
		}
	}
	return out, nil
}

// newCustomStore returns a store of one version of crd; cached, with a watch cache that
// the caller starts.
func (r *Manager) newCustomStore(crd *apiextensionsv1.CustomResourceDefinition, k *registry.Kind, cached bool) *registry.Store {
	var storageVersion string
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			storageVersion = v.Name
		}
	}
	codec := &customResourceCodec{apiVersion: crd.Spec.Group + "/" + storageVersion, served: k.GVK().GroupVersion().String(),
		defaults: k.SchemaDefaults, webhook: r.newWebhookConverter(crd)}
	etcd := storage.New(r.cfg.Client, storage.Config{Prefix: r.cfg.Prefix, Codec: codec, NewFunc: k.New, BookmarkInterval: r.cfg.BookmarkInterval, AttemptTimeout: r.cfg.AttemptTimeout,
		Transformer: r.cfg.transformer(k.GroupResource())})
	var st storage.Interface = etcd
	// A conversion webhook is called on every read: its failures stay the reader's, as
	// before, rather than the cache's (no cache for such versions).
	if cached && codec.webhook == nil {
		if c := r.cfg.NewCacher(etcd, k, k.GVK()); c != nil {
			st = c
		}
	}
	s := registry.NewStore(k, st, nil)
	if k.Namespaced {
		s.SetNamespaceCheck(r.cfg.NamespaceCheck)
	}
	return s
}

// customResourceCodec stores custom objects as JSON in the storage version and reads them
// in the served one: conversion None rewrites apiVersion only, a webhook converts the other
// fields too. It applies the served version's defaults on read, as upstream.
type customResourceCodec struct {
	apiVersion string                       // the storage version's
	served     string                       // the served version's
	defaults   *structuralschema.Structural // the served version's schema, nil when it has no defaults
	webhook    *webhookConverter            // nil: conversion None
}

func (c *customResourceCodec) Encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource codec: %T is not unstructured", obj)
	}
	if from := u.GetAPIVersion(); c.webhook != nil && from != c.apiVersion {
		in := u.Object
		if from == "" { // written through the served version's store
			in = maps.Clone(u.Object)
			in["apiVersion"] = c.served
		}
		m, err := c.webhook.convert(context.Background(), in, c.apiVersion)
		if err != nil {
			return nil, err
		}
		return jsonvalue.Marshal(m)
	}
	m := maps.Clone(u.Object)
	m["apiVersion"] = c.apiVersion
	return jsonvalue.Marshal(m)
}

func (c *customResourceCodec) Decode(data []byte, into runtime.Object) error {
	u, ok := into.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("custom resource codec: %T is not unstructured", into)
	}
	m, err := jsonvalue.UnmarshalObject(data) // integers as int64, as unstructured wants them
	if err != nil {
		return err
	}
	if m == nil {
		return errors.New("custom resource codec: stored value is not an object")
	}
	if c.webhook != nil {
		converted, err := c.webhook.convert(context.Background(), m, c.served)
		if err != nil {
			return err
		}
		m = converted
	}
	if c.defaults != nil {
		structuraldefaulting.Default(m, c.defaults)
	}
	u.Object = m
	return nil
}

// servesBuiltin reports whether a built-in resource is served at group/version/plural. A
// definition's version there is not served, neither its routes nor its discovery: the
// built-in keeps them, as kube-apiserver's handler chain asks its built-in groups before the
// custom resources' handler.
func (r *Manager) servesBuiltin(group, version, plural string) bool {
	return r.cfg.ServesBuiltin != nil && r.cfg.ServesBuiltin(group, version, plural)
}

// convertByAPIVersion converts a custom object between versions of a definition whose
// conversion strategy is None: the apiVersion alone changes.
func convertByAPIVersion(_ context.Context, obj map[string]any, apiVersion string) (map[string]any, error) {
	out := maps.Clone(obj)
	out["apiVersion"] = apiVersion
	return out, nil
}

// customKind is the Kind of one version of a custom resource.
func customKind(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*registry.Kind, error) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		names = crd.Spec.Names
	}
	k := &registry.Kind{
		Names: registry.Names{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind, ListKind: names.ListKind, Plural: names.Plural, Singular: names.Singular,
			ShortNames: names.ShortNames, Categories: names.Categories, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped},
		New:     func() runtime.Object { return &unstructured.Unstructured{Object: map[string]any{}} },
		NewList: func() runtime.Object { return &unstructured.UnstructuredList{Object: map[string]any{}} },
		KeyRoot: crd.Spec.Group + "/" + names.Plural,
		Status:  v.Subresources != nil && v.Subresources.Status != nil,
	}
	k.Strategy.SpecChanged = customSpecChanged(k.Status)
	if k.Status {
		// A create does not set status when the status subresource is on (upstream's
		// PrepareForCreate).
		k.Strategy.PrepareForCreate = func(obj runtime.Object) {
			delete(obj.(*unstructured.Unstructured).Object, "status")
		}
		k.Strategy.PrepareForUpdate = keepCustomStatus
		k.Strategy.PrepareForStatusUpdate = takeCustomStatus
	}
	if crd.DeletionTimestamp != nil {
		gr := k.GroupResource()
		k.Strategy.BeginCreate = func() error {
			err := apierrors.NewMethodNotSupported(gr, "create")
			err.ErrStatus.Message = "create not allowed while custom resource definition is terminating"
			return err
		}
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		k.Scale = customScale(v.Subresources.Scale)
	}
	k.PrinterColumns = v.AdditionalPrinterColumns
	if len(v.SelectableFields) > 0 {
		k.Strategy.Fields = selectableFields(v.SelectableFields)
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return k, nil
	}
	if err := setSchemaRules(k, v); err != nil {
		return nil, err
	}
	return k, nil
}

// setSchemaRules adds what version v's openAPIV3Schema asks of kind k: pruning, defaults
// and upstream's custom resource validation.
func setSchemaRules(k *registry.Kind, v apiextensionsv1.CustomResourceDefinitionVersion) error {
	internal, err := internalSchema(v.Schema.OpenAPIV3Schema)
	if err != nil {
		return err
	}
	if data, err := json.Marshal(v.Schema.OpenAPIV3Schema); err == nil {
		_ = json.Unmarshal(data, &k.OpenAPISchema)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return err
	}
	validator, openAPISchema, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return err
	}
	// A create has nothing to ratchet against: it is validated by one validator built here
	// rather than one built per call (what upstream does with ratcheting off).
	createValidator := schemaCreateValidator{validate.NewSchemaValidator(openAPISchema, nil, "", strfmt.Default)}
	// An object a schema of types, properties and required keys certainly takes skips the
	// validator (valid objects get no errors from it, ratcheted or not); any other goes to it.
	quick, _ := newQuickSchema(openAPISchema)
	celValidator := cel.NewValidator(ss, true, celPerCallLimit)
	if hasDefaults(ss) {
		k.SchemaDefaults = ss
	}
	// Walks that would find nothing in this schema are skipped.
	embedded, listSetsOrMaps := hasEmbeddedResources(ss), hasListSetsOrMaps(ss)
	k.Strategy.Default = func(obj runtime.Object) {
		u := obj.(*unstructured.Unstructured)
		pruning.PruneWithOptions(u.Object, ss, true, structuralschema.UnknownFieldPathOptions{})
		if k.SchemaDefaults != nil {
			structuraldefaulting.Default(u.Object, ss)
		}
	}
	k.PruneUnknown = func(obj map[string]any) []string {
		return pruning.PruneWithOptions(obj, ss, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	}
	// Upstream's custom resource strategy: the schema, the scale paths, embedded objects,
	// list types, then the CEL rules unless a blocking error came first. An update ratchets:
	// what is invalid but unchanged from the old object (by the schema's correlation) does
	// not fail it, as CRDValidationRatcheting (on by default since 1.30) does.
	c := &customValidator{ss: ss, create: createValidator, update: validator, quick: quick, cel: celValidator,
		embedded: embedded, listSetsOrMaps: listSetsOrMaps}
	if k.Scale != nil {
		c.scale = v.Subresources.Scale
	}
	// Validate would run on updates too (without the old object): creates only.
	k.Strategy.ValidateNew = func(obj runtime.Object) field.ErrorList { return c.validate(obj, nil) }
	k.Strategy.ValidateUpdate = c.validate
	return nil
}

// customValidator validates the objects of one version of a custom resource.
type customValidator struct {
	ss     *structuralschema.Structural
	create schemaCreateValidator               // for creates: nothing to ratchet against
	update apiservervalidation.SchemaValidator // for updates, with ratcheting
	// quick, when set, takes the objects a schema of types, properties and required keys
	// certainly takes, which then skip the validators.
	quick          *quickSchema
	scale          *apiextensionsv1.CustomResourceSubresourceScale // nil without the scale subresource
	embedded       bool                                            // the schema has embedded resources
	listSetsOrMaps bool                                            // the schema has list sets or maps
	cel            *cel.Validator                                  // nil without CEL rules
}

// validate checks obj, a create when old is nil.
func (c *customValidator) validate(obj, old runtime.Object) field.ErrorList {
	u := obj.(*unstructured.Unstructured)
	var errs field.ErrorList
	var oldObj map[string]any
	var celOpts []cel.Option
	valid := c.quick != nil && c.quick.valid(u.Object)
	if old == nil {
		if !valid {
			errs = apiservervalidation.ValidateCustomResource(nil, u.Object, c.create)
		}
	} else {
		oldObj = old.(*unstructured.Unstructured).Object
		correlated := common.NewCorrelatedObject(u.Object, oldObj, &celmodel.Structural{Structural: c.ss})
		if !valid {
			errs = apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, oldObj, c.update, apiservervalidation.WithRatcheting(correlated))
		}
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	if c.scale != nil {
		errs = append(errs, validateCustomScale(u.Object, c.scale)...)
	}
	if c.embedded {
		errs = append(errs, schemaobjectmeta.Validate(context.Background(), nil, u.Object, c.ss, false)...)
	}
	if c.listSetsOrMaps && (oldObj == nil || len(listtype.ValidateListSetsAndMaps(nil, c.ss, oldObj)) == 0) {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, c.ss, u.Object)...)
	}
	if c.cel != nil {
		if blocking := blockingError(errs); blocking != nil {
			errs = append(errs, blocking)
		} else {
			var celOld any
			if oldObj != nil {
				celOld = oldObj
			}
			celErrs, _ := c.cel.Validate(context.Background(), nil, c.ss, u.Object, celOld, celCostBudget, celOpts...)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

// schemaCreateValidator validates a new custom object with a validator built once: kube-openapi's
// SchemaValidator keeps no state between calls (upstream shares one between requests when
// CRDValidationRatcheting is off).
type schemaCreateValidator struct{ v *validate.SchemaValidator }

func (s schemaCreateValidator) Validate(obj any, _ ...apiservervalidation.ValidationOption) *validate.Result {
	return s.v.Validate(obj)
}

// hasDefaults reports whether a default is set anywhere in s: without one, defaulting
// (which only walks the properties, additional properties and items, setting defaults)
// leaves every object as it is.
func hasDefaults(s *structuralschema.Structural) bool {
	return schemaHas(s, func(s *structuralschema.Structural) bool { return s.Default.Object != nil })
}

// hasEmbeddedResources reports whether s marks anything x-kubernetes-embedded-resource:
// without, schemaobjectmeta.Validate (not at a resource root) finds nothing to validate.
func hasEmbeddedResources(s *structuralschema.Structural) bool {
	return schemaHas(s, func(s *structuralschema.Structural) bool { return s.XEmbeddedResource })
}

// hasListSetsOrMaps reports whether s has a list of x-kubernetes-list-type set or map:
// without, listtype.ValidateListSetsAndMaps finds nothing to validate.
func hasListSetsOrMaps(s *structuralschema.Structural) bool {
	return schemaHas(s, func(s *structuralschema.Structural) bool {
		return s.XListType != nil && (*s.XListType == "set" || *s.XListType == "map")
	})
}

// schemaHas reports whether f holds for s or a schema under it: its properties', additional
// properties' and items' (what defaulting and those validations walk).
func schemaHas(s *structuralschema.Structural, f func(*structuralschema.Structural) bool) bool {
	if s == nil {
		return false
	}
	if f(s) {
		return true
	}
	for _, p := range s.Properties {
		if schemaHas(&p, f) {
			return true
		}
	}
	if s.AdditionalProperties != nil && schemaHas(s.AdditionalProperties.Structural, f) {
		return true
	}
	return schemaHas(s.Items, f)
}

// customScale reads and writes replicas at the paths a definition's scale subresource names.
func customScale(sc *apiextensionsv1.CustomResourceSubresourceScale) *registry.ScaleAccessor {
	path := func(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }
	specPath, statusPath := path(sc.SpecReplicasPath), path(sc.StatusReplicasPath)
	var selectorPath []string
	if sc.LabelSelectorPath != nil {
		selectorPath = path(*sc.LabelSelectorPath)
	}
	readInt := func(obj runtime.Object, p []string) int32 {
		v, _, _ := unstructured.NestedFieldNoCopy(obj.(*unstructured.Unstructured).Object, p...)
		switch n := v.(type) {
		case int64:
			return int32(n)
		case float64:
			return int32(n)
		}
		return 0
	}
	return &registry.ScaleAccessor{
		ReplicasPath: specPath,
		Replicas:     func(obj runtime.Object) int32 { return readInt(obj, specPath) },
		SetReplicas: func(obj runtime.Object, n int32) {
			_ = unstructured.SetNestedField(obj.(*unstructured.Unstructured).Object, int64(n), specPath...)
		},
		StatusReplicas: func(obj runtime.Object) int32 { return readInt(obj, statusPath) },
		Selector: func(obj runtime.Object) string {
			if selectorPath == nil {
				return ""
			}
			s, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, selectorPath...)
			return s
		},
	}
}

// selectableFields returns the field-selector values of a version's selectableFields, as
// upstream's: the field's value printed, "" when missing (so that every name is known to
// the selector's parser even for an empty object).
func selectableFields(sfs []apiextensionsv1.SelectableField) func(runtime.Object) fields.Set {
	type selectable struct {
		name string
		path *jsonpath.JSONPath
	}
	var paths []selectable
	for _, sf := range sfs {
		jp := jsonpath.New("selectableField").AllowMissingKeys(true)
		if err := jp.Parse("{" + sf.JSONPath + "}"); err != nil {
			continue // validation refused the definition
		}
		paths = append(paths, selectable{name: strings.TrimPrefix(sf.JSONPath, "."), path: jp})
	}
	return func(obj runtime.Object) fields.Set {
		u, _ := obj.(*unstructured.Unstructured)
		out := make(fields.Set, len(paths))
		for _, sf := range paths {
			out[sf.name] = ""
			if u == nil {
				continue
			}
			results, err := sf.path.FindResults(u.Object)
			if err == nil && len(results) == 1 && len(results[0]) == 1 && results[0][0].IsValid() && results[0][0].Interface() != nil {
				out[sf.name] = fmt.Sprint(results[0][0].Interface())
			}
		}
		return out
	}
}

// blockingError is upstream's hasBlockingErr: CEL rules are not run on an object with
// errors of these types (they would only add noise), and this error says so.
func blockingError(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// validateCustomScale is upstream's ValidateScaleSpec and ValidateScaleStatus: the replica
// counts at a scale subresource's paths are integers in int32's range, the selector a string.
func validateCustomScale(obj map[string]any, sc *apiextensionsv1.CustomResourceSubresourceScale) field.ErrorList {
	var errs field.ErrorList
	replicas := func(path string) {
		n, _, err := unstructured.NestedInt64(obj, strings.Split(strings.TrimPrefix(path, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(path), n, err.Error()))
		case n < 0:
			errs = append(errs, field.Invalid(field.NewPath(path), n, "should be a non-negative integer"))
		case n > math.MaxInt32:
			errs = append(errs, field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
		}
	}
	replicas(sc.SpecReplicasPath)
	replicas(sc.StatusReplicasPath)
	if sc.LabelSelectorPath != nil {
		sel, _, err := unstructured.NestedString(obj, strings.Split(strings.TrimPrefix(*sc.LabelSelectorPath, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*sc.LabelSelectorPath), sel, err.Error()))
		}
	}
	return errs
}
