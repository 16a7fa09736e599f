package tableconvert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/jsonpath"
)

// Column is one printer column of a custom kind: a CustomResourceDefinition
// version's additionalPrinterColumns entry.
type Column struct {
	Name        string
	Type        string // integer, number, string, boolean or date
	Format      string
	Description string
	Priority    int32
	JSONPath    string // simple JSONPath such as .spec.replicas
}

// Printer prints custom kinds with a NAME column followed by their own
// columns, as kube-apiserver does for custom resources with
// additionalPrinterColumns.
type Printer struct {
	p *printer
}

// NewPrinter checks cols and returns a Printer for them. A CRD without
// additionalPrinterColumns gets an Age column of type date on
// .metadata.creationTimestamp by API defaulting; pass that column here too,
// or use ToTable, which prints NAME and AGE.
func NewPrinter(cols []Column) (*Printer, error) {
	columns := []metav1.TableColumnDefinition{nameColumn()}
	paths := make([]*jsonpath.JSONPath, 0, len(cols))
	for _, c := range cols {
		switch c.Type {
		case "integer", "number", "string", "boolean", "date":
		default:
			return nil, fmt.Errorf("tableconvert: column %q: type %q is not one of integer, number, string, boolean, date", c.Name, c.Type)
		}
		jp := jsonpath.New(c.Name).AllowMissingKeys(true)
		if err := jp.Parse("{" + c.JSONPath + "}"); err != nil {
			return nil, fmt.Errorf("tableconvert: column %q: bad JSONPath %q: %w", c.Name, c.JSONPath, err)
		}
		paths = append(paths, jp)
		desc := c.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + c.JSONPath
		}
		columns = append(columns, metav1.TableColumnDefinition{Name: c.Name, Type: c.Type, Format: c.Format, Description: desc, Priority: c.Priority})
	}
	row := func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if u, ok := obj.(runtime.Unstructured); ok {
			content, err = u.UnstructuredContent(), nil
		}
		cells := make([]any, 1, 1+len(paths))
		cells[0], _ = nameOf(obj)
		for i, jp := range paths {
			if err != nil {
				cells = append(cells, nil)
				continue
			}
			cells = append(cells, columnCell(jp, cols[i].Type, content, now))
		}
		return cells, nil
	}
	return &Printer{p: &printer{columns: columns, row: row}}, nil
}

// ToTable converts obj (one object or a list) as the package-level ToTable
// does, but with p's columns for every item.
func (p *Printer) ToTable(obj runtime.Object, opts metav1.TableOptions) (*metav1.Table, error) {
	return p.toTable(obj, opts, time.Now())
}

func (p *Printer) toTable(obj runtime.Object, opts metav1.TableOptions, now time.Time) (*metav1.Table, error) {
	return convert(obj, opts, now, p.p)
}

func nameOf(obj runtime.Object) (string, error) {
	if u, ok := obj.(interface{ GetName() string }); ok {
		return u.GetName(), nil
	}
	return "", fmt.Errorf("%T has no name", obj)
}

// columnCell evaluates one column for an object's JSON content: missing
// values are null cells, strings are printed as JSONPath prints them, the
// other types keep their JSON type, dates become ages.
func columnCell(jp *jsonpath.JSONPath, typ string, content map[string]any, now time.Time) any {
	results, err := jp.FindResults(content)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	value := results[0][0].Interface()
	if value == nil {
		return nil
	}
	switch typ {
	case "string":
		var buf bytes.Buffer
		if err := jp.PrintResults(&buf, results[0][:1]); err != nil {
			return nil
		}
		return buf.String()
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return age(t, now)
		}
	}
	return nil
}
