// Package vrrp is the Virtual Router Redundancy Protocol as pure code: the advert wire
// format of VRRPv3 (RFC 5798 / RFC 9568) and VRRPv2 (RFC 3768), wire compatible with
// keepalived, and the per-instance state machine driven by events and an injected clock.
// It never touches a socket; package vip runs it on a host.
package vrrp
