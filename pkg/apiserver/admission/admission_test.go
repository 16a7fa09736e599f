package admission

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPlugins(t *testing.T) {
	impl := map[string]bool{NamespaceLifecycle: true, ServiceAccount: true, NodeRestriction: true, MutatingAdmissionWebhook: true,
		ValidatingAdmissionWebhook: true, ResourceQuota: true, AlwaysDeny: true}
	for _, tc := range []struct {
		name             string
		enable, disable  []string
		want             []string
		wantErrSubstring string
	}{
		{name: "defaults", want: []string{NamespaceLifecycle, ServiceAccount, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, ResourceQuota}},
		{name: "enable an off plugin, in upstream's order", enable: []string{AlwaysDeny, NodeRestriction},
			want: []string{NamespaceLifecycle, ServiceAccount, NodeRestriction, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, ResourceQuota, AlwaysDeny}},
		{name: "disable a default", disable: []string{ServiceAccount, "TaintNodesByCondition"},
			want: []string{NamespaceLifecycle, MutatingAdmissionWebhook, ValidatingAdmissionWebhook, ResourceQuota}},
		{name: "unknown enable", enable: []string{"Nope"}, wantErrSubstring: `enable-admission-plugins plugin "Nope" is unknown`},
		{name: "unknown disable", disable: []string{"Nope"}, wantErrSubstring: `disable-admission-plugins plugin "Nope" is unknown`},
		{name: "not implemented", enable: []string{"AlwaysPullImages"}, wantErrSubstring: `plugin "AlwaysPullImages" is not implemented by hacp`},
		{name: "overlap", enable: []string{NodeRestriction}, disable: []string{NodeRestriction}, wantErrSubstring: `[NodeRestriction] in enable-admission-plugins and disable-admission-plugins overlapped`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plugins(tc.enable, tc.disable, impl)
			if tc.wantErrSubstring != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstring) {
					t.Fatalf("err %v, want %q", err, tc.wantErrSubstring)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestNewForbidden(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct {
		name string
		a    *Attributes
		want string
	}{
		{"named", &Attributes{Resource: pods, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}, `pods "p" is forbidden: no`},
		{"generateName", &Attributes{Resource: pods, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "p-"}}}, `pods "p-" is forbidden: no`},
		{"delete", &Attributes{Resource: pods, Name: "p", OldObject: &corev1.Pod{}}, `pods "Unknown" is forbidden: no`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewForbidden(tc.a, errors.New("no"))
			if !apierrors.IsForbidden(err) || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestChainOrder: mutating plugins run in order before validating ones, and the first
// refusal stops the chain.
func TestChainOrder(t *testing.T) {
	var trace []string
	c := Chain{
		&recorder{name: "m1", trace: &trace, mutate: true},
		&recorder{name: "v1", trace: &trace, validate: true},
		&recorder{name: "mv", trace: &trace, mutate: true, validate: true, refuse: true},
		&recorder{name: "v2", trace: &trace, validate: true},
	}
	a := &Attributes{Operation: Create}
	if err := c.Admit(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(t.Context(), a); err == nil {
		t.Fatal("refusal lost")
	}
	want := []string{"admit m1", "admit mv", "validate v1", "validate mv"}
	if !reflect.DeepEqual(trace, want) {
		t.Fatalf("trace %v, want %v", trace, want)
	}
	trace = nil
	a.Operation = Connect // handled by nobody
	_ = c.Admit(t.Context(), a)
	if len(trace) != 0 {
		t.Fatalf("plugins ran for an operation they do not handle: %v", trace)
	}
}

type recorder struct {
	name                     string
	trace                    *[]string
	mutate, validate, refuse bool
}

func (r *recorder) Handles(op Operation) bool { return op != Connect }

func (r *recorder) Admit(_ context.Context, a *Attributes) error {
	if r.mutate {
		*r.trace = append(*r.trace, "admit "+r.name)
	}
	return nil
}

func (r *recorder) Validate(_ context.Context, a *Attributes) error {
	if !r.validate {
		return nil
	}
	*r.trace = append(*r.trace, "validate "+r.name)
	if r.refuse {
		return NewForbidden(a, errors.New("refused"))
	}
	return nil
}
