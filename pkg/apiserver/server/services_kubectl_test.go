package server_test

import (
	"strings"
	"testing"

	"github.com/hacp/hacp/pkg/apiserver/server"
	"github.com/hacp/hacp/pkg/apiserver/server/servertest"
)

// Services through kubectl: the kubernetes Service lists this apiserver (at its advertise
// address: an Endpoints address may not be loopback), NodePorts and ClusterIPs come from the
// configured ranges, and a taken NodePort is refused as upstream.
func TestKubectlServices(t *testing.T) {
	s := servertest.New(t, func(c *server.Config) {
		c.ServiceClusterIPRange = "10.77.128.0/24"
		c.ServiceNodePortRange = "31000-31001"
		c.AdvertiseAddress = "10.77.129.1" // written into the Endpoints only: nothing dials it
	})
	k := newKubectlEnv(t, s.KubeconfigPath())

	out := k.ok("get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP} {.spec.ports[0].port}")
	if out != "10.77.128.1 443" {
		t.Fatalf("kubernetes service: %q, want the range's first address and port 443", out)
	}
	_, port, _ := strings.Cut(s.Addr(), ":")
	eventually(t, "the kubernetes endpoints list this apiserver", func() bool {
		out, _, err := k.run("get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}")
		return err == nil && out == "10.77.129.1:"+port
	})

	contains(t, k.ok("create", "service", "nodeport", "web", "--tcp=80:8080"), "service/web created")
	ip := k.ok("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	if !strings.HasPrefix(ip, "10.77.128.") || ip == "10.77.128.1" {
		t.Fatalf("web got ClusterIP %q, want a free address of 10.77.128.0/24", ip)
	}
	np := k.ok("get", "service", "web", "-o", "jsonpath={.spec.ports[0].nodePort}")
	if np != "31000" && np != "31001" {
		t.Fatalf("web got nodePort %q, want 31000 or 31001", np)
	}
	k.fails(`provided port is already allocated`, "create", "service", "nodeport", "clash", "--tcp=80:8080", "--node-port="+np)
	k.ok("create", "service", "nodeport", "second", "--tcp=80:8080")
	k.fails(`range is full`, "create", "service", "nodeport", "third", "--tcp=80:8080")
	k.ok("delete", "service", "web")
	k.ok("create", "service", "nodeport", "third", "--tcp=80:8080", "--node-port="+np)
}
