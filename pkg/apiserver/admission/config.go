package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// ConfigFile is kube-apiserver's --admission-control-config-file: an AdmissionConfiguration
// (apiserver.config.k8s.io/v1, or the older apiserver.k8s.io/v1alpha1) whose plugins entries
// carry each plugin's configuration inline or in a file of its own (path, relative to the
// configuration's directory).
type ConfigFile struct {
	// Plugins maps a plugin name to its configuration, as JSON.
	Plugins map[string][]byte
}

type admissionConfiguration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Plugins    []struct {
		Name          string          `json:"name"`
		Path          string          `json:"path,omitempty"`
		Configuration json.RawMessage `json:"configuration,omitempty"`
	} `json:"plugins"`
}

// LoadConfigFile reads and checks an admission configuration file.
func LoadConfigFile(path string) (*ConfigFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var ac admissionConfiguration
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ac); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case ac.Kind != "AdmissionConfiguration":
		return nil, fmt.Errorf("%s: kind %q, want AdmissionConfiguration", path, ac.Kind)
	case ac.APIVersion != "apiserver.config.k8s.io/v1" && ac.APIVersion != "apiserver.k8s.io/v1alpha1" && ac.APIVersion != "apiserver.config.k8s.io/v1alpha1":
		return nil, fmt.Errorf("%s: apiVersion %q, want apiserver.config.k8s.io/v1", path, ac.APIVersion)
	}
	out := &ConfigFile{Plugins: map[string][]byte{}}
	for i, p := range ac.Plugins {
		if p.Name == "" {
			return nil, fmt.Errorf("%s: plugins[%d].name: Required value", path, i)
		}
		if _, dup := out.Plugins[p.Name]; dup {
			return nil, fmt.Errorf("%s: plugins[%d].name: Duplicate value: %q", path, i, p.Name)
		}
		cfg := []byte(p.Configuration)
		if p.Path != "" {
			file := p.Path
			if !filepath.IsAbs(file) {
				file = filepath.Join(filepath.Dir(path), file)
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("%s: plugins[%d].path: %w", path, i, err)
			}
			if cfg, err = yaml.YAMLToJSON(raw); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
		}
		out.Plugins[p.Name] = cfg
	}
	return out, nil
}
