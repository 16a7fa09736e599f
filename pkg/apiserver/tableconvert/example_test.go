package tableconvert_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/tableconvert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ExampleToTable() {
	cm := &corev1.ConfigMapList{Items: []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1", "b": "2"}},
	}}
	table, err := tableconvert.ToTable(cm, metav1.TableOptions{IncludeObject: metav1.IncludeNone})
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	fmt.Println(strings.Join(names, " "))
	fmt.Println(table.Rows[0].Cells...)
	// Output:
	// Name Data Age
	// settings 2 <unknown>
}
