package tableconvert

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func widget(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	// Decode numbers (int64 vs float64) as the apiserver's decoder does.
	if err := u.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPrinterColumns(t *testing.T) {
	p, err := NewPrinter([]Column{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Ratio", Type: "number", JSONPath: ".spec.ratio"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color", Description: "The color."},
		{Name: "Ready", Type: "boolean", JSONPath: ".status.ready", Priority: 1},
		{Name: "Ports", Type: "string", JSONPath: ".spec.ports"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	created := ago(90 * time.Minute).UTC().Format(time.RFC3339)
	w1 := widget(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","creationTimestamp":"`+created+`"},
		"spec":{"size":3,"ratio":0.5,"color":"red","ports":[80,443]},"status":{"ready":true}}`)
	w2 := widget(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":"big"}}`)

	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "WidgetList", "metadata": map[string]any{"resourceVersion": "12"}}}
	list.Items = []unstructured.Unstructured{*w1, *w2}
	table, err := p.toTable(list, metav1.TableOptions{}, now)
	if err != nil {
		t.Fatal(err)
	}
	wantCols := []string{"Name", "Size", "Ratio", "Color", "Ready", "Ports", "Age"}
	if !reflect.DeepEqual(columnNames(table), wantCols) {
		t.Errorf("columns = %v", columnNames(table))
	}
	if d := table.ColumnDefinitions[3].Description; d != "The color." {
		t.Errorf("Color description = %q", d)
	}
	if d := table.ColumnDefinitions[1].Description; d != "Custom resource definition column (in JSONPath format): .spec.size" {
		t.Errorf("Size description = %q", d)
	}
	if table.ColumnDefinitions[4].Priority != 1 {
		t.Errorf("Ready priority = %d", table.ColumnDefinitions[4].Priority)
	}
	want := [][]any{
		{"w1", int64(3), 0.5, "red", true, "[80,443]", "90m"},
		{"w2", nil, nil, nil, nil, nil, nil},
	}
	for i, w := range want {
		if !reflect.DeepEqual(table.Rows[i].Cells, w) {
			t.Errorf("row %d = %#v\nwant    %#v", i, table.Rows[i].Cells, w)
		}
	}
	if table.ResourceVersion != "12" {
		t.Errorf("resourceVersion = %q", table.ResourceVersion)
	}
	if got := table.Rows[0].Object.Object.(*metav1.PartialObjectMetadata).Name; got != "w1" {
		t.Errorf("row object name = %q", got)
	}
	if _, err := json.Marshal(table); err != nil {
		t.Fatal(err)
	}
}

func TestNewPrinterRejects(t *testing.T) {
	tests := []struct {
		name string
		col  Column
	}{
		{"unknown type", Column{Name: "X", Type: "float", JSONPath: ".spec.x"}},
		{"bad jsonpath", Column{Name: "X", Type: "string", JSONPath: ".spec[?("}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewPrinter([]Column{tt.col}); err == nil {
				t.Error("accepted")
			}
		})
	}
}
