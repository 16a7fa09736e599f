// Package audit is the apiserver's audit log, as kube-apiserver's: a policy
// (audit.k8s.io/v1 Policy) picks a level per request, a filter records one Event per
// request stage, and a backend writes them as JSON lines to a file it rotates.
package audit

import (
	"encoding/json"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The wire types below are audit.k8s.io/v1's (k8s.io/apiserver/pkg/apis/audit/v1), with
// the same JSON; they are written out here so that the binary does not depend on
// k8s.io/apiserver. The policy types also carry yaml tags for the policy file.

// GroupName and Version of the audit API.
const (
	GroupName  = "audit.k8s.io"
	APIVersion = GroupName + "/v1"
)

// HeaderAuditID is the response header that carries the request's audit ID.
const HeaderAuditID = "Audit-ID"

// Level is how much of a request is recorded.
type Level string

// The levels, from least to most.
const (
	LevelNone            Level = "None"
	LevelMetadata        Level = "Metadata"
	LevelRequest         Level = "Request"
	LevelRequestResponse Level = "RequestResponse"
)

var levelOrder = map[Level]int{LevelNone: 0, LevelMetadata: 1, LevelRequest: 2, LevelRequestResponse: 3}

// Less reports whether l records less than o.
func (l Level) Less(o Level) bool { return levelOrder[l] < levelOrder[o] }

// Stage is a point in a request's life an event is written at.
type Stage string

// The stages.
const (
	StageRequestReceived  Stage = "RequestReceived"
	StageResponseStarted  Stage = "ResponseStarted"
	StageResponseComplete Stage = "ResponseComplete"
	StagePanic            Stage = "Panic"
)

// Event is one audit record: a request at one stage.
type Event struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`

	Level      Level     `json:"level"`
	AuditID    types.UID `json:"auditID"`
	Stage      Stage     `json:"stage"`
	RequestURI string    `json:"requestURI"`
	// Verb is the Kubernetes verb for resource requests, the lower-case HTTP method
	// otherwise.
	Verb             string            `json:"verb"`
	User             authnv1.UserInfo  `json:"user"`
	ImpersonatedUser *authnv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs        []string          `json:"sourceIPs,omitempty"`
	UserAgent        string            `json:"userAgent,omitempty"`
	ObjectRef        *ObjectReference  `json:"objectRef,omitempty"`
	// ResponseStatus is the response's code, and for failures the whole Status.
	ResponseStatus *metav1.Status `json:"responseStatus,omitempty"`
	// RequestObject is the request body as JSON (Request level and above).
	RequestObject json.RawMessage `json:"requestObject,omitempty"`
	// ResponseObject is the response body as JSON (RequestResponse level).
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// ObjectReference names the object a request is about.
type ObjectReference struct {
	Resource        string    `json:"resource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIGroup        string    `json:"apiGroup,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
}

// Policy decides the level of each request: the first rule that matches wins; a request
// no rule matches is not recorded.
type Policy struct {
	APIVersion        string         `json:"apiVersion" yaml:"apiVersion"`
	Kind              string         `json:"kind" yaml:"kind"`
	Metadata          map[string]any `json:"metadata,omitempty" yaml:"metadata"`
	Rules             []PolicyRule   `json:"rules" yaml:"rules"`
	OmitStages        []Stage        `json:"omitStages,omitempty" yaml:"omitStages"`
	OmitManagedFields bool           `json:"omitManagedFields,omitempty" yaml:"omitManagedFields"`
}

// PolicyRule matches requests by user, group, verb, resource, namespace or non-resource
// URL; empty lists match everything.
type PolicyRule struct {
	Level           Level            `json:"level" yaml:"level"`
	Users           []string         `json:"users,omitempty" yaml:"users"`
	UserGroups      []string         `json:"userGroups,omitempty" yaml:"userGroups"`
	Verbs           []string         `json:"verbs,omitempty" yaml:"verbs"`
	Resources       []GroupResources `json:"resources,omitempty" yaml:"resources"`
	Namespaces      []string         `json:"namespaces,omitempty" yaml:"namespaces"`
	NonResourceURLs []string         `json:"nonResourceURLs,omitempty" yaml:"nonResourceURLs"`
	OmitStages      []Stage          `json:"omitStages,omitempty" yaml:"omitStages"`
	// OmitManagedFields overrides the policy's when set.
	OmitManagedFields *bool `json:"omitManagedFields,omitempty" yaml:"omitManagedFields"`
}

// GroupResources names resources of one API group ("" is the core group); resources may be
// "*", "pods/log", "*/status" or "pods/*".
type GroupResources struct {
	Group         string   `json:"group,omitempty" yaml:"group"`
	Resources     []string `json:"resources,omitempty" yaml:"resources"`
	ResourceNames []string `json:"resourceNames,omitempty" yaml:"resourceNames"`
}
