package server_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/flowcontrol"
	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// ensureBootstrap runs the bootstrap configuration producer once against s's stores.
func ensureBootstrap(t *testing.T, s *server.Server) {
	t.Helper()
	pls := s.Registry().Resource(flowcontrolv1.Resource("prioritylevelconfigurations")).Store
	fss := s.Registry().Resource(flowcontrolv1.Resource("flowschemas")).Store
	if err := flowcontrol.EnsureBootstrap(context.Background(), pls, fss); err != nil {
		t.Fatal(err)
	}
}

func bootstrapNames[T metav1.Object](lists ...[]T) []string {
	var out []string
	for _, l := range lists {
		for _, o := range l {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// TestFlowControlBootstrap: a fresh server has upstream's mandatory and suggested
// FlowSchemas and priority levels, annotated autoupdate-spec=true; the producer puts a
// mandatory spec back, and a suggested one while its annotation is true, recreates a
// deleted one, and deletes objects it once made that are bootstrap ones no more.
func TestFlowControlBootstrap(t *testing.T) {
	s := servertest.New(t, nil)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	fc, ctx := cs.FlowcontrolV1(), context.Background()
	fsl, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pll, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gotFS, gotPL []string
	for _, fs := range fsl.Items {
		gotFS = append(gotFS, fs.Name)
		if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("FlowSchema %s: annotations %v", fs.Name, fs.Annotations)
		}
	}
	for _, pl := range pll.Items {
		gotPL = append(gotPL, pl.Name)
	}
	slices.Sort(gotFS)
	slices.Sort(gotPL)
	if want := bootstrapNames(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas); !slices.Equal(gotFS, want) {
		t.Errorf("FlowSchemas %v, want %v", gotFS, want)
	}
	if want := bootstrapNames(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations); !slices.Equal(gotPL, want) {
		t.Errorf("priority levels %v, want %v", gotPL, want)
	}

	edit := func(name string, f func(*flowcontrolv1.FlowSchema)) {
		fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(fs)
		if _, err := fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	edit("catch-all", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 9000 })      // mandatory
	edit("global-default", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 9000 }) // suggested, auto-updated
	edit("service-accounts", func(fs *flowcontrolv1.FlowSchema) {                                    // suggested, the admin's now
		fs.Spec.MatchingPrecedence = 8000
		fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	})
	editPL := func(name string, f func(*flowcontrolv1.PriorityLevelConfiguration)) {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(pl)
		if _, err := fc.PriorityLevelConfigurations().Update(ctx, pl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	editPL("catch-all", func(pl *flowcontrolv1.PriorityLevelConfiguration) {
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](50)
	}) // mandatory
	editPL("workload-low", func(pl *flowcontrolv1.PriorityLevelConfiguration) { // suggested, the admin's now
		pl.Spec.Limited.NominalConcurrencyShares = ptr.To[int32](7)
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
	})
	if err := fc.FlowSchemas().Delete(ctx, "kube-scheduler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	extra := func(name string, ann map[string]string) {
		fs := bootstrap.SuggestedFlowSchemaGlobalDefault.DeepCopy()
		fs.ObjectMeta = metav1.ObjectMeta{Name: name, Annotations: ann}
		if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	extra("retired-bootstrap", map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"})
	extra("admins-own", nil)

	ensureBootstrap(t, s)
	precedence := map[string]int32{"catch-all": 10000, "global-default": 9900, "service-accounts": 8000, "kube-scheduler": 800, "admins-own": 9900}
	for name, want := range precedence {
		fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fs.Spec.MatchingPrecedence != want {
			t.Errorf("%s: matchingPrecedence %d, want %d", name, fs.Spec.MatchingPrecedence, want)
		}
	}
	for name, want := range map[string]int32{"catch-all": 5, "workload-low": 7} {
		pl, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *pl.Spec.Limited.NominalConcurrencyShares; got != want {
			t.Errorf("priority level %s: nominalConcurrencyShares %d, want %d", name, got, want)
		}
	}
	if _, err := fc.FlowSchemas().Get(ctx, "retired-bootstrap", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("an auto-updated FlowSchema no longer in the bootstrap configuration: %v, want deleted", err)
	}
}

// TestFlowControlDangling: a FlowSchema naming a missing priority level gets Dangling=True
// (NotFound), one whose level exists Dangling=False (Found), with upstream's messages.
func TestFlowControlDangling(t *testing.T) {
	s := servertest.New(t, nil)
	fc := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s)).FlowcontrolV1()
	ctx := context.Background()
	fs := bootstrap.SuggestedFlowSchemaGlobalDefault.DeepCopy()
	fs.ObjectMeta = metav1.ObjectMeta{Name: "orphan"}
	fs.Spec.PriorityLevelConfiguration.Name = "missing"
	if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	condition := func(name string) flowcontrolv1.FlowSchemaCondition {
		got, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return c
			}
		}
		return flowcontrolv1.FlowSchemaCondition{}
	}
	eventually(t, "orphan Dangling=True", func() bool {
		c := condition("orphan")
		return c.Status == flowcontrolv1.ConditionTrue && c.Reason == "NotFound" &&
			c.Message == `This FlowSchema references the PriorityLevelConfiguration object named "missing" but there is no such object`
	})
	eventually(t, "global-default Dangling=False", func() bool {
		c := condition("global-default")
		return c.Status == flowcontrolv1.ConditionFalse && c.Reason == "Found" &&
			c.Message == `This FlowSchema references the PriorityLevelConfiguration object named "global-default" and it exists`
	})
	pl := bootstrap.SuggestedPriorityLevelConfigurationGlobalDefault.DeepCopy()
	pl.ObjectMeta = metav1.ObjectMeta{Name: "missing"}
	if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "orphan Dangling=False once its level exists", func() bool {
		return condition("orphan").Status == flowcontrolv1.ConditionFalse
	})
}

// tinyLevel makes a priority level of one seat that neither lends nor borrows, with one
// queue of one, and a FlowSchema sending user's requests to it; user may do anything.
func tinyLevel(t *testing.T, cs kubernetes.Interface, user string) (fsUID, plUID string) {
	t.Helper()
	ctx := context.Background()
	pl, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1),
				LendablePercent: ptr.To[int32](0), BorrowingLimitPercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 1}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := cs.FlowcontrolV1().FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "tiny"},
			MatchingPrecedence: 100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return string(fs.UID), string(pl.UID)
}

// TestFlowControlQueueAndReject: on a priority level of one seat with one queue of one,
// a request waits while another holds the seat, the next is rejected with 429, Retry-After
// and upstream's plain-text body, and every answer names the FlowSchema and priority level
// by UID in the X-Kubernetes-PF-* headers; the queued request runs once the seat is free.
func TestFlowControlQueueAndReject(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 1, 1 })
	e := newHTTPEnv(t, s)
	cs := kubernetes.NewForConfigOrDie(servertest.RestConfig(t, s))
	const user = "tiny-user"
	fsUID, plUID := tinyLevel(t, cs, user)
	as := map[string]string{"Impersonate-User": user}
	eventually(t, "tiny-user's requests classified to the tiny level", func() bool {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		return r.StatusCode == 200 && r.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == fsUID && r.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == plUID
	})
	metric := func(line string) bool {
		_, b := e.do(e.admin, "GET", "/metrics", "", nil, nil)
		return strings.Contains(string(b), line)
	}
	// A create whose body trickles in holds the one seat until the body is complete.
	pr, pw := io.Pipe()
	held := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.URL()+"/api/v1/namespaces/default/configmaps", pr)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Impersonate-User", user)
		resp, err := e.admin.Do(req)
		if err != nil {
			held <- 0
			return
		}
		resp.Body.Close()
		held <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte(`{"apiVersion":"v1","kind":"ConfigMap",`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the held create executing", func() bool {
		return metric(`apiserver_flowcontrol_current_executing_requests{flow_schema="tiny",priority_level="tiny"} 1`)
	})
	queued := make(chan int, 1)
	go func() {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		queued <- r.StatusCode
	}()
	eventually(t, "a request in the queue", func() bool {
		return metric(`apiserver_flowcontrol_current_inqueue_requests{flow_schema="tiny",priority_level="tiny"} 1`)
	})
	resp, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		string(body) != "Too many requests, please try again later.\n" {
		t.Fatalf("with the seat and the queue full: %d, Retry-After %q, body %q; want 429, 1 and upstream's text",
			resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") != fsUID || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != plUID {
		t.Fatalf("429 headers %v, want the tiny FlowSchema's and level's UIDs", resp.Header)
	}
	if !metric(`apiserver_flowcontrol_rejected_requests_total{flow_schema="tiny",priority_level="tiny",reason="queue-full"} 1`) {
		t.Error("the rejection is not counted in apiserver_flowcontrol_rejected_requests_total")
	}
	if _, err := pw.Write([]byte(`"metadata":{"name":"held"}}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-held; code != http.StatusCreated {
		t.Fatalf("held create: %d", code)
	}
	if code := <-queued; code != http.StatusOK {
		t.Fatalf("queued list: %d, want 200 once the seat was free", code)
	}
	// system:masters is exempt: the admin's requests name the exempt level.
	pls, err := cs.FlowcontrolV1().PriorityLevelConfigurations().Get(context.Background(), "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := e.do(e.admin, "GET", "/api/v1/namespaces", "", nil, nil); r.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") != string(pls.UID) {
		t.Errorf("admin request: priority level UID %q, want exempt's %s", r.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"), pls.UID)
	}
}

// TestFlowControlWatchHoldsNoSeat: watches wait for a seat of their level but do not keep
// it while they stream: on a level of one seat and a queue of one, two open watches leave
// room for a list.
func TestFlowControlWatchHoldsNoSeat(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) { c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = 1, 1 })
	e := newHTTPEnv(t, s)
	rc := servertest.RestConfig(t, s)
	cs := kubernetes.NewForConfigOrDie(rc)
	const user = "watcher"
	fsUID, _ := tinyLevel(t, cs, user)
	as := map[string]string{"Impersonate-User": user}
	eventually(t, "the watcher's requests classified to the tiny level", func() bool {
		r, _ := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as)
		return r.StatusCode == 200 && r.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == fsUID
	})
	wc := rest.CopyConfig(rc)
	wc.Impersonate = rest.ImpersonationConfig{UserName: user}
	for range 2 {
		w := openStream(t, wc, "/api/v1/namespaces/default/configmaps?watch=true")
		if w.StatusCode != http.StatusOK || w.Header.Get("X-Kubernetes-PF-FlowSchema-UID") != fsUID {
			t.Fatalf("watch: %s, FlowSchema UID %q", w.Status, w.Header.Get("X-Kubernetes-PF-FlowSchema-UID"))
		}
	}
	if r, body := e.do(e.admin, "GET", "/api/v1/namespaces/default/configmaps", "", nil, as); r.StatusCode != http.StatusOK {
		t.Fatalf("a list beside two open watches on a level of one seat: %d %s", r.StatusCode, body)
	}
}
