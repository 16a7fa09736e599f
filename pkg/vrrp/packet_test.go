package vrrp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

type captured struct {
	name     string
	src, dst netip.Addr
	ip       []byte // the whole IPv4 packet
}

// loadCaptures reads testdata/keepalived-2.2.7.txt: adverts keepalived sent, as tcpdump saw them.
func loadCaptures(t testing.TB) []captured {
	t.Helper()
	f, err := os.Open("testdata/keepalived-2.2.7.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []captured
	var cur *captured
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			cur = nil
		case cur == nil:
			fs := strings.Fields(line)
			out = append(out, captured{name: fs[0], src: netip.MustParseAddr(fs[1]), dst: netip.MustParseAddr(fs[2])})
			cur = &out[len(out)-1]
		default:
			b, err := hex.DecodeString(strings.ReplaceAll(line, " ", ""))
			if err != nil {
				t.Fatalf("%s: %v", cur.name, err)
			}
			cur.ip = append(cur.ip, b...)
		}
	}
	if len(out) == 0 {
		t.Fatal("no captures")
	}
	return out
}

func TestDecodeKeepalivedCaptures(t *testing.T) {
	want := map[string]Packet{
		"v3-multicast-prio101-2addrs": {Version: 3, Type: 1, VRID: 51, Priority: 101, MaxAdvertInt: 10,
			Addrs: []netip.Addr{netip.MustParseAddr("10.77.1.100"), netip.MustParseAddr("10.77.1.101")}},
		"v3-multicast-prio0-shutdown": {Version: 3, Type: 1, VRID: 51, Priority: 0, MaxAdvertInt: 10,
			Addrs: []netip.Addr{netip.MustParseAddr("10.77.1.100"), netip.MustParseAddr("10.77.1.101")}},
		"v3-unicast-prio200": {Version: 3, Type: 1, VRID: 53, Priority: 200, MaxAdvertInt: 100,
			Addrs: []netip.Addr{netip.MustParseAddr("10.77.1.120")}},
		"v2-pass-prio150": {Version: 2, Type: 1, VRID: 52, Priority: 150, MaxAdvertInt: 1, AuthType: AuthSimple,
			Addrs: []netip.Addr{netip.MustParseAddr("10.77.1.110")}, AuthData: [8]byte{'s', 'e', 'c', 'r', 'e', 't', '1'}},
		"v2-pass-prio0-shutdown": {Version: 2, Type: 1, VRID: 52, Priority: 0, MaxAdvertInt: 1, AuthType: AuthSimple,
			Addrs: []netip.Addr{netip.MustParseAddr("10.77.1.110")}, AuthData: [8]byte{'s', 'e', 'c', 'r', 'e', 't', '1'}},
	}
	for _, c := range loadCaptures(t) {
		t.Run(c.name, func(t *testing.T) {
			w, ok := want[c.name]
			if !ok {
				t.Fatalf("no expectation for capture %s", c.name)
			}
			if c.ip[8] != TTL || c.ip[9] != ProtocolNumber {
				t.Fatalf("capture: ttl %d proto %d", c.ip[8], c.ip[9])
			}
			msg := c.ip[20:]
			p, err := Decode(msg, c.src, c.dst, ChecksumPseudoHeader)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			w.Checksum = p.Checksum
			if !equalPacket(*p, w) {
				t.Fatalf("got %+v\nwant %+v", *p, w)
			}
			// We encode byte for byte what keepalived sent, checksum included.
			got, err := Encode(&w, c.src, c.dst, ChecksumPseudoHeader)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("Encode:\n got %x\nwant %x", got, msg)
			}
			// The same bytes addressed elsewhere fail the v3 pseudo-header checksum.
			if p.Version == 3 {
				if _, err := Decode(msg, netip.MustParseAddr("10.77.1.9"), c.dst, ChecksumPseudoHeader); !errors.Is(err, ErrBadChecksum) {
					t.Fatalf("wrong source: err = %v, want ErrBadChecksum", err)
				}
				if _, err := Decode(msg, c.src, c.dst, ChecksumMessageOnly); !errors.Is(err, ErrBadChecksum) {
					t.Fatalf("message-only mode on keepalived bytes: err = %v, want ErrBadChecksum", err)
				}
			}
		})
	}
}

func equalPacket(a, b Packet) bool {
	if len(a.Addrs) != len(b.Addrs) {
		return false
	}
	for i := range a.Addrs {
		if a.Addrs[i] != b.Addrs[i] {
			return false
		}
	}
	a.Addrs, b.Addrs = nil, nil
	return a.Version == b.Version && a.Type == b.Type && a.VRID == b.VRID && a.Priority == b.Priority &&
		a.AuthType == b.AuthType && a.MaxAdvertInt == b.MaxAdvertInt && a.Checksum == b.Checksum && a.AuthData == b.AuthData
}

func TestRoundTrip(t *testing.T) {
	v4a, v4b := netip.MustParseAddr("10.77.1.11"), netip.MustParseAddr("10.77.1.12")
	v6a, v6b := netip.MustParseAddr("fe80::1"), netip.MustParseAddr("fe80::2")
	tests := []struct {
		name     string
		p        Packet
		src, dst netip.Addr
		mode     ChecksumMode
	}{
		{"v3 ipv4 multicast", Packet{Version: 3, Type: 1, VRID: 1, Priority: 100, MaxAdvertInt: 100, Addrs: []netip.Addr{v4a}}, v4a, MulticastGroupV4, ChecksumPseudoHeader},
		{"v3 ipv4 message-only", Packet{Version: 3, Type: 1, VRID: 7, Priority: 255, MaxAdvertInt: 4095, Addrs: []netip.Addr{v4a, v4b}}, v4a, MulticastGroupV4, ChecksumMessageOnly},
		{"v3 ipv4 no addresses", Packet{Version: 3, Type: 1, VRID: 9, Priority: 1, MaxAdvertInt: 1}, v4a, v4b, ChecksumPseudoHeader},
		{"v3 ipv6", Packet{Version: 3, Type: 1, VRID: 200, Priority: 50, MaxAdvertInt: 25, Addrs: []netip.Addr{netip.MustParseAddr("2001:db8::1"), v6b}}, v6a, MulticastGroupV6, ChecksumPseudoHeader},
		{"v2 no auth", Packet{Version: 2, Type: 1, VRID: 255, Priority: 0, MaxAdvertInt: 3, Addrs: []netip.Addr{v4b}}, v4a, MulticastGroupV4, ChecksumPseudoHeader},
		{"v2 pass", Packet{Version: 2, Type: 1, VRID: 3, Priority: 150, MaxAdvertInt: 1, AuthType: AuthSimple, AuthData: [8]byte{'x'}, Addrs: []netip.Addr{v4a, v4b}}, v4a, MulticastGroupV4, ChecksumPseudoHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(&tt.p, tt.src, tt.dst, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(b, tt.src, tt.dst, tt.mode)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equalPacket(*got, tt.p) {
				t.Fatalf("got %+v, want %+v", *got, tt.p)
			}
			// Any flipped bit is caught by the checksum or by the structure checks.
			for i := range b {
				bad := bytes.Clone(b)
				bad[i] ^= 0x01
				if _, err := Decode(bad, tt.src, tt.dst, tt.mode); err == nil {
					t.Fatalf("byte %d flipped: decoded without error", i)
				}
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	src, dst := netip.MustParseAddr("10.77.1.11"), MulticastGroupV4
	good, _ := Encode(&Packet{Version: 3, Type: 1, VRID: 1, Priority: 100, MaxAdvertInt: 100, Addrs: []netip.Addr{src}}, src, dst, ChecksumPseudoHeader)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"header only cut", good[:7], ErrShort},
		{"version 1", append([]byte{0x11}, good[1:]...), ErrVersion},
		{"version 4", append([]byte{0x41}, good[1:]...), ErrVersion},
		{"type 2", append([]byte{0x32}, good[1:]...), ErrType},
		{"count too large", append(append([]byte{}, good[:3]...), append([]byte{5}, good[4:]...)...), ErrLength},
		{"truncated address", good[:10], ErrLength},
		{"v2 without auth data", []byte{0x21, 1, 100, 1, 0, 1, 0, 0, 10, 77, 1, 1}, ErrLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.b, src, dst, ChecksumPseudoHeader)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestIntervalUnits(t *testing.T) {
	tests := []struct {
		version uint8
		d       time.Duration
		want    uint16
		ok      bool
	}{
		{3, 100 * time.Millisecond, 10, true},
		{3, time.Second, 100, true},
		{3, 40950 * time.Millisecond, 4095, true},
		{3, 41 * time.Second, 0, false},
		{3, 5 * time.Millisecond, 0, false},
		{3, 15 * time.Millisecond, 0, false},
		{2, time.Second, 1, true},
		{2, 255 * time.Second, 255, true},
		{2, 100 * time.Millisecond, 0, false},
		{2, 1500 * time.Millisecond, 0, false},
	}
	for _, tt := range tests {
		got, err := IntervalUnits(tt.version, tt.d)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("IntervalUnits(v%d, %s) = %d, %v; want %d ok=%v", tt.version, tt.d, got, err, tt.want, tt.ok)
		}
	}
}
