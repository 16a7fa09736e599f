package vrrp

import (
	"bytes"
	"errors"
	"time"
)

// Drop reasons: why a received packet was not fed to the state machine. They are the label
// values of vipd's dropped-adverts counter.
const (
	DropMalformed = "malformed"
	DropChecksum  = "checksum"
	DropTTL       = "ttl"
	DropVersion   = "version"
	DropVRID      = "vrid" // another instance's advert on the same link: not an error
	DropAuth      = "auth"
	DropInterval  = "interval"
	DropOwn       = "own"  // our own advert looped back
	DropPeer      = "peer" // unicast mode: sender is not a configured peer
)

// Filter holds what an instance requires of the adverts it accepts (RFC 5798 section
// 7.1, RFC 3768 section 7.1).
type Filter struct {
	Version  uint8
	VRID     uint8
	AuthPass string        // VRRPv2 simple password; empty means no authentication
	Interval time.Duration // our advert interval
}

// Check validates a decoded advert that arrived with IP TTL ttl. It returns "" when the
// advert is to be accepted, otherwise a Drop* reason. mismatch reports an advert interval
// different from ours that is nevertheless accepted (VRRPv3 adopts the master's interval,
// as keepalived does; VRRPv2 drops it, as RFC 3768 requires).
func (f Filter) Check(p *Packet, ttl int) (reason string, mismatch bool) {
	if ttl != TTL {
		return DropTTL, false
	}
	if p.Version != f.Version {
		return DropVersion, false
	}
	if p.VRID != f.VRID {
		return DropVRID, false
	}
	if p.Version == 2 {
		var want [8]byte
		wantType := uint8(AuthNone)
		if f.AuthPass != "" {
			wantType = AuthSimple
			copy(want[:], f.AuthPass)
		}
		if p.AuthType != wantType || (wantType == AuthSimple && !bytes.Equal(p.AuthData[:], want[:])) {
			return DropAuth, false
		}
	}
	if p.Interval() != f.Interval {
		if p.Version == 2 {
			return DropInterval, true
		}
		return "", true
	}
	return "", false
}

// DropReason maps a Decode error to a Drop* reason.
func DropReason(err error) string {
	switch {
	case errors.Is(err, ErrBadChecksum):
		return DropChecksum
	case errors.Is(err, ErrVersion):
		return DropVersion
	}
	return DropMalformed
}
