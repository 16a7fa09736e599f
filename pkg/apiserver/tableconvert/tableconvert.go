// Package tableconvert turns API objects into meta.k8s.io/v1 Tables, the
// server-side printing that `kubectl get` asks for with
// Accept: application/json;as=Table;v=v1;g=meta.k8s.io. Columns follow
// kube-apiserver's printers for the built-in kinds hacp serves; any other
// object gets NAME and AGE.
package tableconvert

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes/scheme"
)

// tableGVK is the kind of every Table returned.
var tableGVK = metav1.SchemeGroupVersion.WithKind("Table")

// printer knows the columns of one kind and how to fill a row.
type printer struct {
	columns []metav1.TableColumnDefinition
	// row returns the cells (same order as columns) and optional conditions.
	row func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition)
}

// printers is keyed by the Go type of the item (e.g. *corev1.Pod) and of its
// list type (e.g. *corev1.PodList), so empty lists still get columns.
var printers = map[reflect.Type]*printer{}

// register adds the printer for item type T and list type L.
func register[T runtime.Object](list runtime.Object, columns []metav1.TableColumnDefinition, row func(T, time.Time) ([]any, []metav1.TableRowCondition)) {
	var zero T
	p := &printer{
		columns: columns,
		row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
			return row(obj.(T), now)
		},
	}
	printers[reflect.TypeOf(zero)] = p
	printers[reflect.TypeOf(list)] = p
}

// ToTable converts obj, a single object or a list, into a Table with one row
// per object. Typed k8s.io/api objects of the kinds in this package get
// their kube-apiserver columns; an *unstructured.Unstructured(List) of such
// a kind is converted to the typed object first; everything else gets NAME
// and AGE. Column definitions are omitted when opts.NoHeaders is set.
//
// rows[].object follows opts.IncludeObject as upstream: "None" leaves it
// empty, "Object" embeds the full object (apiVersion and kind filled in from
// client-go's scheme when the typed object lacks them), and "Metadata" or ""
// embeds a meta.k8s.io/v1 PartialObjectMetadata.
func ToTable(obj runtime.Object, opts metav1.TableOptions) (*metav1.Table, error) {
	return toTable(obj, opts, time.Now())
}

func toTable(obj runtime.Object, opts metav1.TableOptions, now time.Time) (*metav1.Table, error) {
	return convert(obj, opts, now, nil)
}

// convert does the work of ToTable; a non-nil custom printer replaces the
// per-kind printers for every item.
func convert(obj runtime.Object, opts metav1.TableOptions, now time.Time, custom *printer) (*metav1.Table, error) {
	if obj == nil {
		return nil, fmt.Errorf("tableconvert: nil object")
	}
	if v := reflect.ValueOf(obj); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("tableconvert: nil %T", obj)
	}
	switch opts.IncludeObject {
	case "", metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject:
	default:
		return nil, fmt.Errorf("tableconvert: unknown includeObject %q (want None, Metadata or Object)", opts.IncludeObject)
	}
	if custom == nil {
		obj = typed(obj)
	}

	table := &metav1.Table{}
	table.SetGroupVersionKind(tableGVK)

	var items []runtime.Object
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, fmt.Errorf("tableconvert: %w", err)
		}
		if l, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else {
		items = []runtime.Object{obj}
		if m, err := meta.Accessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}

	p := custom
	if p == nil {
		p = printers[reflect.TypeOf(obj)]
	}
	if p == nil {
		p = defaultPrinter
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = p.columns
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		ip := custom
		if ip == nil {
			item = typed(item)
			ip = printers[reflect.TypeOf(item)]
		}
		if ip != p {
			// A heterogeneous list (e.g. a v1 List): print every item with
			// the columns every kind has.
			ip = defaultPrinter
			if p != defaultPrinter {
				return nil, fmt.Errorf("tableconvert: list %T holds a %T", obj, item)
			}
		}
		cells, conds := ip.row(item, now)
		row := metav1.TableRow{Cells: cells, Conditions: conds}
		embedded, err := rowObject(item, opts.IncludeObject)
		if err != nil {
			return nil, err
		}
		row.Object.Object = embedded
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// rowObject returns what rows[].object holds for policy.
func rowObject(obj runtime.Object, policy metav1.IncludeObjectPolicy) (runtime.Object, error) {
	switch policy {
	case metav1.IncludeNone:
		return nil, nil
	case metav1.IncludeObject:
		if obj.GetObjectKind().GroupVersionKind().Empty() {
			gvks, _, err := scheme.Scheme.ObjectKinds(obj)
			if err != nil || len(gvks) == 0 {
				return obj, nil
			}
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		return obj, nil
	default:
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("tableconvert: %T has no metadata: %w", obj, err)
		}
		partial := meta.AsPartialObjectMetadata(m)
		partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
		return partial, nil
	}
}

// typed converts an unstructured object or list of a kind this package
// prints into its k8s.io/api type; anything else is returned unchanged.
func typed(obj runtime.Object) runtime.Object {
	u, ok := obj.(runtime.Unstructured)
	if !ok {
		return obj
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		return obj
	}
	if ul, ok := obj.(*unstructured.UnstructuredList); ok && gvk.Kind == "List" {
		return ul
	}
	out, err := scheme.Scheme.New(gvk)
	if err != nil || printers[reflect.TypeOf(out)] == nil {
		return obj
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return obj
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out
}

// age is the AGE cell: kubectl's short duration since t, "<unknown>" for a
// zero time.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// Column helpers with upstream's descriptions.
var objectMetaDocs = metav1.ObjectMeta{}.SwaggerDoc()

func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDocs["name"]}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDocs["creationTimestamp"]}
}

// createdAtColumns are kube-apiserver's default table (rest.NewDefaultTableConvertor), of the
// built-in kinds without a printer upstream: NAME and CREATED AT.
func createdAtColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn(), {Name: "Created At", Type: "date", Description: objectMetaDocs["creationTimestamp"]}}
}

func createdAt(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

func col(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

func wide(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc, Priority: 1}
}

// defaultPrinter prints NAME and AGE for any object with metadata.
var defaultPrinter = &printer{
	columns: []metav1.TableColumnDefinition{nameColumn(), ageColumn()},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return []any{"", "<unknown>"}, nil
		}
		return []any{m.GetName(), age(m.GetCreationTimestamp(), now)}, nil
	},
}
