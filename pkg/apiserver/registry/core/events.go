package core

import (
	"github.com/hacp/hacp/pkg/apiserver/registry"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func EventsKind() *registry.Kind {
	return &registry.Kind{
		Names: registry.Names{Version: "v1", Kind: "Event", ListKind: "EventList", Plural: "events", Singular: "event",
			ShortNames: []string{"ev"}, Namespaced: true},
		New:     func() runtime.Object { return &corev1.Event{} },
		NewList: func() runtime.Object { return &corev1.EventList{} },
		Strategy: registry.Strategy{
			// upstream: PUT creates missing Events (both core/v1 and events.k8s.io/v1).
			AllowCreateOnUpdate: true,
			Validate: func(obj runtime.Object) field.ErrorList {
				ev := obj.(*corev1.Event)
				if ev.InvolvedObject.Namespace != "" && ev.InvolvedObject.Namespace != ev.Namespace {
					return field.ErrorList{field.Invalid(field.NewPath("involvedObject", "namespace"), ev.InvolvedObject.Namespace, "does not match event.namespace")}
				}
				return nil
			},
			Fields: func(obj runtime.Object) fields.Set {
				ev := obj.(*corev1.Event)
				return fields.Set{
					"involvedObject.kind":            ev.InvolvedObject.Kind,
					"involvedObject.namespace":       ev.InvolvedObject.Namespace,
					"involvedObject.name":            ev.InvolvedObject.Name,
					"involvedObject.uid":             string(ev.InvolvedObject.UID),
					"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
					"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
					"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
					"reason":                         ev.Reason,
					"reportingComponent":             ev.ReportingController,
					"source":                         ev.Source.Component,
					"type":                           ev.Type,
				}
			},
		},
	}
}
