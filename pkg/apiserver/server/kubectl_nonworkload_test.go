package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

const nonWorkloadYAML = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec:
  ingressClassName: nginx
  rules:
  - host: shop.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/disk
parameters: {type: ssd}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
`

const csrYAML = `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: NAME}
spec:
  request: REQUEST
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
  expirationSeconds: 86400
`

// TestKubectlNonWorkloadKinds: real kubectl against the non-workload kinds: discovery and
// short names, apply, upstream's columns, certificate approve, the standard namespaces and
// the 1 MiB ConfigMap limit.
func TestKubectlNonWorkloadKinds(t *testing.T) {
	s := servertest.New(t, nil)
	k := newKubectlEnv(t, s.KubeconfigPath())

	t.Run("discovery and short names", func(t *testing.T) {
		out := k.ok("api-resources")
		contains(t, out, "ingresses", "networking.k8s.io/v1", "certificatesigningrequests", "csr", "priorityclasses", "flowschemas",
			"validatingadmissionpolicybindings", "endpointslices", "runtimeclasses", "csistoragecapacities", "componentstatuses", "bindings",
			"events.k8s.io/v1", "servicecidrs", "ipaddresses")
		for _, short := range []string{"pv", "pvc", "limits", "quota", "cs", "ing", "ingressclasses", "netpol", "ipaddresses", "servicecidrs",
			"endpointslices", "runtimeclasses", "pc", "sc", "csidrivers", "csinodes", "csistoragecapacities", "volumeattachments", "csr",
			"flowschemas", "prioritylevelconfigurations", "mutatingwebhookconfigurations", "validatingwebhookconfigurations",
			"validatingadmissionpolicies", "validatingadmissionpolicybindings", "events.events.k8s.io"} {
			k.ok("get", short, "-A")
		}
		contains(t, k.ok("get", "pc"), "NAME", "VALUE", "GLOBAL-DEFAULT", "system-cluster-critical", "2000000000", "system-node-critical", "2000001000")
		contains(t, k.ok("get", "cs"), "NAME", "STATUS", "MESSAGE", "ERROR", "etcd-0", "Healthy")
	})

	k.ok("create", "namespace", "shop")
	t.Run("apply", func(t *testing.T) {
		f := k.file("kinds.yaml", nonWorkloadYAML)
		contains(t, k.ok("apply", "-f", f), "ingress.networking.k8s.io/web created", "persistentvolumeclaim/data created",
			"storageclass.storage.k8s.io/fast created", "priorityclass.scheduling.k8s.io/high created", "networkpolicy.networking.k8s.io/deny created")
		contains(t, k.ok("apply", "-f", f), "ingress.networking.k8s.io/web unchanged", "storageclass.storage.k8s.io/fast unchanged")
		contains(t, k.ok("-n", "shop", "get", "ing"), "NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "web", "nginx", "shop.example.com", "80")
		contains(t, k.ok("-n", "shop", "get", "pvc"), "NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "data", "Pending")
		contains(t, k.ok("get", "sc"), "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "fast", "example.com/disk", "Delete", "Immediate")
		contains(t, k.ok("get", "pc", "high"), "high", "1000", "false")
		contains(t, k.ok("-n", "shop", "get", "netpol"), "POD-SELECTOR", "deny", "app=web")
		contains(t, k.ok("-n", "shop", "get", "pvc", "data", "-o", "jsonpath={.spec.volumeMode}"), "Filesystem")
		contains(t, k.ok("-n", "shop", "get", "netpol", "deny", "-o", "jsonpath={.spec.policyTypes}"), "Ingress")
		// A PVC's spec is immutable once created (but for a bound claim's storage).
		k.fails("spec is immutable after creation", "-n", "shop", "patch", "pvc", "data", "--type", "merge", "-p", `{"spec":{"accessModes":["ReadWriteMany"]}}`)
		k.fails("updates to provisioner are forbidden", "patch", "sc", "fast", "--type", "merge", "-p", `{"provisioner":"example.com/other"}`)
		noPathType := k.file("bad-ingress.yaml", `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: bad, namespace: shop}
spec:
  rules:
  - http:
      paths:
      - {path: /, backend: {service: {name: web, port: {number: 80}}}}
`)
		k.fails(`spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`, "apply", "--validate=false", "-f", noPathType)
	})

	t.Run("certificate approve", func(t *testing.T) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
		if err != nil {
			t.Fatal(err)
		}
		req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
		f := k.file("csr.yaml", strings.Replace(strings.Replace(csrYAML, "NAME", "jane", 1), "REQUEST", req, 1))
		k.ok("create", "-f", f)
		contains(t, k.ok("get", "csr", "jane"), "NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION", "kubernetes.io/kube-apiserver-client", "24h", "Pending")
		contains(t, k.ok("certificate", "approve", "jane"), "certificatesigningrequest.certificates.k8s.io/jane approved")
		contains(t, k.ok("get", "csr", "jane"), "Approved")
		contains(t, k.ok("get", "csr", "jane", "-o", "jsonpath={.status.conditions[0].type} {.status.conditions[0].reason}"), "Approved KubectlApprove")
		k.ok("create", "-f", k.file("csr2.yaml", strings.Replace(strings.Replace(csrYAML, "NAME", "bob", 1), "REQUEST", req, 1)))
		contains(t, k.ok("certificate", "deny", "bob"), "certificatesigningrequest.certificates.k8s.io/bob denied")
		contains(t, k.ok("get", "csr", "bob"), "Denied")
	})

	t.Run("standard namespaces", func(t *testing.T) {
		for _, ns := range []string{"kube-system", "default", "kube-public"} {
			k.fails(`namespaces "`+ns+`" is forbidden: this namespace may not be deleted`, "delete", "ns", ns)
		}
		contains(t, k.ok("get", "ns", "kube-system"), "Active")
	})

	t.Run("2 MiB configmap", func(t *testing.T) {
		big := k.file("big.txt", strings.Repeat("x", 2<<20))
		k.fails("Too long: must have at most 1048576 bytes", "-n", "shop", "create", "configmap", "big", "--from-file="+big)
	})

	t.Run("drain evicts", func(t *testing.T) {
		k.ok("apply", "-f", k.file("node.yaml", `apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: bound, namespace: shop}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx:1.27}]
`))
		// No node agent runs here to confirm a graceful deletion: --grace-period=0 asks for
		// an immediate one (the eviction passes it on).
		contains(t, k.ok("drain", "n1", "--force", "--ignore-daemonsets", "--grace-period=0", "--timeout=60s"), "evicting pod shop/bound", "node/n1 drained")
		k.fails(`pods "bound" not found`, "-n", "shop", "get", "pod", "bound")
		contains(t, k.ok("get", "node", "n1", "-o", "jsonpath={.spec.unschedulable}"), "true")
	})

	t.Run("proxy subresources", func(t *testing.T) {
		k.ok("-n", "shop", "run", "p", "--image=nginx:1.27")
		// A pod on no node has no kubelet to ask: its log is empty (as upstream's
		// LocationStreamer without a location), and exec is refused.
		if out := k.ok("-n", "shop", "logs", "p"); out != "" {
			t.Fatalf("log of an unscheduled pod: %q, want empty", out)
		}
		k.fails("does not have a host assigned", "-n", "shop", "exec", "p", "--", "true")
	})
}
