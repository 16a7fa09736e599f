package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hacp/hacp/pkg/apiserver/informer"
	"github.com/hacp/hacp/pkg/apiserver/registry"
	"github.com/hacp/hacp/pkg/apiserver/request"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Config configures the authorizer.
type Config struct {
	// Modes are the --authorization-mode values, in order (see ParseModes).
	Modes    []string
	Registry registry.Resources
	// Informers gives the shared informers the caches are fed from (started by the
	// registry: authz's start at once).
	Informers *informer.Factory
	Logger    *slog.Logger
}

// Authz is the apiserver's authorizer: system:masters, then the configured modes, in order.
// It also owns what RBAC needs around it: the caches, the bootstrap policy, ClusterRole
// aggregation and the escalation checks on the RBAC kinds.
type Authz struct {
	union Union
	modes []string
	rbac  *RBAC
	node  *Node
	reg   registry.Resources
	inf   *informer.Factory
	log   *slog.Logger
	wg    sync.WaitGroup
}

// Wait waits for the goroutines Start started to end (after its ctx ended).
func (z *Authz) Wait() { z.wg.Wait() }

var (
	grRoles               = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
	grClusterRoles        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
	grRoleBindings        = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
	grClusterRoleBindings = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
	grPods                = schema.GroupResource{Resource: "pods"}
	grPVs                 = schema.GroupResource{Resource: "persistentvolumes"}
	grVAs                 = schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}
)

// New builds the authorizer; Start fills its caches.
func New(cfg Config) (*Authz, error) {
	if cfg.Registry == nil {
		return nil, errors.New("authz: a registry is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	z := &Authz{rbac: newRBAC(), node: newNode(), reg: cfg.Registry, inf: cfg.Informers, log: cfg.Logger}
	z.union = Union{privileged}
	z.modes = cfg.Modes
	for _, m := range cfg.Modes {
		switch m {
		case "Node":
			z.union = append(z.union, z.node)
		case "RBAC":
			z.union = append(z.union, z.rbac)
		case "AlwaysAllow":
			z.union = append(z.union, alwaysAllow)
		case "AlwaysDeny":
			z.union = append(z.union, alwaysDeny)
		default:
			return nil, fmt.Errorf("authz: unknown authorization mode %q", m)
		}
	}
	for gr, fn := range map[schema.GroupResource]registry.AdmitFunc{
		grRoles: z.admitRole, grClusterRoles: z.admitClusterRole, grRoleBindings: z.admitRoleBinding, grClusterRoleBindings: z.admitClusterRoleBinding,
	} {
		res := cfg.Registry.Resource(gr)
		if res == nil {
			return nil, fmt.Errorf("authz: the registry does not serve %s", gr)
		}
		res.Store.SetAdmit(fn)
	}
	return z, nil
}

// Authorize implements Authorizer.
func (z *Authz) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return z.union.Authorize(ctx, a)
}

// RBAC returns the RBAC authorizer (its rules serve SelfSubjectRulesReview and the
// escalation checks whatever the modes).
func (z *Authz) RBAC() *RBAC { return z.rbac }

// Start feeds the caches from the shared informers until ctx ends, reconciles the
// bootstrap policy, and keeps aggregated ClusterRoles up to date. It returns once the
// caches hold what etcd held when it started.
func (z *Authz) Start(ctx context.Context) error {
	if err := z.startCaches(ctx); err != nil {
		return err
	}
	if err := z.reconcileBootstrap(ctx); err != nil {
		return err
	}
	// Serve only once the caches hold the policy just written (their watches deliver it a
	// moment later): until then even /healthz would be refused to anonymous callers.
	if err := z.rbac.waitForPolicy(ctx, BootstrapPolicy()); err != nil {
		return err
	}
	z.wg.Add(1)
	go func() {
		defer z.wg.Done()
		z.aggregate(ctx)
	}()
	return nil
}

// userOf returns the caller in ctx, or nil for the apiserver's own calls.
func userOf(ctx context.Context) *request.User {
	u, _ := request.UserFrom(ctx)
	return u
}

func metaOf(obj runtime.Object) (metav1.Object, error) { return meta.Accessor(obj) }
