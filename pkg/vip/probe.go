package vip

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"

	"github.com/hacp/hacp/pkg/vrrp"
)

// prober asks the link who holds an instance's virtual addresses and reports every answer:
// ARP requests with sender address 0.0.0.0 (RFC 5227 probes, which change no neighbour
// cache) for IPv4, neighbour solicitations for IPv6. It also reports what nobody asked for:
// gratuitous ARPs and unsolicited neighbour advertisements of the addresses. Package vrrp's
// Conflicts weighs the answers.
type prober struct {
	ifi   *net.Interface
	log   *slog.Logger
	v4    []netip.Addr
	v6    []netip.Addr
	claim func(vip netip.Addr, mac net.HardwareAddr, kind string)

	arp *arp.Client // nil without IPv4 addresses

	mu      sync.Mutex
	nd      *ndp.Conn // opened at the first IPv6 probe (the link-local address may be tentative before)
	ndErr   string    // the last error opening it, logged once
	closed  bool
	readers sync.WaitGroup
}

func newProber(ifi *net.Interface, vips []netip.Addr, log *slog.Logger, claim func(netip.Addr, net.HardwareAddr, string)) (*prober, error) {
	p := &prober{ifi: ifi, log: log, claim: claim}
	for _, v := range vips {
		if v.Is4() {
			p.v4 = append(p.v4, v)
		} else {
			p.v6 = append(p.v6, v)
		}
	}
	if len(p.v4) == 0 {
		return p, nil
	}
	pc, err := packet.Listen(ifi, packet.Raw, int(ethernet.EtherTypeARP), nil)
	if err != nil {
		return nil, fmt.Errorf("vip: open ARP socket on %s for conflict probes: %w%s", ifi.Name, err, permHint(err))
	}
	// The client wants an IPv4 address on the interface, though our probes do not use it.
	if p.arp, err = arp.New(ifi, pc); err != nil {
		pc.Close()
		log.Warn("no ARP conflict probes: the interface has no IPv4 address", "iface", ifi.Name, "err", err.Error())
		return p, nil
	}
	p.readers.Add(1)
	go p.readARP()
	return p, nil
}

// readARP reports every ARP packet whose sender address is one of the VIPs: answers to
// probes, gratuitous ARPs, and requests of a host that uses the address. Our own packets
// (the socket sees outgoing ones too) are told apart by their hardware address.
func (p *prober) readARP() {
	defer p.readers.Done()
	for {
		pk, _, err := p.arp.Read()
		if err != nil {
			if !p.isClosed() {
				p.log.Error("ARP conflict watch stopped", "err", err.Error())
			}
			return
		}
		for _, v := range p.v4 {
			if pk.SenderIP == v {
				p.claim(v, pk.SenderHardwareAddr, vrrp.ClaimARP)
			}
		}
	}
}

// readNDP reports every neighbour advertisement whose target is one of the VIPs, with its
// target link-layer address.
func (p *prober) readNDP(c *ndp.Conn) {
	defer p.readers.Done()
	for {
		m, _, _, err := c.ReadFrom()
		if err != nil {
			if !p.isClosed() {
				p.log.Error("NDP conflict watch stopped", "err", err.Error())
			}
			return
		}
		na, ok := m.(*ndp.NeighborAdvertisement)
		if !ok {
			continue
		}
		for _, o := range na.Options {
			if lla, ok := o.(*ndp.LinkLayerAddress); ok && lla.Direction == ndp.Target {
				for _, v := range p.v6 {
					if na.TargetAddress == v {
						p.claim(v, lla.Addr, vrrp.ClaimNDP)
					}
				}
			}
		}
	}
}

func (p *prober) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// probe asks once for every address.
func (p *prober) probe() error {
	var errs []error
	if p.arp != nil {
		zero := make(net.HardwareAddr, len(p.ifi.HardwareAddr))
		for _, v := range p.v4 {
			req, err := arp.NewPacket(arp.OperationRequest, p.ifi.HardwareAddr, netip.IPv4Unspecified(), zero, v)
			if err == nil {
				err = p.arp.WriteTo(req, ethernet.Broadcast)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("vip: ARP probe for %s on %s: %w", v, p.ifi.Name, err))
			}
		}
	}
	if len(p.v6) > 0 {
		if c := p.ndpConn(); c != nil {
			for _, v := range p.v6 {
				if err := p.solicit(c, v); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (p *prober) solicit(c *ndp.Conn, v netip.Addr) error {
	dst, err := ndp.SolicitedNodeMulticast(v)
	if err == nil {
		m := &ndp.NeighborSolicitation{TargetAddress: v,
			Options: []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: p.ifi.HardwareAddr}}}
		err = c.WriteTo(m, nil, dst)
	}
	if err != nil {
		return fmt.Errorf("vip: NDP probe for %s on %s: %w", v, p.ifi.Name, err)
	}
	return nil
}

// ndpConn opens the NDP socket once the interface has a usable link-local address.
func (p *prober) ndpConn() *ndp.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nd != nil || p.closed {
		return p.nd
	}
	c, _, err := ndp.Listen(p.ifi, ndp.LinkLocal)
	if err == nil {
		var f ipv6.ICMPFilter
		f.SetAll(true)
		f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
		if err = c.SetICMPFilter(&f); err != nil {
			c.Close()
		}
	}
	if err != nil {
		if msg := err.Error(); msg != p.ndErr {
			p.ndErr = msg
			p.log.Warn("no NDP conflict probes yet", "iface", p.ifi.Name, "err", msg)
		}
		return nil
	}
	p.nd = c
	p.readers.Add(1)
	go p.readNDP(c)
	return c
}

// Close stops the readers.
func (p *prober) Close() error {
	p.mu.Lock()
	p.closed = true
	nd := p.nd
	p.mu.Unlock()
	var errs []error
	if p.arp != nil {
		errs = append(errs, p.arp.Close())
	}
	if nd != nil {
		errs = append(errs, nd.Close())
	}
	p.readers.Wait()
	return errors.Join(errs...)
}

// ownMACs are the link-layer addresses of every interface of this host: a VIP answered from
// any of them (a macvlan, or another interface on the same segment answering for it) is ours.
func ownMACs() []net.HardwareAddr {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []net.HardwareAddr
	for _, i := range ifs {
		if len(i.HardwareAddr) > 0 {
			out = append(out, i.HardwareAddr)
		}
	}
	return out
}
