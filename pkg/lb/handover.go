package lb

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// A graceful VIP handover (vipd's make-before-break) takes the virtual address off this host
// the moment the new master has announced it. The client connections accepted on it are
// still here, and a response in flight on one of them should still reach its client: the
// client only sends to the new master from then on, but what this host sends goes to it
// directly. An ordinary socket can no longer send from an address the host does not have
// (the kernel's route lookup refuses the source); a transparent one can. So the listener is
// made transparent, and the sockets it accepts inherit it. Nothing else changes: without
// TPROXY rules a transparent listener accepts only connections to local addresses.

// setTransparent sets IP_TRANSPARENT (IPV6_TRANSPARENT on an IPv6 or dual-stack socket; the
// kernel keeps one flag for both) on fd. It needs CAP_NET_RAW or CAP_NET_ADMIN.
func setTransparent(fd int, network string) error {
	var err error
	if sa, gerr := unix.Getsockname(fd); gerr == nil {
		if _, v6 := sa.(*unix.SockaddrInet6); v6 {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TRANSPARENT, 1)
		} else {
			err = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TRANSPARENT, 1)
		}
	} else {
		err = gerr
	}
	if err != nil {
		if errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("lb: IP_TRANSPARENT on the %s listener needs CAP_NET_RAW: without it a response in flight when vipd hands the VIP to another master is cut off: %w", network, err)
		}
		return fmt.Errorf("lb: IP_TRANSPARENT on the %s listener: %w", network, err)
	}
	return nil
}
