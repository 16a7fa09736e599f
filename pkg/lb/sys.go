package lb

import (
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls a connection makes on its way through a loop. Every socket and pipe
// of a session is non-blocking, so none of them waits, and they are made raw: without
// telling the runtime's scheduler that the goroutine enters a system call. Telling it
// costs little each time, but a busy proxy makes some twenty of these per connection,
// and a goroutine seen in a system call wakes the runtime's monitor thread (sysmon) and
// may have its processor taken away and handed to another thread: a sixth of lbproxy's
// CPU per short connection went to that.

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// splice moves up to n bytes from rfd to wfd, one of which is a pipe.
func splice(rfd, wfd, n int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(rfd), 0, uintptr(wfd), 0, uintptr(n), unix.SPLICE_F_NONBLOCK)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// accept4 returns a connection from the listening socket fd, non-blocking and
// close-on-exec; when peer is not nil, the kernel writes the client's address there
// (the connection-table sync needs it), else the address is not asked for.
func accept4(fd int, peer *unix.RawSockaddrAny) (int, error) {
	var addr, addrLen uintptr
	n := uint32(unix.SizeofSockaddrAny)
	if peer != nil {
		addr, addrLen = uintptr(unsafe.Pointer(peer)), uintptr(unsafe.Pointer(&n))
	}
	r, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), addr, addrLen, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

func closeFD(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func shutdownWrite(fd int) error {
	_, _, e := unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0)
	return errnoErr(e)
}

// socketError is the socket's pending error (SO_ERROR): after a connect, why it failed.
func socketError(fd int) error {
	var v int32
	n := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return e
	}
	return errnoErr(syscall.Errno(v))
}

func setNoDelay(fd int) error {
	v := int32(1)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&v)), 4, 0)
	return errnoErr(e)
}

// epollWait returns the events ready on epfd without waiting.
func epollWait(epfd int, events []unix.EpollEvent) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// sockaddr is a backend's socket address as the kernel takes it.
type sockaddr struct {
	family int
	raw    unix.RawSockaddrInet6 // an IPv4 address is a RawSockaddrInet4 at its start
	len    uintptr
}

func sockaddrOf(ap netip.AddrPort) *sockaddr {
	ip := ap.Addr().Unmap()
	sa := &sockaddr{}
	port := (*[2]byte)(unsafe.Pointer(&sa.raw.Port)) // the same offset in both layouts
	port[0], port[1] = byte(ap.Port()>>8), byte(ap.Port())
	if ip.Is4() {
		sa.family = unix.AF_INET
		v4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw))
		v4.Family = unix.AF_INET
		v4.Addr = ip.As4()
		sa.len = unix.SizeofSockaddrInet4
		return sa
	}
	sa.family = unix.AF_INET6
	sa.raw.Family = unix.AF_INET6
	sa.raw.Addr = ip.As16()
	if z := ip.Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.raw.Scope_id = uint32(ifi.Index)
		}
	}
	sa.len = unix.SizeofSockaddrInet6
	return sa
}

// connect starts a connect of the non-blocking socket fd to sa; EINPROGRESS says it is
// under way.
func connect(fd int, sa *sockaddr) error {
	_, _, e := unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa.raw)), sa.len)
	return errnoErr(e)
}

// sockAddrPort returns the local (peer false) or remote address of socket fd, as
// getsockname(2) or getpeername(2) tell it; the zero value when they fail.
func sockAddrPort(fd int, peer bool) netip.AddrPort {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	call := uintptr(unix.SYS_GETSOCKNAME)
	if peer {
		call = unix.SYS_GETPEERNAME
	}
	if _, _, e := unix.RawSyscall(call, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n))); e != 0 {
		return netip.AddrPort{}
	}
	return rawAddrPort(&rsa)
}

// rawAddrPort converts an IPv4 or IPv6 socket address the kernel wrote; a link-local
// (scoped) one, or another family, is the zero value.
func rawAddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		if sa.Scope_id != 0 {
			return netip.AddrPort{}
		}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
