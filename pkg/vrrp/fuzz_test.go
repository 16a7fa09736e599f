package vrrp

import (
	"bytes"
	"net/netip"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the decoder: it must never panic, and whatever it
// accepts must encode back to the same message.
func FuzzDecode(f *testing.F) {
	for _, c := range loadCaptures(f) {
		f.Add(c.ip[20:], c.src.AsSlice(), c.dst.AsSlice())
	}
	f.Add([]byte{0x31, 1, 1, 0, 0, 1, 0, 0}, []byte{10, 0, 0, 1}, []byte{224, 0, 0, 18})
	f.Fuzz(func(t *testing.T, b, src, dst []byte) {
		s, ok1 := netip.AddrFromSlice(src)
		d, ok2 := netip.AddrFromSlice(dst)
		if !ok1 || !ok2 {
			return
		}
		p, err := Decode(b, s, d, ChecksumPseudoHeader)
		if err != nil {
			return
		}
		out, err := Encode(p, s, d, ChecksumPseudoHeader)
		if err != nil {
			t.Fatalf("decoded %x but cannot encode %+v: %v", b, p, err)
		}
		// Reserved bits and trailing bytes are not kept; the defined part must match.
		if !bytes.Equal(out[8:], b[8:len(out)]) || out[1] != b[1] || out[2] != b[2] || out[3] != b[3] {
			t.Fatalf("round trip changed the message:\n in %x\nout %x", b, out)
		}
	})
}
