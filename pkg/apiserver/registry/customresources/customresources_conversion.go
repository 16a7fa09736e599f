package customresources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hacp/hacp/pkg/apiserver/webhookclient"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// conversionTimeout bounds one ConversionReview, as upstream's webhook client timeout.
const conversionTimeout = 30 * time.Second

// webhookConverter converts custom objects between the versions of a definition through its
// conversion webhook, as upstream's: a ConversionReview (the first of v1 and v1beta1 the
// definition accepts) per conversion, and a converted object may change nothing of its
// metadata but labels and annotations (the rest is restored from the original).
type webhookConverter struct {
	clients        *webhookclient.Clients
	cc             webhookclient.Config
	reviewVersion  string // "v1" or "v1beta1"
	kind           string // of the definition, for errors
	definitionName string
}

// newWebhookConverter returns crd's converter, or nil when its strategy is None.
func (r *Manager) newWebhookConverter(crd *apiextensionsv1.CustomResourceDefinition) *webhookConverter {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil || c.Webhook.ClientConfig == nil {
		return nil
	}
	cc := webhookclient.Config{URL: c.Webhook.ClientConfig.URL, CABundle: c.Webhook.ClientConfig.CABundle}
	if s := c.Webhook.ClientConfig.Service; s != nil {
		cc.Service = &webhookclient.Service{Namespace: s.Namespace, Name: s.Name, Path: s.Path, Port: s.Port}
	}
	wc := &webhookConverter{clients: r.conversionClients(), cc: cc, kind: crd.Spec.Names.Kind, definitionName: crd.Name}
	for _, v := range c.Webhook.ConversionReviewVersions {
		if v == "v1" || v == "v1beta1" {
			wc.reviewVersion = v
			break
		}
	}
	return wc
}

// conversionClients is the registry's webhook clients for conversion; services resolve
// through the registry's own Services and Endpoints.
func (r *Manager) conversionClients() *webhookclient.Clients {
	r.convOnce.Do(func() {
		get := func(resource string) func(ctx context.Context, ns, name string) (runtime.Object, error) {
			st := r.cfg.Builtin(schema.GroupResource{Resource: resource}).Store
			return func(ctx context.Context, ns, name string) (runtime.Object, error) {
				return st.Get(ctx, ns, name, &metav1.GetOptions{})
			}
		}
		r.convClients = webhookclient.New(webhookclient.EndpointsResolver(get("services"), get("endpoints")))
	})
	return r.convClients
}

// convert returns obj at apiVersion. obj is not modified. Its errors are 500s with the
// message upstream's have (upstream's handlers answer plain errors so: reason Unknown).
func (c *webhookConverter) convert(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error) {
	out, err := c.doConvert(ctx, obj, apiVersion)
	if err != nil {
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	return out, nil
}

func (c *webhookConverter) doConvert(ctx context.Context, obj map[string]any, apiVersion string) (map[string]any, error) {
	in := &unstructured.Unstructured{Object: obj}
	if in.GetAPIVersion() == apiVersion {
		return obj, nil
	}
	failed := func(err error) error {
		return fmt.Errorf("conversion webhook for %v failed: %w", in.GroupVersionKind(), err)
	}
	if c.reviewVersion == "" {
		return nil, failed(errors.New("no supported conversion review versions"))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, failed(err)
	}
	uid := types.UID(uuid.NewUUID())
	review := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/" + c.reviewVersion, Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: uid, DesiredAPIVersion: apiVersion, Objects: []runtime.RawExtension{{Raw: raw}}},
	}
	body, err := json.Marshal(&review)
	if err != nil {
		return nil, failed(err)
	}
	ctx, cancel := context.WithTimeout(ctx, conversionTimeout)
	defer cancel()
	data, err := c.clients.Post(ctx, c.cc, body)
	if err != nil {
		return nil, failed(err)
	}
	var resp apiextensionsv1.ConversionReview
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, failed(fmt.Errorf("invalid response: %w", err))
	}
	if c.reviewVersion == "v1" { // v1beta1 answers were never checked for these (upstream)
		if resp.APIVersion != "apiextensions.k8s.io/v1" || resp.Kind != "ConversionReview" {
			return nil, failed(fmt.Errorf("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got %s, Kind=%s", resp.APIVersion, resp.Kind))
		}
	}
	if resp.Response == nil {
		return nil, failed(errors.New("no response provided"))
	}
	if c.reviewVersion == "v1" && resp.Response.UID != uid {
		return nil, failed(fmt.Errorf("expected response.uid=%q, got %q", uid, resp.Response.UID))
	}
	if resp.Response.Result.Status != metav1.StatusSuccess {
		if resp.Response.Result.Message != "" {
			return nil, failed(errors.New(resp.Response.Result.Message))
		}
		return nil, failed(fmt.Errorf("response.result.status was '%s', not 'Success'", resp.Response.Result.Status))
	}
	if n := len(resp.Response.ConvertedObjects); n != 1 {
		return nil, fmt.Errorf("conversion webhook for %v returned %d objects, expected 1", in.GroupVersionKind(), n)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(resp.Response.ConvertedObjects[0].Raw); err != nil {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid object at index 0: %w", in.GroupVersionKind(), err)
	}
	invalid := func(err error) error {
		return fmt.Errorf("conversion webhook for %v returned invalid object: %w", in.GroupVersionKind(), err)
	}
	if got := out.GetAPIVersion(); got != apiVersion {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid object at index 0: invalid groupVersion (expected %v, received %v)", in.GroupVersionKind(), apiVersion, got)
	}
	if e, a := in.GetKind(), out.GetKind(); e != a {
		return nil, invalid(fmt.Errorf("must have the same kind: %v != %v", e, a))
	}
	if e, a := in.GetName(), out.GetName(); e != a {
		return nil, invalid(fmt.Errorf("must have the same name: %v != %v", e, a))
	}
	if e, a := in.GetNamespace(), out.GetNamespace(); e != a {
		return nil, invalid(fmt.Errorf("must have the same namespace: %v != %v", e, a))
	}
	if e, a := in.GetUID(), out.GetUID(); e != a {
		return nil, invalid(fmt.Errorf("must have the same UID: %v != %v", e, a))
	}
	if err := restoreObjectMeta(in, out); err != nil {
		return nil, fmt.Errorf("conversion webhook for %v returned invalid metadata: %w", in.GroupVersionKind(), err)
	}
	return out.Object, nil
}

// restoreObjectMeta keeps original's metadata in converted but for labels and annotations,
// which a webhook may change (validated as any object's), as upstream.
func restoreObjectMeta(original, converted *unstructured.Unstructured) error {
	resp, ok := converted.Object["metadata"].(map[string]any)
	if !ok {
		if _, found := converted.Object["metadata"]; !found {
			return errors.New("missing metadata in converted object")
		}
		return fmt.Errorf("invalid metadata of type %T in converted object", converted.Object["metadata"])
	}
	md := map[string]any{}
	if m, ok := original.Object["metadata"].(map[string]any); ok {
		md = runtime.DeepCopyJSONValue(m).(map[string]any)
	}
	for _, fld := range []string{"labels", "annotations"} {
		v, found := resp[fld]
		if !found || v == nil {
			delete(md, fld)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("invalid metadata.%s of type %T in converted object", fld, v)
		}
		strs := make(map[string]string, len(m))
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("metadata.%s[%s] must be a string, but is %T in converted object", fld, k, v)
			}
			strs[k] = s
		}
		var errs field.ErrorList
		if fld == "labels" {
			errs = metav1validation.ValidateLabels(strs, field.NewPath("metadata", "labels"))
		} else {
			errs = apivalidation.ValidateAnnotations(strs, field.NewPath("metadata", "annotation"))
		}
		if len(errs) > 0 {
			return errs.ToAggregate()
		}
		md[fld] = m
	}
	converted.Object["metadata"] = md
	return nil
}
