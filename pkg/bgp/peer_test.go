package bgp

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParsePeer(t *testing.T) {
	tests := []struct {
		in      string
		want    Peer
		wantErr error
	}{
		{in: "10.77.1.1:65000", want: Peer{Addr: netip.MustParseAddr("10.77.1.1"), AS: 65000}},
		{in: "10.77.1.1:4200000000:s3cret", want: Peer{Addr: netip.MustParseAddr("10.77.1.1"), AS: 4200000000, Password: "s3cret"}},
		{in: "10.77.1.1:65000:a:b", want: Peer{Addr: netip.MustParseAddr("10.77.1.1"), AS: 65000, Password: "a:b"}},
		{in: "10.77.1.1:1.10", want: Peer{Addr: netip.MustParseAddr("10.77.1.1"), AS: 65546}},
		{in: "[fd00::1]:65000", want: Peer{Addr: netip.MustParseAddr("fd00::1"), AS: 65000}},
		{in: "[fd00::1]:65000:pw", want: Peer{Addr: netip.MustParseAddr("fd00::1"), AS: 65000, Password: "pw"}},
		{in: "10.77.1.1", wantErr: ErrBadPeer},
		{in: "fd00::1:65000", wantErr: ErrBadPeer}, // IPv6 needs brackets
		{in: "[10.77.1.1]:65000", wantErr: ErrBadPeer},
		{in: "[fd00::1:65000", wantErr: ErrBadPeer},
		{in: "router:65000", wantErr: ErrBadPeer},
		{in: "10.77.1.1:0", wantErr: ErrBadAS},
		{in: "10.77.1.1:23456", wantErr: ErrBadAS},
		{in: "10.77.1.1:4294967296", wantErr: ErrBadAS},
		{in: "10.77.1.1:-1", wantErr: ErrBadAS},
		{in: "10.77.1.1:", wantErr: ErrBadAS},
		{in: "10.77.1.1:65536.1", wantErr: ErrBadAS},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParsePeer(tt.in)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ParsePeer(%q) = %+v, %v; want %v", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParsePeer(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestPeerStringHidesPassword(t *testing.T) {
	for in, want := range map[string]string{
		"10.77.1.1:65000:topsecret": "10.77.1.1:65000:***",
		"[fd00::1]:65001":           "[fd00::1]:65001",
	} {
		p, err := ParsePeer(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.String(); got != want {
			t.Errorf("%q.String() = %q, want %q", in, got, want)
		}
	}
}

func TestParseCommunity(t *testing.T) {
	tests := []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"65000:100", 65000<<16 | 100, true},
		{"0:0", 0, true},
		{"65535:65535", 0xFFFFFFFF, true},
		{"no-export", 0xFFFFFF01, true},
		{"NO-ADVERTISE", 0xFFFFFF02, true},
		{"graceful-shutdown", 0xFFFF0000, true},
		{"65536:1", 0, false},
		{"1:65536", 0, false},
		{"100", 0, false},
		{"a:b", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseCommunity(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseCommunity(%q) = %#x, %v; want %#x ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestHostRoute(t *testing.T) {
	for in, want := range map[string]string{
		"10.77.0.100":        "10.77.0.100/32",
		"::ffff:10.77.0.100": "10.77.0.100/32",
		"fd00::100":          "fd00::100/128",
	} {
		if got := HostRoute(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("HostRoute(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	peer := Peer{Addr: netip.MustParseAddr("10.77.1.1"), AS: 65000}
	ok := Config{AS: 65001, RouterID: netip.MustParseAddr("10.77.1.11"), Peers: []Peer{peer}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	bad := map[string]func(c *Config){
		"AS 0":               func(c *Config) { c.AS = 0 },
		"IPv6 router ID":     func(c *Config) { c.RouterID = netip.MustParseAddr("fd00::1") },
		"no peers":           func(c *Config) { c.Peers = nil },
		"duplicate peer":     func(c *Config) { c.Peers = []Peer{peer, peer} },
		"hold time 1s":       func(c *Config) { c.Peers = []Peer{{Addr: peer.Addr, AS: 1, HoldTime: 1e9}} },
		"keepalive too long": func(c *Config) { c.Peers = []Peer{{Addr: peer.Addr, AS: 1, HoldTime: 9e9, Keepalive: 9e9}} },
		"source of the other family": func(c *Config) {
			c.Peers = []Peer{{Addr: peer.Addr, AS: 1, Source: netip.MustParseAddr("fd00::2")}}
		},
	}
	for name, mod := range bad {
		c := ok
		mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate = nil, want an error", name)
		}
	}
}

func FuzzParsePeer(f *testing.F) {
	for _, s := range []string{"10.77.1.1:65000", "[fd00::1]:65000:pw", "10.77.1.1:1.10", "x", "[::]:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePeer(s)
		if err != nil {
			return
		}
		if !p.Addr.IsValid() || p.AS == 0 || p.AS == 23456 {
			t.Fatalf("ParsePeer(%q) accepted %+v", s, p)
		}
		// What String prints (password elided) parses back to the same address and AS.
		q, err := ParsePeer(p.String())
		if err != nil || q.Addr != p.Addr || q.AS != p.AS {
			t.Fatalf("ParsePeer(%q).String() = %q does not parse back: %+v, %v", s, p.String(), q, err)
		}
	})
}
