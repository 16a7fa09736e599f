package vip

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hacp/hacp/pkg/config"
)

func TestValidate(t *testing.T) {
	ok := func() *Config {
		c := DefaultConfig()
		c.VIPs = []string{"10.77.1.100/24"}
		return c
	}
	tests := []struct {
		name string
		mod  func(*Config)
		key  string // "" means valid
	}{
		{"defaults with a vip", func(*Config) {}, ""},
		{"no vip", func(c *Config) { c.VIPs = nil }, "vip"},
		{"vip without prefix length", func(c *Config) { c.VIPs = []string{"10.77.1.100"} }, "vip.0"},
		{"second vip bad", func(c *Config) { c.VIPs = []string{"10.77.1.100/24", "nope"} }, "vip.1"},
		{"ipv6 adverts", func(c *Config) { c.VIPs = []string{"2001:db8::1/64", "10.77.1.100/24"} }, ""},
		{"ipv6 with v2", func(c *Config) {
			c.VIPs, c.VRRPVersion, c.AdvertInterval = []string{"2001:db8::1/64"}, 2, time.Second
		}, "version-vrrp"},
		{"ipv6 with ipv4 peer", func(c *Config) { c.VIPs, c.UnicastPeers = []string{"2001:db8::1/64"}, []string{"10.77.1.12"} }, "unicast-peer.0"},
		{"zone in vip", func(c *Config) { c.VIPs = []string{"fe80::1%eth0/64"} }, "vip.0"},
		{"vrid 0", func(c *Config) { c.VRID = 0 }, "vrid"},
		{"vrid 256", func(c *Config) { c.VRID = 256 }, "vrid"},
		{"priority 0", func(c *Config) { c.Priority = -1 }, "priority"},
		{"priority 256", func(c *Config) { c.Priority = 256 }, "priority"},
		{"version 4", func(c *Config) { c.VRRPVersion = 4 }, "version-vrrp"},
		{"v3 with auth", func(c *Config) { c.AuthPass = "secret" }, "auth-pass"},
		{"v2 long password", func(c *Config) { c.VRRPVersion, c.AdvertInterval, c.AuthPass = 2, time.Second, "123456789" }, "auth-pass"},
		{"v2 sub-second interval", func(c *Config) { c.VRRPVersion, c.AdvertInterval = 2, 100*time.Millisecond }, "advert-interval"},
		{"v3 interval not centiseconds", func(c *Config) { c.AdvertInterval = 15 * time.Millisecond }, "advert-interval"},
		{"missing iface", func(c *Config) { c.Iface = "" }, "iface"},
		{"bad checksum mode", func(c *Config) { c.Checksum = "none" }, "checksum"},
		{"bad unicast peer", func(c *Config) { c.UnicastPeers = []string{"10.77.1.12", "x"} }, "unicast-peer.1"},
		{"bad check url", func(c *Config) { c.CheckURL = "ftp://x" }, "check-url"},
		{"bad check action", func(c *Config) { c.CheckAction = "panic" }, "check-action"},
		{"weight out of range", func(c *Config) { c.CheckWeight = -300 }, "check-weight"},
		{"lifetime below a second", func(c *Config) { c.VIPLifetime = 500 * time.Millisecond }, "vip-lifetime"},
		{"conflict probes off", func(c *Config) { c.ConflictProbe = 0 }, ""},
		{"negative conflict probe interval", func(c *Config) { c.ConflictProbe = -time.Second }, "conflict-probe-interval"},
		{"conflict probes every microsecond", func(c *Config) { c.ConflictProbe = time.Microsecond }, "conflict-probe-interval"},
		{"duplicate vrid", func(c *Config) { c.Instances = []Instance{{VRID: 7}, {VRID: 7, Name: "b"}} }, "instances.1.vrid"},
		{"instance with bad priority", func(c *Config) { c.Instances = []Instance{{VRID: 7}, {VRID: 8, Priority: 300}} }, "instances.1.priority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(c)
			err := c.Validate()
			if tt.key == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *config.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a FieldError for %s", err, tt.key)
			}
			found := false
			for _, e := range flatten(err) {
				if errors.As(e, &fe) && fe.Key == tt.key {
					found = true
				}
			}
			if !found {
				t.Fatalf("Validate = %v, want an error for key %s", err, tt.key)
			}
		})
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// TestExampleConfig loads configs/vipd.yaml, the commented three-master example.
func TestExampleConfig(t *testing.T) {
	c := DefaultConfig()
	if _, err := config.Load(filepath.Join("..", "..", "configs", "vipd.yaml"), c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	rs, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 2 {
		t.Fatalf("example resolves to %d instances, want the apiserver VIP and a second one", len(rs))
	}
	if rs[0].VIPs[0].String() != "10.0.0.100/24" || rs[0].Version != 3 {
		t.Fatalf("first instance: %+v", rs[0])
	}
}

// TestConfigFileErrors checks that bad instance values are reported with file, line and key.
func TestConfigFileErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vipd.yaml")
	body := "vip: [10.0.0.100/24]\ninstances:\n  - name: a\n    vrid: 10\n  - name: b\n    vrid: 300\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := config.Program[Config]{Name: "vipd", Default: DefaultConfig, Flags: func(fs *flag.FlagSet, c *Config) { c.AddFlags(fs) }}
	_, err := prog.Parse([]string{"--config", p})
	if err == nil || !strings.Contains(err.Error(), p+":6: instances.1.vrid: must be 1-255") {
		t.Fatalf("err = %v, want %s:6: instances.1.vrid", err, p)
	}
}

// TestEveryFlagExplained: --help must explain every flag, and every flag is a config key.
func TestEveryFlagExplained(t *testing.T) {
	fs := flag.NewFlagSet("vipd", flag.ContinueOnError)
	DefaultConfig().AddFlags(fs)
	keys := map[string]bool{}
	for _, k := range yamlKeysOf(reflect.TypeOf(Config{})) {
		keys[k] = true
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if len(f.Usage) < 25 {
			t.Errorf("flag --%s: usage %q does not explain it", f.Name, f.Usage)
		}
		if !keys[f.Name] {
			t.Errorf("flag --%s has no config file key of the same name", f.Name)
		}
	})
	if n < 30 {
		t.Fatalf("only %d flags", n)
	}
}

func yamlKeysOf(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			out = append(out, yamlKeysOf(f.Type)...)
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestValidateBGP(t *testing.T) {
	ok := func() *Config {
		c := DefaultConfig()
		c.Mode = "bgp"
		c.VIPs = []string{"10.77.0.100/32"}
		c.BGPAS = "65101"
		c.BGPPeers = []string{"10.77.1.1:65000"}
		return c
	}
	tests := []struct {
		name string
		mod  func(*Config)
		key  string // "" means valid
	}{
		{"minimal", func(*Config) {}, ""},
		{"vip without length, ipv6, communities", func(c *Config) {
			c.VIPs = []string{"10.77.0.100", "fd00::100/64"}
			c.BGPCommunities = []string{"65000:1", "no-export"}
			c.BGPPeers = []string{"10.77.1.1:65000:pw", "[fd00::1]:65000"}
		}, ""},
		{"VRRP settings ignored", func(c *Config) { c.Iface, c.VRID = "", 0 }, ""},
		{"bad mode", func(c *Config) { c.Mode = "ospf" }, "mode"},
		{"no AS", func(c *Config) { c.BGPAS = "" }, "bgp-as"},
		{"AS 0", func(c *Config) { c.BGPAS = "0" }, "bgp-as"},
		{"AS too big", func(c *Config) { c.BGPAS = "4294967296" }, "bgp-as"},
		{"AS_TRANS", func(c *Config) { c.BGPAS = "23456" }, "bgp-as"},
		{"no peer", func(c *Config) { c.BGPPeers = nil }, "bgp-peer"},
		{"peer without AS", func(c *Config) { c.BGPPeers = []string{"10.77.1.1:65000", "10.77.2.1"} }, "bgp-peer.1"},
		{"peer with bad AS", func(c *Config) { c.BGPPeers = []string{"10.77.1.1:0"} }, "bgp-peer.0"},
		{"peer twice", func(c *Config) { c.BGPPeers = []string{"10.77.1.1:65000", "10.77.1.1:65001"} }, "bgp-peer.1"},
		{"router id ipv6", func(c *Config) { c.BGPRouterID = "fd00::1" }, "bgp-router-id"},
		{"hold time 2s", func(c *Config) { c.BGPHoldTime = 2 * time.Second }, "bgp-hold-time"},
		{"hold time fraction", func(c *Config) { c.BGPHoldTime = 4500 * time.Millisecond }, "bgp-hold-time"},
		{"keepalive not below hold", func(c *Config) { c.BGPKeepalive = 9 * time.Second }, "bgp-keepalive"},
		{"multihop 300", func(c *Config) { c.BGPMultihop = 300 }, "bgp-multihop"},
		{"bad source", func(c *Config) { c.BGPSource = "eth0" }, "bgp-source"},
		{"bad next hop", func(c *Config) { c.BGPNextHop = "x" }, "bgp-next-hop"},
		{"bad community", func(c *Config) { c.BGPCommunities = []string{"65000:1", "1:2:3"} }, "bgp-community.1"},
		{"bad listen port", func(c *Config) { c.BGPListenPort = 70000 }, "bgp-listen-port"},
		{"negative stop grace", func(c *Config) { c.BGPStopGrace = -time.Second }, "bgp-stop-grace"},
		{"announce nonsense", func(c *Config) { c.BGPAnnounce = "some" }, "bgp-announce"},
		{"announce all is anycast", func(c *Config) { c.BGPAnnounce = "all" }, ""},
		{"bfd", func(c *Config) { c.BFD, c.BFDInterval = true, 100*time.Millisecond }, ""},
		{"bfd interval 5ms", func(c *Config) { c.BFD, c.BFDInterval = true, 5*time.Millisecond }, "bfd-interval"},
		{"bfd multiplier 1", func(c *Config) { c.BFD, c.BFDMultiplier = true, 1 }, "bfd-multiplier"},
		{"bfd multiplier 256", func(c *Config) { c.BFD, c.BFDMultiplier = true, 256 }, "bfd-multiplier"},
		{"bfd with multihop", func(c *Config) { c.BFD, c.BGPMultihop = true, 2 }, "bfd"},
		{"bfd timers ignored without bfd", func(c *Config) { c.BFDInterval = time.Hour }, ""},
		{"leader", func(c *Config) { c.BGPAnnounce, c.Kubeconfig = "leader", "/etc/kubernetes/admin.conf" }, ""},
		{"leader with server and timers", func(c *Config) {
			c.BGPAnnounce, c.Kubeconfig, c.LeaseServer = "leader", "/etc/kubernetes/admin.conf", "https://127.0.0.1:6443"
			c.LeaseDuration, c.LeaseRenewDeadline, c.LeaseRetryPeriod = 5*time.Second, 3*time.Second, 500*time.Millisecond
		}, ""},
		{"leader without kubeconfig", func(c *Config) { c.BGPAnnounce = "leader" }, "kubeconfig"},
		{"leader bad server", func(c *Config) {
			c.BGPAnnounce, c.Kubeconfig, c.LeaseServer = "leader", "k", "127.0.0.1:6443"
		}, "lease-server"},
		{"leader bad lease name", func(c *Config) { c.BGPAnnounce, c.Kubeconfig, c.LeaseName = "leader", "k", "Vipd_BGP" }, "lease-name"},
		{"leader bad namespace", func(c *Config) { c.BGPAnnounce, c.Kubeconfig, c.LeaseNamespace = "leader", "k", "" }, "lease-namespace"},
		{"leader renew deadline not below duration", func(c *Config) {
			c.BGPAnnounce, c.Kubeconfig, c.LeaseRenewDeadline = "leader", "k", 15*time.Second
		}, "lease-renew-deadline"},
		{"leader duration fraction", func(c *Config) {
			c.BGPAnnounce, c.Kubeconfig, c.LeaseDuration = "leader", "k", 15500*time.Millisecond
		}, "lease-duration"},
		{"leader retry period too long", func(c *Config) {
			c.BGPAnnounce, c.Kubeconfig, c.LeaseRetryPeriod = "leader", "k", 9*time.Second
		}, "lease-renew-deadline"},
		{"leader retry period 0", func(c *Config) { c.BGPAnnounce, c.Kubeconfig, c.LeaseRetryPeriod = "leader", "k", 0 }, "lease-retry-period"},
		{"no vip", func(c *Config) { c.VIPs = nil }, "vip"},
		{"bad vip", func(c *Config) { c.VIPs = []string{"10.77.0.100", "vip"} }, "vip.1"},
		{"instances", func(c *Config) { c.Instances = []Instance{{VRID: 7}} }, "instances"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mod(c)
			err := c.Validate()
			if tt.key == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			found := false
			for _, e := range flatten(err) {
				var fe *config.FieldError
				if errors.As(e, &fe) && fe.Key == tt.key {
					found = true
				}
			}
			if !found {
				t.Fatalf("Validate = %v, want an error for key %s", err, tt.key)
			}
		})
	}
}

// TestResolveBGP checks what the BGP mode makes of its settings: host routes whatever the
// given length, peer options copied to every peer.
func TestResolveBGP(t *testing.T) {
	c := DefaultConfig()
	c.Mode, c.BGPAS = "bgp", "65101"
	c.VIPs = []string{"10.77.0.100/24", "fd00::100"}
	c.BGPPeers = []string{"10.77.1.1:65000:pw", "[fd00::1]:65000"}
	c.BGPMultihop, c.BGPSource = 3, "10.77.1.11"
	r, err := c.ResolveBGP()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.VIPs); got != "[10.77.0.100/32 fd00::100/128]" {
		t.Errorf("VIPs = %s", got)
	}
	p0, p1 := r.Speaker.Peers[0], r.Speaker.Peers[1]
	if p0.Password != "pw" || p0.Multihop != 3 || p0.Source.String() != "10.77.1.11" || p0.HoldTime != 9*time.Second || p0.Keepalive != 3*time.Second {
		t.Errorf("peer 0 = %+v", p0)
	}
	if p1.Source.IsValid() {
		t.Errorf("IPv6 peer got the IPv4 source %s", p1.Source)
	}
	if r.Speaker.AS != 65101 || r.Iface != "lo" {
		t.Errorf("AS %d iface %s", r.Speaker.AS, r.Iface)
	}
}

// TestBGPConfigFileErrors: a bad AS in the file is reported with file, line and key, and a
// bad peer given as a flag names the flag.
func TestBGPConfigFileErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "vipd.yaml")
	body := "mode: bgp\nvip: [10.77.0.100/32]\nbgp-peer: [10.77.1.1:65000]\nbgp-as: 4294967296\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := config.Program[Config]{Name: "vipd", Default: DefaultConfig, Flags: func(fs *flag.FlagSet, c *Config) { c.AddFlags(fs) }}
	_, err := prog.Parse([]string{"--config", p})
	if err == nil || !strings.Contains(err.Error(), p+":4: bgp-as: \"4294967296\": must be 1 to 4294967295") {
		t.Fatalf("err = %v, want %s:4: bgp-as", err, p)
	}
	_, err = prog.Parse([]string{"--config", p, "--bgp-as", "65001", "--bgp-peer", "10.77.1.1"})
	if err == nil || !strings.Contains(err.Error(), "flag --bgp-peer: ") {
		t.Fatalf("err = %v, want flag --bgp-peer", err)
	}
	if got := config.Exit("vipd", err); got != 2 {
		t.Fatalf("exit code %d, want 2", got)
	}
	// Leader mode's settings, from the file.
	body = "mode: bgp\nvip: [10.77.0.100/32]\nbgp-peer: [10.77.1.1:65000]\nbgp-as: 65001\nbgp-announce: leader\nkubeconfig: /k\nlease-renew-deadline: 20s\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = prog.Parse([]string{"--config", p})
	if err == nil || !strings.Contains(err.Error(), p+":7: lease-renew-deadline: ") {
		t.Fatalf("err = %v, want %s:7: lease-renew-deadline", err, p)
	}
	body = "mode: bgp\nvip: [10.77.0.100/32]\nbgp-peer: [10.77.1.1:65000]\nbgp-as: 65001\nbgp-announce: leadr\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = prog.Parse([]string{"--config", p})
	if err == nil || !strings.Contains(err.Error(), p+":5: bgp-announce: must be anycast or leader") {
		t.Fatalf("err = %v, want %s:5: bgp-announce", err, p)
	}
	if got := config.Exit("vipd", err); got != 2 {
		t.Fatalf("exit code %d, want 2", got)
	}
}

// TestExampleBGPConfig loads configs/vipd-bgp.yaml.
func TestExampleBGPConfig(t *testing.T) {
	c := DefaultConfig()
	if _, err := config.Load(filepath.Join("..", "..", "configs", "vipd-bgp.yaml"), c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := c.ResolveBGP()
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != "bgp" || r.VIPs[0].String() != "10.0.0.100/32" || len(r.Speaker.Peers) != 1 {
		t.Fatalf("example: mode %s, %+v", c.Mode, r)
	}
}
