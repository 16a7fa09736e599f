package diffupstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

// corpusNamespace holds the corpus's namespaced objects (the golden files' namespace).
const corpusNamespace = "golden"

// corpus is the objects (testdata/golden/corpus.yaml, in order: definitions before their
// objects) and the mutations that make invalid objects of them (testdata/diff/mutations.yaml).
type corpus struct {
	objects   []*unstructured.Unstructured
	mutations []mutation
}

// mutation is one entry of mutations.yaml.
type mutation struct {
	Name  string           `yaml:"name"`
	Kinds []string         `yaml:"kinds"`
	Query string           `yaml:"query"`
	Patch []map[string]any `yaml:"patch"`
	ops   jsonpatch.Patch
}

func loadCorpus(testdata string) (*corpus, error) {
	objs, err := ReadObjects(filepath.Join(testdata, "golden", "corpus.yaml"))
	if err != nil {
		return nil, err
	}
	path := filepath.Join(testdata, "diff", "mutations.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := &corpus{objects: objs}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c.mutations); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range c.mutations {
		m := &c.mutations[i]
		pb, err := json.Marshal(m.Patch)
		if err != nil {
			return nil, err
		}
		if m.ops, err = jsonpatch.DecodePatch(pb); err != nil || m.Name == "" {
			return nil, fmt.Errorf("%s: mutation %d %q: want a name and a JSON patch: %v", path, i+1, m.Name, err)
		}
	}
	return c, nil
}

// ReadObjects reads the manifests of a YAML (or JSON) stream, in order.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := yamlutil.NewYAMLOrJSONDecoder(f, 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}

// apply returns obj mutated, or false if the mutation is not for its kind or does not apply.
func (m *mutation) apply(obj *unstructured.Unstructured) (map[string]any, bool) {
	if len(m.Kinds) > 0 && !slices.Contains(m.Kinds, obj.GetKind()) {
		return nil, false
	}
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, false
	}
	out, err := m.ops.Apply(b)
	if err != nil {
		return nil, false
	}
	var v map[string]any
	if json.Unmarshal(out, &v) != nil {
		return nil, false
	}
	return v, true
}

// GoldenKey names an object's golden file: kind.name, lower case kind.
func GoldenKey(obj *unstructured.Unstructured) string {
	return strings.ToLower(obj.GetKind()) + "." + obj.GetName()
}

// writeGolden replaces dir's files with kube-apiserver's answers to the creates, normalized.
func writeGolden(dir string, objs []*unstructured.Unstructured, answers map[string]map[string]any) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, obj := range objs {
		key := GoldenKey(obj)
		a, ok := answers[key]
		if !ok {
			return fmt.Errorf("golden %s: kube-apiserver did not create it", key)
		}
		b, err := json.MarshalIndent(NormalizeGolden(a), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, key+".json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
