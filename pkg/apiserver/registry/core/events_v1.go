package core

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// eventsV1Names is events.k8s.io/v1 events: the core/v1 events in the other shape.
var eventsV1Names = registry.Names{Group: "events.k8s.io", Version: "v1", Kind: "Event", ListKind: "EventList", Plural: "events", Singular: "event",
	ShortNames: []string{"ev"}, Namespaced: true}

// EventsV1Store serves events.k8s.io/v1 events from the core/v1 events' storage, as upstream
// does: one object, two shapes, converted on the way in and out; both are watchable.
type EventsV1Store struct{ core *registry.Store }

func (e *EventsV1Store) New() runtime.Object     { return &eventsv1.Event{} }
func (e *EventsV1Store) NewList() runtime.Object { return &eventsv1.EventList{} }
func (e *EventsV1Store) Kind() schema.GroupVersionKind {
	return eventsV1Names.GVK()
}

func (e *EventsV1Store) Get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := e.core.Get(ctx, ns, name, opts)
	if err != nil {
		return nil, e.regroup(err)
	}
	return eventToV1(obj.(*corev1.Event)), nil
}

func (e *EventsV1Store) List(ctx context.Context, ns string, opts *metav1.ListOptions) (runtime.Object, error) {
	obj, err := e.core.List(ctx, ns, opts)
	if err != nil {
		return nil, e.regroup(err)
	}
	return eventListToV1(obj.(*corev1.EventList)), nil
}

func eventListToV1(l *corev1.EventList) *eventsv1.EventList {
	out := &eventsv1.EventList{ListMeta: l.ListMeta}
	out.SetGroupVersionKind(eventsV1Names.GroupVersion().WithKind("EventList"))
	for i := range l.Items {
		out.Items = append(out.Items, *eventToV1(&l.Items[i]))
	}
	return out
}

func (e *EventsV1Store) Create(ctx context.Context, ns, name string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	ev, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not an events.k8s.io/v1 Event: %T", obj))
	}
	if errs := validateEventV1(ev); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, ev.Name, errs)
	}
	out, err := e.core.Create(ctx, ns, name, eventFromV1(ev), opts)
	if err != nil {
		return nil, e.regroup(err)
	}
	return eventToV1(out.(*corev1.Event)), nil
}

func (e *EventsV1Store) Update(ctx context.Context, ns, name string, transform registry.TransformFunc, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	out, created, err := e.core.Update(ctx, ns, name, func(ctx context.Context, cur runtime.Object) (runtime.Object, error) {
		var in runtime.Object
		if cur != nil {
			in = eventToV1(cur.(*corev1.Event))
		}
		next, err := transform(ctx, in)
		if err != nil {
			return nil, err
		}
		ev, ok := next.(*eventsv1.Event)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("not an events.k8s.io/v1 Event: %T", next))
		}
		if errs := validateEventV1(ev); len(errs) > 0 {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, ev.Name, errs)
		}
		return eventFromV1(ev), nil
	}, opts)
	if err != nil {
		return nil, false, e.regroup(err)
	}
	return eventToV1(out.(*corev1.Event)), created, nil
}

func (e *EventsV1Store) Delete(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	out, deleted, err := e.core.Delete(ctx, ns, name, opts)
	if err != nil {
		return nil, false, e.regroup(err)
	}
	return eventToV1(out.(*corev1.Event)), deleted, nil
}

func (e *EventsV1Store) DeleteCollection(ctx context.Context, ns string, opts *metav1.DeleteOptions, listOpts *metav1.ListOptions) (runtime.Object, error) {
	out, err := e.core.DeleteCollection(ctx, ns, opts, listOpts)
	if err != nil {
		return nil, e.regroup(err)
	}
	return eventListToV1(out.(*corev1.EventList)), nil
}

func (e *EventsV1Store) Watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error) {
	w, err := e.core.Watch(ctx, ns, opts)
	if err != nil {
		return nil, e.regroup(err)
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		// Bookmarks too are core Events (with only a resourceVersion).
		if o, ok := ev.Object.(*corev1.Event); ok {
			ev.Object = eventToV1(o)
		}
		return ev, true
	}), nil
}

// regroup names this group in the core store's NotFound, AlreadyExists and Conflict errors.
func (e *EventsV1Store) regroup(err error) error {
	var se *apierrors.StatusError
	if !asStatusErr(err, &se) || se.ErrStatus.Details == nil || se.ErrStatus.Details.Kind != "events" {
		return err
	}
	out := *se
	d := *se.ErrStatus.Details
	d.Group = eventsV1Names.Group
	out.ErrStatus.Details = &d
	out.ErrStatus.Message = strings.Replace(out.ErrStatus.Message, `events "`, `events.events.k8s.io "`, 1)
	return &out
}

func asStatusErr(err error, target **apierrors.StatusError) bool { return errors.As(err, target) }

// eventToV1 is upstream's Convert_core_Event_To_v1_Event.
func eventToV1(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.SetGroupVersionKind(eventsV1Names.GVK())
	return out
}

// eventFromV1 is upstream's Convert_v1_Event_To_core_Event.
func eventFromV1(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Event"))
	return out
}

// validateEventV1 is upstream's validation of events written in the events.k8s.io shape.
func validateEventV1(ev *eventsv1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
	} else {
		errs = append(errs, registry.ValidateQualifiedName(ev.ReportingController, field.NewPath("reportingController"))...)
	}
	if ev.ReportingInstance == "" {
		errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
	} else if len(ev.ReportingInstance) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", "can have at most 128 characters"))
	}
	if ev.Action == "" {
		errs = append(errs, field.Required(field.NewPath("action"), ""))
	} else if len(ev.Action) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("action"), "", "can have at most 128 characters"))
	}
	if ev.Reason == "" {
		errs = append(errs, field.Required(field.NewPath("reason"), ""))
	} else if len(ev.Reason) > 128 {
		errs = append(errs, field.Invalid(field.NewPath("reason"), "", "can have at most 128 characters"))
	}
	if len(ev.Note) > 1024 {
		errs = append(errs, field.Invalid(field.NewPath("note"), "", "can have at most 1024 characters"))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", "has invalid value: "+ev.Type))
	}
	if ev.Series != nil {
		if ev.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
		}
		if ev.Series.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
		}
	}
	return errs
}

// DeleteCorrupt is registry.CorruptObjectDeleter's: the core Event's unsafe deletion.
func (e *EventsV1Store) DeleteCorrupt(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) error {
	return e.regroup(e.core.DeleteCorrupt(ctx, ns, name, opts))
}

// DeletesCorrupt is registry.CorruptObjectDeleter's.
func (e *EventsV1Store) DeletesCorrupt() bool { return e.core.DeletesCorrupt() }
