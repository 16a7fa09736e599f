package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/admission"
	"github.com/hacp/hacp/pkg/apiserver/request"
	"github.com/hacp/hacp/pkg/apiserver/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// Strategy holds the rules of one kind. Every method may be left nil in a
// Kind definition; the generic store applies the rules common to all kinds.
type Strategy struct {
	// Default fills defaults on create and update.
	Default func(obj runtime.Object)
	// PrepareForCreate resets what clients may not set on create (e.g. status).
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate adjusts an update of the main resource before defaults and
	// validation, given the stored object: it keeps what such a write may not change (a
	// kind with a status subresource keeps old's status here) and carries over
	// server-assigned values the request left out. Write it with Rule.
	PrepareForUpdate func(obj, old runtime.Object)
	// SetCreator records the authenticated caller in a new object (a CSR's requester).
	SetCreator func(obj runtime.Object, u *request.User)
	// PrepareForStatusUpdate keeps what a /status write may not change: old's spec, and
	// what else the kind's upstream status strategy keeps (a Deployment's labels, a pod's
	// ownerReferences). old is a copy of the stored object: its parts may be taken as they
	// are. Required, with PrepareForUpdate, for a kind with a status subresource. Write it
	// with Rule.
	PrepareForStatusUpdate func(obj, old runtime.Object)
	// Validate checks a new object; metadata is checked by the store.
	Validate func(obj runtime.Object) field.ErrorList
	// ValidateNew checks what only a create must satisfy (Validate runs on updates too).
	ValidateNew func(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update (immutable fields).
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// NameValidation checks metadata.name (DNS-1123 subdomain if nil).
	NameValidation apivalidation.ValidateNameFunc
	// ObjectNameValidation, when set, is NameValidation for kinds whose name rules depend
	// on the object (a ClusterTrustBundle's on its signer).
	ObjectNameValidation func(obj runtime.Object) apivalidation.ValidateNameFunc
	// Fields returns the selectable fields besides metadata.name/namespace.
	Fields func(obj runtime.Object) fields.Set
	// SpecChanged, when set, reports whether an update changes what the kind's
	// metadata.generation counts: its spec for most kinds (write it with Changed), more for
	// some (a Deployment's annotations too). A new object then starts at generation 1, and
	// an update that changes it increments it; the comparison is made after defaults, as
	// upstream compares decoded (defaulted) objects. Unset: generation stays 0.
	SpecChanged func(obj, old runtime.Object) bool
	// AllowCreateOnUpdate lets PUT create a missing object.
	AllowCreateOnUpdate bool
	// MarkDeleting changes an object being deleted gracefully (namespace: phase Terminating).
	MarkDeleting func(obj runtime.Object)
	// GracePeriod is how many seconds the deletion of obj waits for whoever runs it to
	// confirm (a pod's node agent); 0 or nil: deleted at once unless finalizers hold it.
	GracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// CheckDelete refuses a deletion before anything is read (upstream's admission rules,
	// e.g. the standard namespaces may not be deleted).
	CheckDelete func(ns, name string) error
	// BeginCreate, when set, may refuse any create before anything else is looked at (the
	// custom resources of a definition being deleted).
	BeginCreate func() error
	// DeletionFinalizers, when set, returns the finalizers an object being deleted carries
	// given those it has (a CustomResourceDefinition adds its cleanup finalizer).
	DeletionFinalizers func(obj runtime.Object, finalizers []string) []string
	// DeletionHeld, when set, reports that something besides metadata.finalizers keeps an
	// object being deleted (a namespace's spec.finalizers): the store deletes it only when
	// this says false too.
	DeletionHeld func(obj runtime.Object) bool
}

// Kind defines a resource: a built-in one is one small file filling this in.
type Kind struct {
	Names
	New     func() runtime.Object
	NewList func() runtime.Object
	// KeyRoot is the storage key root below the prefix; Plural if empty.
	KeyRoot  string
	Strategy Strategy
	// Status adds the status subresource; Strategy.PrepareForUpdate then keeps the
	// status on main-resource updates and Strategy.PrepareForStatusUpdate the rest on
	// status updates.
	Status bool
	// Scale, when set, adds the scale subresource (autoscaling/v1 Scale).
	Scale *ScaleAccessor
	// StorageJSON writes this kind as JSON whatever --storage-media-type says (kube-apiserver's
	// apiextensions-apiserver stores CustomResourceDefinitions so).
	StorageJSON bool
	// StorageOf, when set, serves this kind from another kind's storage by conversion
	// (autoscaling/v1 HorizontalPodAutoscalers live in etcd as autoscaling/v2).
	StorageOf *Conversion
	// PrinterColumns are a custom resource's additionalPrinterColumns, for its Table.
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition
	// PruneUnknown, when set, prunes the fields a custom resource's schema does not know
	// from obj and lists their paths (fieldValidation=Strict refuses them, Warn warns).
	PruneUnknown func(obj map[string]any) []string
	// OpenAPISchema is a custom resource's openAPIV3Schema as decoded JSON, for the OpenAPI
	// documents.
	OpenAPISchema map[string]any
	// Versions are every served version of a custom resource's kind, this one among them,
	// and ConvertTo converts one of its objects to another of them (through the
	// definition's webhook, or by apiVersion alone): field managers keep the managedFields
	// entries recorded at another version with them.
	Versions  []*Kind
	ConvertTo func(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error)
	// SchemaDefaults is a custom resource's structural schema when it sets defaults, for
	// defaulting on read.
	SchemaDefaults *structuralschema.Structural
}

// Store is the generic store of one kind on top of storage.Interface.
type Store struct {
	kind    *Kind
	storage storage.Interface
	// namespaces checks that a namespace exists and accepts new content; nil for cluster-scoped kinds.
	namespaces func(ctx context.Context, ns string) error
	// afterDelete is told about real deletions (namespace cleanup uses it).
	onTerminate func(ctx context.Context, obj runtime.Object)
	// alloc reserves what objects take from cluster-wide pools (Service IPs and ports).
	alloc Allocator
	// admit, when set, may refuse a validated create or update (SetAdmit).
	admit AdmitFunc
	// adm holds the admission chain (SetAdmission); empty runs none. Atomic: the server's
	// own background writes may be under way when the chain is installed.
	adm atomic.Pointer[admissionChain]
}

// removed is called with each object the store deleted for good.
func (s *Store) removed(ctx context.Context, obj runtime.Object) {
	if s.alloc != nil {
		s.alloc.Release(ctx, nil, obj)
	}
}

// SetAdmit installs a check run after validation on every create and update (before
// storage); the authorizer uses it for RBAC's escalation and bind checks. Call it before
// serving.
func (s *Store) SetAdmit(fn AdmitFunc) { s.admit = fn }

// Kind returns the group/version/kind served.
func (s *Store) Kind() schema.GroupVersionKind { return s.kind.GVK() }

// Names returns the kind's discovery names.
func (s *Store) Names() *Names { return &s.kind.Names }

// Definition returns the kind definition.
func (s *Store) Definition() *Kind { return s.kind }

// New returns an empty object.
func (s *Store) New() runtime.Object { return s.kind.New() }

// NewList returns an empty list.
func (s *Store) NewList() runtime.Object { return s.kind.NewList() }

// Storage exposes the underlying storage (benchmarks, compaction in tests).
func (s *Store) Storage() storage.Interface { return s.storage }

func (s *Store) gr() schema.GroupResource { return s.kind.GroupResource() }

func (s *Store) keyRoot() string {
	if s.kind.KeyRoot != "" {
		return s.kind.KeyRoot
	}
	return s.kind.Plural
}

func (s *Store) key(ns, name string) string {
	if s.kind.Namespaced {
		return s.keyRoot() + "/" + ns + "/" + name
	}
	return s.keyRoot() + "/" + name
}

func (s *Store) prefix(ns string) string {
	if s.kind.Namespaced && ns != "" {
		return s.keyRoot() + "/" + ns
	}
	return s.keyRoot()
}

// checkName rejects names that cannot be keys.
func (s *Store) checkName(name string) error {
	if name == "" {
		return apierrors.NewBadRequest("name is required")
	}
	for _, msg := range content.IsPathSegmentName(name) {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid name %q: %s", name, msg))
	}
	return nil
}

// setKind sets obj's kind; it writes nothing when the kind is set already, so objects the
// watch cache shares (which have it) are only read.
func (s *Store) setKind(obj runtime.Object) {
	gvk := s.kind.GVK()
	if u, ok := obj.(*unstructured.Unstructured); ok && hasKind(u.Object, gvk) {
		return // what GroupVersionKind would parse, without parsing: every list item asks
	}
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// hasKind reports whether obj's apiVersion and kind are gvk's, written as SetGroupVersionKind
// writes them; false may also mean another spelling of the same (setKind then parses it).
func hasKind(obj map[string]any, gvk schema.GroupVersionKind) bool {
	kind, _ := obj["kind"].(string)
	av, _ := obj["apiVersion"].(string)
	if kind != gvk.Kind {
		return false
	}
	if gvk.Group == "" {
		return av == gvk.Version
	}
	return len(av) == len(gvk.Group)+1+len(gvk.Version) && strings.HasPrefix(av, gvk.Group) &&
		av[len(gvk.Group)] == '/' && strings.HasSuffix(av, gvk.Version)
}

// Get returns one object.
func (s *Store) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	if err := s.checkName(name); err != nil {
		return nil, err
	}
	obj := s.kind.New()
	var o storage.GetOptions
	if opts != nil {
		o.ResourceVersion = opts.ResourceVersion
	}
	if err := s.storage.Get(ctx, s.key(ns, name), o, obj); err != nil {
		return nil, Interpret(err, s.gr(), name)
	}
	s.setKind(obj)
	return obj, nil
}

// predicate parses the selectors of a list or watch.
func (s *Store) predicate(opts *metav1.ListOptions) (storage.Predicate, error) {
	var p storage.Predicate
	if opts == nil {
		return p, nil
	}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
		p.Label = sel
	}
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		known := s.fieldSet(s.kind.New())
		// metadata.namespace is a field label of cluster-scoped kinds too (it matches only
		// ""), but for those with labels of their own (ownFieldLabels, custom resources).
		_, custom := s.kind.New().(*unstructured.Unstructured)
		defaultLabels := !custom && !ownFieldLabels[s.gr()]
		for _, r := range sel.Requirements() {
			if _, ok := known[r.Field]; !ok && (r.Field != "metadata.namespace" || !defaultLabels) {
				return p, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
			}
		}
		p.Field = sel
	}
	p.GetAttrs = s.kind.Attrs
	return p, nil
}

func (s *Store) fieldSet(obj runtime.Object) fields.Set { return s.kind.FieldSet(obj) }

// Attrs returns the labels and selectable fields of obj, an object of kind k: what label
// and field selectors on k match (the watch cache computes them once per object).
func (k *Kind) Attrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	return labels.Set(a.GetLabels()), k.FieldSet(obj), nil
}

// FieldSet returns the selectable fields of obj, an object of kind k.
func (k *Kind) FieldSet(obj runtime.Object) fields.Set {
	a, _ := meta.Accessor(obj)
	set := fields.Set{"metadata.name": a.GetName()}
	if k.Namespaced {
		set["metadata.namespace"] = a.GetNamespace()
	}
	if k.Strategy.Fields != nil {
		for f, v := range k.Strategy.Fields(obj) {
			set[f] = v
		}
	}
	return set
}

func (s *Store) listOptions(opts *metav1.ListOptions) (storage.ListOptions, error) {
	p, err := s.predicate(opts)
	if err != nil {
		return storage.ListOptions{}, err
	}
	o := storage.ListOptions{Predicate: p, Recursive: true}
	if opts != nil {
		o.ResourceVersion = opts.ResourceVersion
		o.ResourceVersionMatch = string(opts.ResourceVersionMatch)
		o.Limit = opts.Limit
		o.Continue = opts.Continue
		o.AllowBookmarks = opts.AllowWatchBookmarks
		if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
			o.SendInitialEvents = true
		}
		switch opts.ResourceVersionMatch {
		case "", metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact:
		default:
			return o, apierrors.NewBadRequest(fmt.Sprintf("unsupported resourceVersionMatch %q", opts.ResourceVersionMatch))
		}
		if opts.ResourceVersionMatch != "" && opts.ResourceVersion == "" {
			return o, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
			return o, apierrors.NewBadRequest("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
		}
		if opts.Continue != "" && opts.ResourceVersionMatch != "" {
			return o, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		}
		if opts.Limit < 0 {
			return o, apierrors.NewBadRequest("limit must be non-negative")
		}
	}
	return o, nil
}

// List returns the objects in ns (all namespaces if ns is empty).
func (s *Store) List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error) {
	o, err := s.listOptions(opts)
	if err != nil {
		return nil, err
	}
	// A name field selector is a single-object read in upstream; keep it a prefix scan,
	// the predicate filters.
	list := s.kind.NewList()
	if err := s.storage.GetList(ctx, s.prefix(ns), o, list); err != nil {
		return nil, Interpret(err, s.gr(), "")
	}
	list.GetObjectKind().SetGroupVersionKind(s.kind.GroupVersion().WithKind(s.kind.ListKind))
	items, _ := meta.ExtractList(list)
	for _, it := range items {
		s.setKind(it)
	}
	return list, nil
}

// ListItems is List for callers that only encode the items (see ItemLister): from the watch
// cache they are not copied into the list.
func (s *Store) ListItems(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, []runtime.Object, bool, error) {
	c, ok := s.storage.(storage.CachedReader)
	if !ok {
		list, err := s.List(ctx, ns, opts)
		if err != nil {
			return nil, nil, false, err
		}
		items, err := meta.ExtractList(list)
		return list, items, false, err
	}
	o, err := s.listOptions(opts)
	if err != nil {
		return nil, nil, false, err
	}
	list := s.kind.NewList()
	items, shared, err := c.GetListItems(ctx, s.prefix(ns), o, list)
	if err != nil {
		return nil, nil, false, Interpret(err, s.gr(), "")
	}
	list.GetObjectKind().SetGroupVersionKind(s.kind.GroupVersion().WithKind(s.kind.ListKind))
	if !shared { // the cache's objects have their kind (its Prepare)
		for _, it := range items {
			s.setKind(it)
		}
	}
	return list, items, shared, nil
}

// Watch streams changes in ns.
func (s *Store) Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error) {
	o, err := s.listOptions(opts)
	if err != nil {
		return nil, err
	}
	key := s.prefix(ns)
	// metadata.name=X watches one key.
	if o.Predicate.Field != nil {
		if name, ok := o.Predicate.Field.RequiresExactMatch("metadata.name"); ok && (ns != "" || !s.kind.Namespaced) {
			key = s.key(ns, name)
			o.Recursive = false
		}
	}
	w, err := s.storage.Watch(ctx, key, o)
	if err != nil {
		return nil, Interpret(err, s.gr(), "")
	}
	if _, ok := s.storage.(storage.CachedReader); ok {
		// The cache's objects carry this kind already (the registry's Prepare), etcd's
		// too when it serves the watch: no filter, whose goroutine and channel would be
		// one more hand-off per event and watcher.
		return w, nil
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type != watch.Error {
			s.setKind(ev.Object)
		}
		return ev, true
	}), nil
}

func (s *Store) validateCreate(obj runtime.Object) field.ErrorList {
	a, _ := meta.Accessor(obj)
	nameFn := s.kind.Strategy.NameValidation
	if f := s.kind.Strategy.ObjectNameValidation; f != nil {
		nameFn = f(obj)
	}
	if nameFn == nil && pathSegmentNames[s.gr()] {
		nameFn = validatePathSegmentName
	}
	if nameFn == nil {
		nameFn = apivalidation.NameIsDNSSubdomain
	}
	errs := apivalidation.ValidateObjectMetaAccessor(forValidation(a), s.kind.Namespaced, nameFn, field.NewPath("metadata"))
	if _, custom := obj.(*unstructured.Unstructured); !custom && !genericMetaValidation[s.gr()] {
		errs = append(errs, validateKubeFinalizerNames(a.GetFinalizers(), field.NewPath("metadata", "finalizers"))...)
	}
	if s.kind.Strategy.Validate != nil {
		errs = append(errs, s.kind.Strategy.Validate(obj)...)
	}
	return errs
}

// standardFinalizers are the finalizer names without a domain that built-in kinds accept.
var standardFinalizers = map[string]bool{"kubernetes": true, metav1.FinalizerOrphanDependents: true, metav1.FinalizerDeleteDependents: true}

// validateKubeFinalizerNames is the check k8s.io/kubernetes's ValidateObjectMeta adds for
// built-in kinds (validateKubeFinalizerName): a finalizer is qualified by a domain or a
// standard one.
func validateKubeFinalizerNames(finalizers []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers[f] {
			errs = append(errs, field.Invalid(p.Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

func (s *Store) invalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(s.kind.GVK().GroupKind(), name, errs)
}

// Create stores a new object.
func (s *Store) Create(ctx context.Context, ns, _ string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	if s.kind.Strategy.BeginCreate != nil {
		if err := s.kind.Strategy.BeginCreate(); err != nil {
			return nil, err
		}
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := s.placeInNamespace(ctx, ns, a); err != nil {
		return nil, err
	}
	s.prepareForCreate(ctx, obj, a)
	dry := opts != nil && DryRun(opts.DryRun)
	var createOpts runtime.Object
	if opts != nil {
		createOpts = opts
	}
	adm := s.admissionFor(ctx, admission.Create, ns, a.GetName(), obj, nil, createOpts, dry)
	if adm != nil {
		s.setKind(obj)
		if err := s.admitMutating(ctx, adm); err != nil {
			return nil, err
		}
		// What the plugins added gets its defaults, as upstream decodes a webhook's patch
		// with defaulting.
		if s.kind.Strategy.Default != nil {
			s.kind.Strategy.Default(obj)
		}
	}
	errs := s.validateCreate(obj)
	if s.kind.Strategy.ValidateNew != nil {
		errs = append(errs, s.kind.Strategy.ValidateNew(obj)...)
	}
	if len(errs) > 0 {
		return nil, s.invalid(a.GetName(), errs)
	}
	if s.admit != nil {
		if err := s.admit(ctx, obj, nil); err != nil {
			return nil, err
		}
	}
	s.setKind(obj)
	if adm != nil {
		if err := s.admission().Validate(ctx, adm); err != nil {
			return nil, err
		}
	}
	undo := func() {}
	if s.alloc != nil {
		if undo, err = s.alloc.Allocate(ctx, obj, nil, dry); err != nil {
			return nil, err
		}
	}
	if dry {
		if err := s.storage.Get(ctx, s.key(ns, a.GetName()), storage.GetOptions{}, s.kind.New()); err == nil {
			return nil, apierrors.NewAlreadyExists(s.gr(), a.GetName())
		}
		return obj, nil
	}
	out := s.kind.New()
	if err := s.storage.Create(ctx, s.key(ns, a.GetName()), obj, out); err != nil {
		if !storage.IsUnknownOutcome(err) {
			undo() // not stored: give back what it reserved (an unknown outcome is left to repair)
		}
		err = Interpret(err, s.gr(), a.GetName())
		if apierrors.IsAlreadyExists(err) && a.GetGenerateName() != "" && a.GetName() != "" {
			return nil, apierrors.NewServerTimeoutForKind(s.kind.GVK().GroupKind(), "POST", 0)
		}
		return nil, err
	}
	s.setKind(out)
	return out, nil
}

// placeInNamespace sets a new object's namespace: the request's for a namespaced kind,
// which must exist and accept new content, none for a cluster-scoped one.
func (s *Store) placeInNamespace(ctx context.Context, ns string, a metav1.Object) error {
	if s.kind.Namespaced {
		if a.GetNamespace() == "" {
			a.SetNamespace(ns)
		}
		if a.GetNamespace() != ns {
			return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		if s.namespaces != nil {
			if err := s.namespaces(ctx, ns); err != nil {
				var terminating *NamespaceTerminatingError
				if errors.As(err, &terminating) {
					// As upstream's NamespaceLifecycle: 403 for what is being created.
					return apierrors.NewForbidden(s.gr(), a.GetName(), err)
				}
				return err
			}
		}
	} else {
		a.SetNamespace("")
	}
	return nil
}

// prepareForCreate sets what the server owns in a new object's metadata (name from
// generateName, UID, creation time, generation), then the kind's create preparation,
// creator and defaults.
func (s *Store) prepareForCreate(ctx context.Context, obj runtime.Object, a metav1.Object) {
	if a.GetName() == "" && a.GetGenerateName() != "" {
		a.SetName(a.GetGenerateName() + utilrand.String(5))
	}
	a.SetUID(types.UID(uuid.NewUUID()))
	a.SetCreationTimestamp(metav1.Now())
	a.SetDeletionTimestamp(nil)
	a.SetDeletionGracePeriodSeconds(nil)
	a.SetResourceVersion("")
	a.SetSelfLink("")
	if s.kind.Strategy.SpecChanged != nil {
		a.SetGeneration(1)
	} else {
		a.SetGeneration(0)
	}
	if s.kind.Strategy.PrepareForCreate != nil {
		s.kind.Strategy.PrepareForCreate(obj)
	}
	if s.kind.Strategy.SetCreator != nil {
		if u, ok := request.UserFrom(ctx); ok {
			s.kind.Strategy.SetCreator(obj, u)
		}
	}
	if s.kind.Strategy.Default != nil {
		s.kind.Strategy.Default(obj)
	}
}

// Update replaces the object (spec side: status changes are dropped when the kind has a status subresource).
func (s *Store) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.update(ctx, ns, name, transform, opts, false)
}

func (s *Store) update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions, statusOnly bool) (runtime.Object, bool, error) {
	if err := s.checkName(name); err != nil {
		return nil, false, err
	}
	dry := opts != nil && DryRun(opts.DryRun)
	var created bool
	var result runtime.Object
	// What the last attempt reserved, and the object it replaced: a conflict retries the
	// attempt, which gives the reservation back first.
	undo, replaced := func() {}, runtime.Object(nil)
	tryUpdate := func(current runtime.Object) (runtime.Object, error) {
		undo()
		undo, replaced = func() {}, nil
		ca, _ := meta.Accessor(current)
		exists := ca.GetResourceVersion() != ""
		// As upstream's Store.Update: a missing object is NotFound before the transform runs,
		// unless this update may create it; only then does transform see nil. A status
		// update follows its kind here, as upstream's status strategies inherit the flag
		// (a PUT to a missing Service's status creates the Service).
		if !exists && !s.kind.Strategy.AllowCreateOnUpdate && !createOnUpdate(ctx) {
			return nil, apierrors.NewNotFound(s.gr(), name)
		}
		var in runtime.Object
		if exists {
			in = current.DeepCopyObject()
			s.setKind(in)
		}
		newObj, err := transform(ctx, in)
		if err != nil {
			return nil, err
		}
		na, err := s.checkUpdateTarget(newObj, ns, name)
		if err != nil {
			return nil, err
		}
		if !exists {
			obj, err := s.createByUpdate(ctx, ns, name, newObj, na, opts)
			if err != nil {
				return nil, err
			}
			created, result = true, obj
			return nil, errCreatedInstead
		}
		if rv := na.GetResourceVersion(); rv != "" && rv != ca.GetResourceVersion() {
			return nil, apierrors.NewConflict(s.gr(), name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
		}
		if na.GetUID() != "" && na.GetUID() != ca.GetUID() {
			//lint:ignore ST1005 upstream's exact message, which clients may match
			return nil, apierrors.NewConflict(s.gr(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", na.GetUID(), ca.GetUID()))
		}
		if err := s.prepareForUpdate(newObj, current, na, ca, statusOnly); err != nil {
			return nil, err
		}
		if err := s.admitUpdate(ctx, ns, name, newObj, current, na, ca, opts, dry, statusOnly); err != nil {
			return nil, err
		}
		if s.alloc != nil && !statusOnly {
			u, err := s.alloc.Allocate(ctx, newObj, current, dry)
			if err != nil {
				return nil, err
			}
			undo, replaced = u, current
		}
		if dry {
			result = newObj
			return nil, errDryRun
		}
		return newObj, nil
	}
	out := s.kind.New()
	err := s.storage.GuaranteedUpdate(ctx, s.key(ns, name), out, true, nil, tryUpdate)
	switch {
	case err == errCreatedInstead:
		return result, created, nil
	case err == errDryRun:
		return result, false, nil
	case err == nil:
		if s.alloc != nil && replaced != nil {
			s.alloc.Release(ctx, out, replaced)
		}
	default:
		if !storage.IsUnknownOutcome(err) {
			undo()
		}
		return nil, false, Interpret(err, s.gr(), name)
	}
	s.setKind(out)
	if !statusOnly {
		if del, ok := s.deleteIfReleased(ctx, ns, name, out); ok {
			return del, false, nil
		}
	}
	return out, created, nil
}

// checkUpdateTarget checks that the object an update writes is the one the request names
// (its namespace is filled in when empty) and returns its metadata.
func (s *Store) checkUpdateTarget(newObj runtime.Object, ns, name string) (metav1.Object, error) {
	na, err := meta.Accessor(newObj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if na.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", na.GetName(), name))
	}
	if s.kind.Namespaced {
		if na.GetNamespace() == "" {
			na.SetNamespace(ns)
		}
		if na.GetNamespace() != ns {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	return na, nil
}

// prepareForUpdate sets what the server owns in an update's metadata, then applies the
// kind's rules: on /status, its PrepareForStatusUpdate keeps what a status write may not
// change (given a copy of the stored object to take it from); otherwise its
// PrepareForUpdate keeps what a main-resource write may not change (the status, for a kind
// with a status subresource), defaults are filled and the generation moves on when the
// kind's SpecChanged says so. A kind with a status subresource must state both rules.
func (s *Store) prepareForUpdate(newObj, current runtime.Object, na, ca metav1.Object, statusOnly bool) error {
	st := &s.kind.Strategy
	if (statusOnly || s.kind.Status) && (st.PrepareForUpdate == nil || st.PrepareForStatusUpdate == nil) {
		return apierrors.NewInternalError(fmt.Errorf("%s has a status subresource but no PrepareForUpdate and PrepareForStatusUpdate rules", s.gr()))
	}
	na.SetUID(ca.GetUID())
	na.SetCreationTimestamp(ca.GetCreationTimestamp())
	na.SetDeletionTimestamp(ca.GetDeletionTimestamp())
	na.SetDeletionGracePeriodSeconds(ca.GetDeletionGracePeriodSeconds())
	na.SetGeneration(ca.GetGeneration())
	if statusOnly {
		st.PrepareForStatusUpdate(newObj, current.DeepCopyObject())
	} else {
		if st.PrepareForUpdate != nil {
			st.PrepareForUpdate(newObj, current)
		}
		if st.Default != nil {
			st.Default(newObj)
		}
		if st.SpecChanged != nil && st.SpecChanged(newObj, current) {
			na.SetGeneration(ca.GetGeneration() + 1)
		}
	}
	na.SetResourceVersion(ca.GetResourceVersion())
	na.SetSelfLink("")
	return nil
}

// admitUpdate runs mutating admission, validation, the kind's admit check and validating
// admission on an update of current to newObj.
func (s *Store) admitUpdate(ctx context.Context, ns, name string, newObj, current runtime.Object, na, ca metav1.Object, opts *metav1.UpdateOptions, dry, statusOnly bool) error {
	var updateOpts runtime.Object
	if opts != nil {
		updateOpts = opts
	}
	adm := s.admissionFor(ctx, admission.Update, ns, name, newObj, current, updateOpts, dry)
	if adm != nil {
		s.setKind(newObj)
		s.setKind(current)
		if err := s.admitMutating(ctx, adm); err != nil {
			return err
		}
		if s.kind.Strategy.Default != nil && !statusOnly {
			s.kind.Strategy.Default(newObj)
		}
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(forValidation(na), ca, field.NewPath("metadata"))
	errs = append(errs, s.validateCreate(newObj)...)
	if s.kind.Strategy.ValidateUpdate != nil {
		errs = append(errs, s.kind.Strategy.ValidateUpdate(newObj, current)...)
	}
	if len(errs) > 0 {
		return s.invalid(name, errs)
	}
	if s.admit != nil && !statusOnly {
		if err := s.admit(ctx, newObj, current); err != nil {
			return err
		}
	}
	s.setKind(newObj)
	if adm != nil {
		if err := s.admission().Validate(ctx, adm); err != nil {
			return err
		}
	}
	return nil
}

// released reports that nothing keeps obj, which is being deleted, any more: no
// finalizers, no graceful deletion waiting for its confirmation (a pod's node agent), and
// nothing the kind holds it by (DeletionHeld), as upstream's ShouldDeleteDuringUpdate.
func (s *Store) released(obj runtime.Object) bool {
	a, err := meta.Accessor(obj)
	if err != nil || a.GetDeletionTimestamp() == nil || len(a.GetFinalizers()) > 0 || ptrOr(a.GetDeletionGracePeriodSeconds(), 0) != 0 {
		return false
	}
	return s.kind.Strategy.DeletionHeld == nil || !s.kind.Strategy.DeletionHeld(obj)
}

// deleteIfReleased deletes obj, just written, when the write released it (its last
// finalizer went), provided nobody changed it since; it returns the deleted object.
func (s *Store) deleteIfReleased(ctx context.Context, ns, name string, obj runtime.Object) (runtime.Object, bool) {
	if !s.released(obj) {
		return nil, false
	}
	a, _ := meta.Accessor(obj)
	rv := a.GetResourceVersion()
	del := s.kind.New()
	if err := s.storage.Delete(ctx, s.key(ns, name), del, &storage.Preconditions{ResourceVersion: &rv}, nil); err != nil {
		return nil, false // changed meanwhile: whoever changed it decides
	}
	s.setKind(del)
	s.removed(ctx, del)
	return del, true
}

// createByUpdate creates newObj (metadata na), which an update of the missing object ns/name
// brought, as a create does.
func (s *Store) createByUpdate(ctx context.Context, ns, name string, newObj runtime.Object, na metav1.Object, opts *metav1.UpdateOptions) (runtime.Object, error) {
	// upstream's storage checks a PUT object's uid as a precondition against the missing
	// object's empty one (an apply has none); a resourceVersion is no precondition.
	if uid := na.GetUID(); uid != "" && !createOnUpdate(ctx) {
		return nil, s.PreconditionFailed(ns, name, fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: ", uid))
	}
	na.SetResourceVersion("")
	return s.Create(ctx, ns, name, newObj, &metav1.CreateOptions{DryRun: dryRunOf(opts)})
}

type createOnUpdateKey struct{}

// WithCreateOnUpdate makes an Update of a missing object create it whatever the kind's
// AllowCreateOnUpdate says, as server-side apply does upstream (forceAllowCreate).
func WithCreateOnUpdate(ctx context.Context) context.Context {
	return context.WithValue(ctx, createOnUpdateKey{}, true)
}

func createOnUpdate(ctx context.Context) bool {
	v, _ := ctx.Value(createOnUpdateKey{}).(bool)
	return v
}

var (
	errCreatedInstead = fmt.Errorf("created instead of updated")
	errDryRun         = fmt.Errorf("dry run")
)

func dryRunOf(opts *metav1.UpdateOptions) []string {
	if opts == nil {
		return nil
	}
	return opts.DryRun
}

// Delete removes an object, or marks it for deletion when it has finalizers.
func (s *Store) Delete(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if err := s.checkName(name); err != nil {
		return nil, false, err
	}
	if s.kind.Strategy.CheckDelete != nil {
		if err := s.kind.Strategy.CheckDelete(ns, name); err != nil {
			return nil, false, err
		}
	}
	var precond *storage.Preconditions
	if opts != nil && opts.Preconditions != nil {
		precond = &storage.Preconditions{UID: opts.Preconditions.UID, ResourceVersion: opts.Preconditions.ResourceVersion}
	}
	if opts != nil && opts.PropagationPolicy != nil {
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
		default:
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("unsupported propagationPolicy %q", *opts.PropagationPolicy))
		}
	}
	if opts != nil && DryRun(opts.DryRun) {
		current := s.kind.New()
		if err := s.storage.Get(ctx, s.key(ns, name), storage.GetOptions{}, current); err != nil {
			return nil, false, Interpret(err, s.gr(), name)
		}
		s.setKind(current)
		if err := s.admitDelete(ctx, ns, name, current, opts, true); err != nil {
			return nil, false, err
		}
		// What the deletion would do, not stored: marked, or gone at once.
		if s.onTerminate != nil {
			s.markDeleting(current, nil, 0, true)
			return current, false, nil
		}
		finalizers, grace, now := s.deletion(current, opts)
		if !now || s.kind.Strategy.GracePeriod != nil {
			s.markDeleting(current, finalizers, grace, false)
		}
		return current, now, nil
	}
	if s.onTerminate == nil {
		return s.deleteObject(ctx, ns, name, precond, opts)
	}
	// A namespace: set deletionTimestamp and let the namespace cleaner finish.
	out := s.kind.New()
	err := s.storage.GuaranteedUpdate(ctx, s.key(ns, name), out, false, precond, func(cur runtime.Object) (runtime.Object, error) {
		s.setKind(cur)
		if err := s.admitDelete(ctx, ns, name, cur.DeepCopyObject(), opts, false); err != nil {
			return nil, err
		}
		s.markDeleting(cur, nil, 0, true)
		return cur, nil
	})
	if err != nil {
		return nil, false, Interpret(err, s.gr(), name)
	}
	s.setKind(out)
	s.onTerminate(ctx, out)
	return out, false, nil
}

// deleteObject deletes an object now, or, when it has finalizers or its kind deletes
// gracefully (a pod on a node), marks it with a deletionTimestamp and leaves the rest to
// whoever removes the finalizers or confirms the deletion, as upstream's generic store does.
// The propagation policy becomes the garbage collector's finalizers: Foreground adds
// foregroundDeletion, Orphan (or orphanDependents) adds orphan.
func (s *Store) deleteObject(ctx context.Context, ns, name string, precond *storage.Preconditions, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	key := s.key(ns, name)
	for {
		// At once, unless the very read the deletion is conditioned on says it must wait: a
		// finalizer added meanwhile makes it start over and see it.
		out := s.kind.New()
		err := s.storage.Delete(ctx, key, out, precond, func(_ context.Context, cur runtime.Object) error {
			s.setKind(cur)
			if err := s.admitDelete(ctx, ns, name, cur, opts, false); err != nil {
				return err
			}
			if _, _, now := s.deletion(cur, opts); !now {
				return errMustMark
			}
			return nil
		})
		if err == nil {
			s.setKind(out)
			s.removed(ctx, out)
			if s.kind.Strategy.GracePeriod != nil {
				// A kind deleted gracefully answers as marked, as upstream's BeforeDelete leaves it.
				s.markDeleting(out, nil, 0, false)
			}
			return out, true, nil
		}
		if !errors.Is(err, errMustMark) {
			return nil, false, Interpret(err, s.gr(), name)
		}
		// Mark it: deletionTimestamp, grace period, the garbage collector's finalizers. An
		// object already marked as asked is not written again.
		out = s.kind.New()
		err = s.storage.GuaranteedUpdate(ctx, key, out, false, precond, func(cur runtime.Object) (runtime.Object, error) {
			finalizers, grace, now := s.deletion(cur, opts)
			if now {
				return nil, errDeleteNow // what held it went meanwhile
			}
			s.markDeleting(cur, finalizers, grace, false)
			return cur, nil
		})
		if errors.Is(err, errDeleteNow) {
			continue
		}
		if err != nil {
			return nil, false, Interpret(err, s.gr(), name)
		}
		s.setKind(out)
		return out, false, nil
	}
}

// markDeleting marks cur as being deleted: deletionTimestamp grace seconds from now (unless
// an earlier deletion already set a sooner one), the grace period, the finalizers that hold
// it, and the kind's own marks (a namespace's phase); the generation moves, as upstream's
// generic store moves it. A namespace (keepFinalizers) keeps its finalizers and first
// deletionTimestamp, and gets no grace period, as upstream's namespace store.
func (s *Store) markDeleting(cur runtime.Object, finalizers []string, grace int64, keepFinalizers bool) {
	ca, _ := meta.Accessor(cur)
	if keepFinalizers {
		if ca.GetDeletionTimestamp() == nil {
			now := metav1.Now()
			ca.SetDeletionTimestamp(&now)
		}
	} else {
		// As upstream's generic store marks an object deleting; the kinds with marks of their
		// own (a definition) have their own upstream delete, which leaves it.
		if ca.GetDeletionTimestamp() == nil && ca.GetGeneration() > 0 && s.kind.Strategy.MarkDeleting == nil {
			ca.SetGeneration(ca.GetGeneration() + 1)
		}
		if ca.GetDeletionTimestamp() == nil || grace < ptrOr(ca.GetDeletionGracePeriodSeconds(), grace+1) {
			ts := metav1.NewTime(time.Now().Add(time.Duration(grace) * time.Second))
			ca.SetDeletionTimestamp(&ts)
			ca.SetDeletionGracePeriodSeconds(&grace)
		}
		ca.SetFinalizers(finalizers)
	}
	if s.kind.Strategy.MarkDeleting != nil {
		s.kind.Strategy.MarkDeleting(cur)
	}
}

var (
	errMustMark  = errors.New("the deletion must wait for finalizers or a grace period")
	errDeleteNow = errors.New("nothing holds the object being deleted any more")
)

// deletion decides what deleting cur with opts does: the finalizers that hold it and the grace
// period it waits for; now when neither does. A deletion already under way may be hurried,
// never delayed.
func (s *Store) deletion(cur runtime.Object, opts *metav1.DeleteOptions) (finalizers []string, grace int64, now bool) {
	ca, _ := meta.Accessor(cur)
	finalizers = deletionFinalizers(ca.GetFinalizers(), opts, orphansByDefault[s.gr()])
	if s.kind.Strategy.DeletionFinalizers != nil {
		finalizers = s.kind.Strategy.DeletionFinalizers(cur, finalizers)
	}
	if s.kind.Strategy.GracePeriod != nil {
		grace = s.kind.Strategy.GracePeriod(cur, opts)
	}
	if old := ca.GetDeletionGracePeriodSeconds(); ca.GetDeletionTimestamp() != nil && old != nil && *old < grace {
		grace = *old
	}
	return finalizers, grace, grace == 0 && len(finalizers) == 0
}

func ptrOr(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

// deletionFinalizers are the finalizers an object being deleted with opts carries: the
// garbage collector's orphan or foregroundDeletion as the propagation policy asks, or as
// the object already had (upstream's deletionFinalizersForGarbageCollection; the default
// policy of every v1 kind is Background, which adds neither).
func deletionFinalizers(cur []string, opts *metav1.DeleteOptions, defaultOrphan bool) []string {
	orphan, foreground := slices.Contains(cur, metav1.FinalizerOrphanDependents), slices.Contains(cur, metav1.FinalizerDeleteDependents)
	var orphanDependents *bool
	if opts != nil {
		//lint:ignore SA1019 old clients still send orphanDependents, and upstream honours it
		orphanDependents = opts.OrphanDependents
	}
	switch {
	case orphanDependents != nil:
		orphan, foreground = *orphanDependents, false
	case opts != nil && opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	case orphan:
		foreground = false
	case !foreground:
		orphan = defaultOrphan
	}
	out := make([]string, 0, len(cur)+1)
	for _, f := range cur {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if len(out) == len(cur) && !slices.ContainsFunc(out, func(f string) bool { return !slices.Contains(cur, f) }) {
		return cur // the same set: keep its order, so that nothing needs writing
	}
	return out
}

// DeleteCollection deletes every object the list options select.
func (s *Store) DeleteCollection(ctx context.Context, ns string, opts *metav1.DeleteOptions, listOpts *metav1.ListOptions) (runtime.Object, error) {
	lo := metav1.ListOptions{}
	if listOpts != nil {
		lo = *listOpts
		lo.Limit, lo.Continue = 0, ""
	}
	list, err := s.List(ctx, ns, &lo)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var kept []runtime.Object
	for _, it := range items {
		a, _ := meta.Accessor(it)
		o := &metav1.DeleteOptions{}
		if opts != nil {
			o.DryRun = opts.DryRun
			o.PropagationPolicy = opts.PropagationPolicy
		}
		obj, _, err := s.Delete(ctx, a.GetNamespace(), a.GetName(), o)
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if obj != nil {
			kept = append(kept, obj)
		}
	}
	if err := meta.SetList(list, kept); err != nil {
		return nil, err
	}
	return list, nil
}

// StatusStore serves the status subresource of a kind.
type StatusStore struct{ store *Store }

func (s *StatusStore) New() runtime.Object           { return s.store.New() }
func (s *StatusStore) Kind() schema.GroupVersionKind { return s.store.Kind() }
func (s *StatusStore) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return s.store.Get(ctx, ns, name, opts)
}
func (s *StatusStore) Update(ctx context.Context, ns, name string, transform TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.store.update(ctx, ns, name, transform, opts, true)
}

// NewStore returns a generic store for k on s (custom kinds, tests).
// namespaces, when set, is asked whether a namespace accepts new objects.
func NewStore(k *Kind, s storage.Interface, namespaces func(ctx context.Context, ns string) error) *Store {
	return &Store{kind: k, storage: s, namespaces: namespaces}
}

// AdmitFunc checks a create (old is nil) or update of obj by the caller in ctx, after
// validation; a non-nil error refuses it (the RBAC escalation and bind checks).
type AdmitFunc func(ctx context.Context, obj, old runtime.Object) error

// NamespaceTerminatingError refuses new content in a namespace being deleted; the store
// turns it into upstream's NamespaceLifecycle 403 for the object being created.
type NamespaceTerminatingError struct{ Namespace string }

func (e *NamespaceTerminatingError) Error() string {
	return fmt.Sprintf("unable to create new content in namespace %s because it is being terminated", e.Namespace)
}

// Allocator reserves what an object takes from a cluster-wide pool before the object is
// stored, and gives it back when the object no longer holds it. The generic store calls it
// around its writes; Services use it for their ClusterIPs and NodePorts.
type Allocator interface {
	// Allocate reserves what obj needs that old (nil on create) does not hold, writing the
	// chosen values into obj. undo gives back exactly what this call reserved, for a write
	// that did not happen. With dryRun nothing is reserved, but obj is filled the same way.
	Allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (undo func(), err error)
	// Release gives back what old holds and obj (nil once old is deleted) does not.
	Release(ctx context.Context, obj, old runtime.Object)
}
