// Package encryption reads kube-apiserver's --encryption-provider-config (an
// apiserver.config.k8s.io/v1 EncryptionConfiguration) and builds upstream's value
// transformers from it (identity, aescbc, aesgcm, secretbox, KMS v2), one per resource, so
// that hacp writes and reads exactly what kube-apiserver does with the same file.
package encryption

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/hacp/hacp/pkg/config"
	"gopkg.in/yaml.v3"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// The kind and apiVersion a configuration file must have.
const (
	Kind       = "EncryptionConfiguration"
	APIVersion = "apiserver.config.k8s.io/v1"
)

// Load reads and checks the EncryptionConfiguration file at path: strict decoding (unknown
// fields are errors), upstream's defaults (KMS timeout 3s) and upstream's validation (one
// provider per entry, key lengths, resource names and wildcards, unique KMS names). Errors
// are *config.Error values naming the file, and the line and key when known.
func Load(path string) (*apiserverv1.EncryptionConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &config.Error{File: path, Msg: fmt.Sprintf("cannot read encryption configuration: %v", err)}
	}
	return Parse(path, data)
}

// Parse is Load for data already read; name stands for the file in errors.
func Parse(name string, data []byte) (*apiserverv1.EncryptionConfiguration, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := &config.Error{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLineRe.FindStringSubmatch(e.Msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = m[2]
		}
		return nil, e
	}
	js, err := sigsyaml.YAMLToJSON(data)
	if err != nil {
		return nil, &config.Error{File: name, Msg: err.Error()}
	}
	var c apiserverv1.EncryptionConfiguration
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, decodeError(name, &doc, err)
	}
	if c.Kind != Kind || c.APIVersion != APIVersion {
		return nil, &config.Error{File: name, Line: config.LineOf(&doc, "kind"),
			Msg: fmt.Sprintf("kind %q, apiVersion %q: want kind %s, apiVersion %s", c.Kind, c.APIVersion, Kind, APIVersion)}
	}
	setDefaults(&c)
	var errs []error
	for _, e := range Validate(&c) {
		key := dottedPath(e.Field)
		errs = append(errs, &config.Error{File: name, Line: config.LineOf(&doc, key), Key: e.Field, Msg: e.ErrorBody()})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &c, nil
}

var yamlLineRe = regexp.MustCompile(`^line (\d+): (.*)$`)

var unknownFieldRe = regexp.MustCompile(`unknown field "([^"]*)"`)

// decodeError ties a JSON decoding error to the line of the key it names, when it names one.
func decodeError(name string, doc *yaml.Node, err error) error {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	e := &config.Error{File: name, Msg: msg}
	if m := unknownFieldRe.FindStringSubmatch(msg); m != nil {
		e.Key, e.Msg = m[1], "unknown field"
		e.Line = lineOfKey(doc, m[1])
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		e.Key = te.Field
		e.Line = config.LineOf(doc, te.Field)
		e.Msg = fmt.Sprintf("cannot be a %s, want %s", te.Value, te.Type)
	}
	return e
}

// lineOfKey returns the line of the first mapping key named key (as json's unknown-field
// error names a key without its path), or 0.
func lineOfKey(n *yaml.Node, key string) int {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i].Line
			}
		}
	}
	for _, c := range n.Content {
		if l := lineOfKey(c, key); l > 0 {
			return l
		}
	}
	return 0
}

var indexRe = regexp.MustCompile(`\[(\d+)\]`)

// dottedPath turns a field path ("resources[0].providers[1].aescbc") into the dotted form
// config.LineOf takes ("resources.0.providers.1.aescbc").
func dottedPath(p string) string {
	return indexRe.ReplaceAllString(p, ".$1")
}

// setDefaults applies upstream's defaults of the v1 types that hacp uses.
func setDefaults(c *apiserverv1.EncryptionConfiguration) {
	for i := range c.Resources {
		for j := range c.Resources[i].Providers {
			if k := c.Resources[i].Providers[j].KMS; k != nil {
				apiserverv1.SetDefaults_KMSConfiguration(k)
			}
		}
	}
}
