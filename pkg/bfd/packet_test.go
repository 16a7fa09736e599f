package bfd

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"
)

// Captured with tcpdump in the router namespace of cmd/vipd's TestBGPBFDWithFRR.
const (
	// frrInit is FRR 8.4 bfdd's answer to vipd's first packet: version 1, diagnostic 0,
	// state Init, detect multiplier 3, both discriminators, desired TX and required RX 1 s
	// (its rates while not Up), echo RX 50 ms.
	frrInit = "20800318" + "b869e5da" + "d4e44a83" + "000f4240" + "000f4240" + "0000c350"
	// vipdUp is vipd's answer to it: Up, Poll (the switch from 1 s to the configured
	// 100 ms), no echo.
	vipdUp = "20e00318" + "d4e44a83" + "b869e5da" + "000186a0" + "000186a0" + "00000000"
	// frrDown is a Down packet as FRR's first one to a new peer: no Your Discriminator.
	frrDown = "20400318" + "2f7f6a1e" + "00000000" + "000f4240" + "000186a0" + "0000c350"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUnmarshal(t *testing.T) {
	var p ControlPacket
	if err := p.UnmarshalBinary(mustHex(t, frrInit)); err != nil {
		t.Fatal(err)
	}
	if want := (ControlPacket{State: Init, DetectMult: 3, MyDiscriminator: 0xb869e5da, YourDiscriminator: 0xd4e44a83,
		DesiredMinTxInterval: time.Second, RequiredMinRxInterval: time.Second, RequiredMinEchoRxInterval: 50 * time.Millisecond}); p != want {
		t.Errorf("decoded %+v\nwant    %+v", p, want)
	}
	if err := p.UnmarshalBinary(mustHex(t, vipdUp)); err != nil {
		t.Fatal(err)
	}
	if want := (ControlPacket{State: Up, Poll: true, DetectMult: 3, MyDiscriminator: 0xd4e44a83, YourDiscriminator: 0xb869e5da,
		DesiredMinTxInterval: 100 * time.Millisecond, RequiredMinRxInterval: 100 * time.Millisecond}); p != want {
		t.Errorf("decoded %+v\nwant    %+v", p, want)
	}
	if b, err := p.MarshalBinary(); err != nil || hex.EncodeToString(b) != vipdUp {
		t.Errorf("re-encoded %x, %v; want %s", b, err, vipdUp)
	}
	if err := p.UnmarshalBinary(mustHex(t, frrDown)); err != nil {
		t.Fatal(err)
	}
	want := ControlPacket{State: Down, DetectMult: 3, MyDiscriminator: 0x2f7f6a1e,
		DesiredMinTxInterval: time.Second, RequiredMinRxInterval: 100 * time.Millisecond, RequiredMinEchoRxInterval: 50 * time.Millisecond}
	if p != want {
		t.Errorf("decoded %+v\nwant    %+v", p, want)
	}
	// Up with Poll, control plane independent, diagnostic 3, padding after Length.
	b := mustHex(t, "23e80518 00000007 00000009 000186a0 000186a0 00000000 0000")
	if err := p.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if p.State != Up || !p.Poll || p.Final || !p.ControlPlaneIndependent || p.Diag != DiagNeighborDown || p.DetectMult != 5 || p.YourDiscriminator != 9 {
		t.Errorf("decoded %+v", p)
	}
}

// TestUnmarshalErrors: every check of RFC 5880 6.8.6 that needs no session.
func TestUnmarshalErrors(t *testing.T) {
	good := frrDown
	cases := map[string]struct {
		hex  string
		want error
	}{
		"short":                  {good[:46], ErrShort},
		"empty":                  {"", ErrShort},
		"version 0":              {"00" + good[2:], ErrVersion},
		"version 2":              {"40" + good[2:], ErrVersion},
		"length below header":    {good[:6] + "17" + good[8:], ErrLength},
		"length beyond packet":   {good[:6] + "1c" + good[8:], ErrLength},
		"detect multiplier zero": {good[:4] + "00" + good[6:], ErrDetectMult},
		"multipoint":             {"2041" + good[4:], ErrMultipoint},
		"my discriminator zero":  {good[:8] + "00000000" + good[16:], ErrMyDiscr},
		"your zero while Up":     {"20c0" + good[4:], ErrYourDiscr},
		"your zero while Init":   {"2080" + good[4:], ErrYourDiscr},
		"authentication":         {"2044" + good[4:6] + "1a" + good[8:] + "0102", ErrAuth},
		"auth section too short": {"2044" + good[4:], ErrLength},
		"poll and final":         {"2070" + good[4:], ErrPollAndFinal},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var p ControlPacket
			if err := p.UnmarshalBinary(mustHex(t, c.hex)); !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	p := ControlPacket{State: Down, DetectMult: 3, MyDiscriminator: 0x2f7f6a1e,
		DesiredMinTxInterval: time.Second, RequiredMinRxInterval: 100 * time.Millisecond, RequiredMinEchoRxInterval: 50 * time.Millisecond}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(b); got != frrDown {
		t.Errorf("encoded %s\nwant    %s", got, frrDown)
	}
	for name, bad := range map[string]ControlPacket{
		"poll and final":    {Poll: true, Final: true},
		"negative interval": {DesiredMinTxInterval: -1},
		"interval too long": {RequiredMinRxInterval: 2 * time.Hour},
		"state":             {State: 4},
		"diagnostic":        {Diag: 32},
	} {
		if _, err := bad.MarshalBinary(); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

// FuzzUnmarshal: the decoder never panics, and whatever it accepts encodes back to the
// same 24 bytes (the flag bits it keeps, the fields as sent).
func FuzzUnmarshal(f *testing.F) {
	f.Add(mustHex(f, frrDown))
	f.Add(mustHex(f, frrInit))
	f.Add(mustHex(f, vipdUp))
	f.Add(mustHex(f, "23e80518 00000007 00000009 000186a0 000186a0 00000000 0000"))
	f.Add([]byte{0x20, 0x44, 3, 26})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p ControlPacket
		if err := p.UnmarshalBinary(b); err != nil {
			return
		}
		out, err := p.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %x but cannot encode %+v: %v", b, p, err)
		}
		in := append([]byte(nil), b[:HeaderLen]...)
		in[3] = HeaderLen // the Length of a packet with padding or an ignored tail
		if string(out) != string(in) {
			t.Fatalf("round trip changed the packet:\n in %x\nout %x", in, out)
		}
	})
}
