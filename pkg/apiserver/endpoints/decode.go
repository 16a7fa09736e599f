package endpoints

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/hacp/hacp/pkg/apiserver/jsonvalue"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"sigs.k8s.io/yaml"
)

// MaxRequestBodyBytes is upstream's limit on request bodies (3 MiB).
const MaxRequestBodyBytes = 3 * 1024 * 1024

var protoSerializer = protobuf.NewSerializer(registry.Scheme, registry.Scheme)

var strictSerializer = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, registry.Scheme, registry.Scheme, kjson.SerializerOptions{Strict: true})

// readBody reads at most MaxRequestBodyBytes; more is 413.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to read request body: %v", err))
	}
	if len(data) > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	return data, nil
}

// syntaxError names where a JSON document is broken.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := 1, 1
		for _, b := range data[:min(int(se.Offset), len(data))] {
			if b == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
		return apierrors.NewBadRequest(fmt.Sprintf("the request body is not valid JSON: %v at line %d, column %d (byte offset %d)", se, line, col, se.Offset))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return apierrors.NewBadRequest(fmt.Sprintf("the request body has the wrong type at %q (byte offset %d): expected %v, got JSON %s", te.Field, te.Offset, te.Type, te.Value))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the request body is malformed: %v", err))
}

// toJSON returns the body as JSON, converting YAML when the content type says so.
func toJSON(r *http.Request, data []byte) ([]byte, error) {
	ct := r.Header.Get("Content-Type")
	mt := "application/json"
	if ct != "" {
		var err error
		mt, _, err = mime.ParseMediaType(ct)
		if err != nil {
			return nil, unsupportedMediaType(ct)
		}
	}
	switch mt {
	case "application/json", "*/*":
	case protobufType:
		obj, _, err := protoSerializer.Decode(data, nil, nil)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the request body is not a valid protobuf object: %v", err))
		}
		j, err := json.Marshal(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		data = j
	case "application/yaml", "application/x-yaml", "text/yaml":
		j, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the request body is not valid YAML: %v", err))
		}
		data = j
	default:
		return nil, unsupportedMediaType(ct)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	if !json.Valid(data) {
		var probe any
		return nil, syntaxError(data, json.Unmarshal(data, &probe))
	}
	if trimmed := bytes.TrimSpace(data); trimmed[0] != '{' {
		return nil, apierrors.NewBadRequest("the request body must be a JSON object")
	}
	return data, nil
}

func unsupportedMediaType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got %q)", ct),
	}}
}

// fieldValidation reads the fieldValidation query parameter (default Warn, as upstream).
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return "Warn", nil
	case "Strict", "Warn", "Ignore":
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of Ignore, Warn or Strict, not %q", v))
}

// isProtobuf reports whether the request body is in Kubernetes' protobuf encoding.
func isProtobuf(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == protobufType
}

// decodeProto decodes a protobuf body straight into a new object of gvk. Protobuf has no
// unknown fields to report, so fieldValidation does not apply, as upstream.
func decodeProto(data []byte, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, error) {
	if len(data) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	into := newObj()
	obj, actual, err := protoSerializer.Decode(data, &gvk, into)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the request body is not a valid protobuf object: %v", err))
	}
	if actual.GroupVersion() != gvk.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", actual.GroupVersion().String(), gvk.GroupVersion().String()))
	}
	if actual.Kind != gvk.Kind || obj != into {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", actual.Kind, gvk.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// decodeObject decodes a JSON body into a new object of gvk, checking its
// apiVersion/kind and unknown fields according to fieldValidation.
func decodeObject(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, error) {
	validation, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, syntaxError(data, err)
	}
	if tm.APIVersion != "" && tm.APIVersion != gvk.GroupVersion().String() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", tm.APIVersion, gvk.GroupVersion().String()))
	}
	if tm.Kind != "" && tm.Kind != gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gvk.Kind))
	}
	into := newObj()
	var obj runtime.Object
	var msgs []string
	if u, ok := into.(*unstructured.Unstructured); ok {
		// What the strict serializer does for an unstructured object, without its
		// reflection: the object, and its duplicate keys as strict errors.
		m, duplicates, err := jsonvalue.UnmarshalObjectStrict(data)
		if err != nil {
			return nil, syntaxError(data, err)
		}
		u.SetUnstructuredContent(m)
		if u.GetKind() == "" {
			return nil, syntaxError(data, runtime.NewMissingKindErr(string(data)))
		}
		obj = u
		for _, p := range duplicates {
			msgs = append(msgs, "duplicate field "+strconv.Quote(p))
		}
	} else {
		var err error
		obj, _, err = strictSerializer.Decode(data, &gvk, into)
		if err != nil {
			if !runtime.IsStrictDecodingError(err) {
				return nil, syntaxError(data, err)
			}
			if sde, ok := runtime.AsStrictDecodingError(err); ok {
				for _, e := range sde.Errors() {
					msgs = append(msgs, e.Error())
				}
			} else {
				msgs = []string{err.Error()}
			}
		}
	}
	if len(msgs) > 0 {
		switch validation {
		case "Strict":
			return nil, apierrors.NewBadRequest("strict decoding error: " + strings.Join(msgs, ", "))
		case "Warn":
			for _, m := range msgs {
				addWarning(w, m)
			}
		}
		if obj == nil {
			obj = into
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

func addWarning(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
}

// decodeDeleteOptions reads optional DeleteOptions from the body and query.
func decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) > 0 {
		j, err := toJSON(r, data)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(j, opts); err != nil {
			return nil, syntaxError(j, err)
		}
	}
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

var parameterCodec = runtime.NewParameterCodec(registry.Scheme)

// decodeQuery decodes query parameters into one of the metav1 option types.
func decodeQuery(r *http.Request, into runtime.Object) error {
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid query parameters: %v", err))
	}
	return nil
}

// optionsGV is where metav1.AddToGroupVersion registers the option types.
var optionsGV = schema.GroupVersion{Version: "v1"}
