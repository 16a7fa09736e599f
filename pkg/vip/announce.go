package vip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
)

// announcer tells the link that the virtual addresses moved here: gratuitous ARP requests
// (sender = target = VIP, broadcast) for IPv4 and unsolicited neighbour advertisements with
// the Override flag for IPv6.
type announcer struct {
	ifi *net.Interface
	pc  *packet.Conn // send-only AF_PACKET socket (protocol 0 receives nothing)
	nd  *ndp.Conn    // nil until the first IPv6 VIP is announced
}

func newAnnouncer(ifi *net.Interface) (*announcer, error) {
	pc, err := packet.Listen(ifi, packet.Raw, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("vip: open packet socket on %s for gratuitous ARP: %w", ifi.Name, err)
	}
	return &announcer{ifi: ifi, pc: pc}, nil
}

func (a *announcer) Close() error {
	if a.nd != nil {
		a.nd.Close()
	}
	return a.pc.Close()
}

// announce sends one gratuitous ARP or unsolicited NA per address.
func (a *announcer) announce(ps []netip.Prefix) error {
	var errs []error
	for _, p := range ps {
		var err error
		if p.Addr().Is4() {
			err = a.garp(p.Addr())
		} else {
			err = a.unsolicitedNA(p.Addr())
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *announcer) garp(ip netip.Addr) error {
	p, err := arp.NewPacket(arp.OperationRequest, a.ifi.HardwareAddr, ip, ethernet.Broadcast, ip)
	if err != nil {
		return fmt.Errorf("vip: gratuitous ARP for %s: %w", ip, err)
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	f := &ethernet.Frame{Destination: ethernet.Broadcast, Source: a.ifi.HardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}
	fb, err := f.MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := a.pc.WriteTo(fb, &packet.Addr{HardwareAddr: ethernet.Broadcast}); err != nil {
		return fmt.Errorf("vip: send gratuitous ARP for %s on %s: %w", ip, a.ifi.Name, err)
	}
	return nil
}

func (a *announcer) unsolicitedNA(ip netip.Addr) error {
	if a.nd == nil {
		c, _, err := ndp.Listen(a.ifi, ndp.LinkLocal)
		if err != nil {
			return fmt.Errorf("vip: open NDP socket on %s: %w", a.ifi.Name, err)
		}
		a.nd = c
	}
	m := &ndp.NeighborAdvertisement{
		Override:      true,
		TargetAddress: ip,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: a.ifi.HardwareAddr}},
	}
	if err := a.nd.WriteTo(m, nil, netip.IPv6LinkLocalAllNodes()); err != nil {
		return fmt.Errorf("vip: send unsolicited NA for %s on %s: %w", ip, a.ifi.Name, err)
	}
	return nil
}
