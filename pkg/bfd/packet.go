package bfd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// State is a session state (RFC 5880 4.1, the Sta field).
type State uint8

// The session states.
const (
	AdminDown State = 0
	Down      State = 1
	Init      State = 2
	Up        State = 3
)

func (s State) String() string {
	switch s {
	case AdminDown:
		return "AdminDown"
	case Down:
		return "Down"
	case Init:
		return "Init"
	case Up:
		return "Up"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Diag says why a session last left Up (RFC 5880 4.1, the Diag field).
type Diag uint8

// The diagnostic codes of RFC 5880.
const (
	DiagNone                  Diag = 0
	DiagControlDetectExpired  Diag = 1
	DiagEchoFailed            Diag = 2
	DiagNeighborDown          Diag = 3
	DiagForwardingPlaneReset  Diag = 4
	DiagPathDown              Diag = 5
	DiagConcatenatedPathDown  Diag = 6
	DiagAdminDown             Diag = 7
	DiagReverseConcatPathDown Diag = 8
)

var diagNames = [...]string{"none", "control detection time expired", "echo function failed",
	"neighbor signaled session down", "forwarding plane reset", "path down",
	"concatenated path down", "administratively down", "reverse concatenated path down"}

func (d Diag) String() string {
	if int(d) < len(diagNames) {
		return diagNames[d]
	}
	return fmt.Sprintf("diag %d", uint8(d))
}

// Version is the protocol version of RFC 5880.
const Version = 1

// HeaderLen is the length of a control packet without authentication.
const HeaderLen = 24

// Errors of UnmarshalBinary: each is a reason to discard a packet (RFC 5880 6.8.6).
var (
	ErrShort         = errors.New("bfd: packet shorter than its 24-byte header")
	ErrVersion       = errors.New("bfd: version is not 1")
	ErrLength        = errors.New("bfd: length field shorter than the header or longer than the packet")
	ErrDetectMult    = errors.New("bfd: detect multiplier is zero")
	ErrMultipoint    = errors.New("bfd: multipoint bit set")
	ErrMyDiscr       = errors.New("bfd: my discriminator is zero")
	ErrYourDiscr     = errors.New("bfd: your discriminator is zero in a packet whose state is not Down or AdminDown")
	ErrAuth          = errors.New("bfd: authenticated packet (authentication is not supported)")
	ErrPollAndFinal  = errors.New("bfd: poll and final bits both set")
	ErrIntervalRange = errors.New("bfd: interval does not fit the 32-bit microsecond field")
)

// ControlPacket is a BFD control packet (RFC 5880 4.1) without an authentication section.
// Intervals are carried in microseconds on the wire.
type ControlPacket struct {
	// Diag is the sender's local diagnostic: why its session last left Up.
	Diag Diag
	// State is the sender's session state.
	State State
	// Poll asks for a packet with Final set: the sender changed its timers.
	Poll bool
	// Final answers a Poll.
	Final bool
	// ControlPlaneIndependent: the sender's BFD does not share fate with its control plane.
	ControlPlaneIndependent bool
	// Demand: the sender asks the receiver to stop periodic transmission (demand mode).
	Demand bool
	// DetectMult is the sender's detection time multiplier.
	DetectMult uint8
	// MyDiscriminator is the sender's nonzero identifier of the session.
	MyDiscriminator uint32
	// YourDiscriminator echoes the receiver's discriminator, zero while unknown.
	YourDiscriminator uint32
	// DesiredMinTxInterval is the least interval at which the sender wants to transmit.
	DesiredMinTxInterval time.Duration
	// RequiredMinRxInterval is the least interval between received packets the sender supports.
	RequiredMinRxInterval time.Duration
	// RequiredMinEchoRxInterval is that for echo packets; zero: no echo function.
	RequiredMinEchoRxInterval time.Duration
}

// Flag bits of the second byte.
const (
	flagPoll      = 0x20
	flagFinal     = 0x10
	flagCPI       = 0x08
	flagAuth      = 0x04
	flagDemand    = 0x02
	flagMultipoin = 0x01
)

func micros(d time.Duration) (uint32, error) {
	us := d / time.Microsecond
	if d < 0 || us > 0xFFFFFFFF {
		return 0, ErrIntervalRange
	}
	return uint32(us), nil
}

// MarshalBinary encodes p as a 24-byte packet.
func (p *ControlPacket) MarshalBinary() ([]byte, error) {
	if p.Poll && p.Final {
		return nil, ErrPollAndFinal
	}
	if p.State > Up || p.Diag > 31 {
		return nil, fmt.Errorf("bfd: state %d or diagnostic %d out of range", p.State, p.Diag)
	}
	var ivs [3]uint32
	for i, d := range []time.Duration{p.DesiredMinTxInterval, p.RequiredMinRxInterval, p.RequiredMinEchoRxInterval} {
		v, err := micros(d)
		if err != nil {
			return nil, err
		}
		ivs[i] = v
	}
	b := make([]byte, HeaderLen)
	b[0] = Version<<5 | uint8(p.Diag)
	b[1] = uint8(p.State) << 6
	for _, f := range []struct {
		set bool
		bit byte
	}{{p.Poll, flagPoll}, {p.Final, flagFinal}, {p.ControlPlaneIndependent, flagCPI}, {p.Demand, flagDemand}} {
		if f.set {
			b[1] |= f.bit
		}
	}
	b[2] = p.DetectMult
	b[3] = HeaderLen
	binary.BigEndian.PutUint32(b[4:], p.MyDiscriminator)
	binary.BigEndian.PutUint32(b[8:], p.YourDiscriminator)
	for i, v := range ivs {
		binary.BigEndian.PutUint32(b[12+4*i:], v)
	}
	return b, nil
}

// UnmarshalBinary decodes a packet and applies the checks of RFC 5880 6.8.6 that need no
// session: version, length, detect multiplier, multipoint, discriminators. An authenticated
// packet is refused (no session here uses authentication, so 6.8.6 discards it). Bytes
// beyond the Length field (UDP padding) are ignored.
func (p *ControlPacket) UnmarshalBinary(b []byte) error {
	if len(b) < HeaderLen {
		return ErrShort
	}
	if b[0]>>5 != Version {
		return ErrVersion
	}
	auth := b[1]&flagAuth != 0
	if l := int(b[3]); l < HeaderLen || l > len(b) || (auth && l < HeaderLen+2) {
		return ErrLength
	}
	if auth {
		return ErrAuth
	}
	if b[2] == 0 {
		return ErrDetectMult
	}
	if b[1]&flagMultipoin != 0 {
		return ErrMultipoint
	}
	q := ControlPacket{
		Diag:                      Diag(b[0] & 0x1F),
		State:                     State(b[1] >> 6),
		Poll:                      b[1]&flagPoll != 0,
		Final:                     b[1]&flagFinal != 0,
		ControlPlaneIndependent:   b[1]&flagCPI != 0,
		Demand:                    b[1]&flagDemand != 0,
		DetectMult:                b[2],
		MyDiscriminator:           binary.BigEndian.Uint32(b[4:]),
		YourDiscriminator:         binary.BigEndian.Uint32(b[8:]),
		DesiredMinTxInterval:      time.Duration(binary.BigEndian.Uint32(b[12:])) * time.Microsecond,
		RequiredMinRxInterval:     time.Duration(binary.BigEndian.Uint32(b[16:])) * time.Microsecond,
		RequiredMinEchoRxInterval: time.Duration(binary.BigEndian.Uint32(b[20:])) * time.Microsecond,
	}
	if q.MyDiscriminator == 0 {
		return ErrMyDiscr
	}
	if q.YourDiscriminator == 0 && q.State != Down && q.State != AdminDown {
		return ErrYourDiscr
	}
	if q.Poll && q.Final {
		return ErrPollAndFinal
	}
	*p = q
	return nil
}
