// Package bfd is Bidirectional Forwarding Detection (RFC 5880) for single-hop IPv4 and IPv6
// sessions (RFC 5881), in asynchronous mode without the echo function: the control packet
// format (packet.go), the session state machine as pure code with an injected clock
// (machine.go), and a thin UDP layer that runs sessions over sockets (conn.go).
package bfd
