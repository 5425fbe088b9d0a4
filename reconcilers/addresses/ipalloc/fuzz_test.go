package ipalloc

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/udnkit/udnkit/ovnk"
)

// model is the reference: plain sets, no offsets, no cursor.
type model struct {
	subnet    netip.Prefix
	forbidden map[netip.Addr]bool // never assignable: network, broadcast, infrastructure
	reserved  map[netip.Addr]bool // explicit requests only
	ips       map[netip.Addr]string
	macs      map[string]string
	owners    map[string]Allocation
}

func newModel(subnet netip.Prefix, infra, reserved []netip.Prefix, gw, mgmt netip.Addr) *model {
	m := &model{subnet: subnet, forbidden: map[netip.Addr]bool{}, reserved: map[netip.Addr]bool{},
		ips: map[netip.Addr]string{}, macs: map[string]string{}, owners: map[string]Allocation{}}
	var last netip.Addr
	for a := subnet.Addr(); subnet.Contains(a); a = a.Next() {
		last = a
		for _, r := range infra {
			m.forbidden[a] = m.forbidden[a] || r.Contains(a)
		}
		for _, r := range reserved {
			m.reserved[a] = m.reserved[a] || r.Contains(a)
		}
	}
	m.forbidden[subnet.Addr()], m.forbidden[gw], m.forbidden[mgmt] = true, true, true
	if subnet.Addr().Is4() {
		m.forbidden[last] = true
	}
	m.macs[ovnk.MACFromIP(gw).String()], m.macs[ovnk.MACFromIP(mgmt).String()] = InfrastructureOwner, InfrastructureOwner
	return m
}

// dynamicCandidate reports whether dynamic allocation may hand out a.
func (m *model) dynamicCandidate(a netip.Addr) bool {
	return !m.forbidden[a] && !m.reserved[a] && m.ips[a] == "" && m.macs[ovnk.MACFromIP(a).String()] == ""
}

func (m *model) anyDynamic() bool {
	for a := m.subnet.Addr(); m.subnet.Contains(a); a = a.Next() {
		if m.dynamicCandidate(a) {
			return true
		}
	}
	return false
}

func (m *model) take(owner string, a Allocation) {
	m.owners[owner] = a
	m.ips[a.IPs[0].Addr()] = owner
	m.macs[a.MAC.String()] = owner
}

var fuzzNetworks = []Config{
	{Subnets: pfx("10.0.0.0/27")},
	{Subnets: pfx("10.0.0.0/27"), InfrastructureSubnets: pfx("10.0.0.16/30"), ReservedSubnets: pfx("10.0.0.4/30", "10.0.0.24/31"), DefaultGatewayIPs: addrs("10.0.0.18")},
	{Subnets: pfx("fd00::/123"), ReservedSubnets: pfx("fd00::8/125")},
	{Subnets: pfx("fd00::/123"), InfrastructureSubnets: pfx("fd00::10/126"), ReservedSubnets: pfx("fd00::/126")},
}

// FuzzPoolAgainstModel drives random allocate/request/release sequences and
// checks every answer against the reference model: never a duplicate IP or
// MAC, never an excluded address from dynamic allocation, exhaustion exactly
// when the model has nothing left, refusals exactly when the model refuses.
// Half the inputs make every owner name hash alike.
func FuzzPoolAgainstModel(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 5, 3, 4, 1, 9})
	f.Add([]byte{1, 1, 3, 1, 4, 1, 5, 1, 6, 1, 7, 1, 8, 1, 9, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7})
	f.Add([]byte{2, 3, 0, 3, 1, 0, 2, 0, 3, 2, 2, 0, 4, 0, 5})
	f.Add([]byte{3, 4, 9, 0, 1, 5, 2, 0, 2, 0, 3, 0, 4})
	f.Add([]byte{4, 0, 1, 0, 2, 4, 1, 1, 3, 0, 4, 4, 2, 0, 1, 4, 3})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		cfg := fuzzNetworks[int(ops[0])%len(fuzzNetworks)]
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ops[0]&4 != 0 { // every owner name hashes alike
			p.owners.hash = func(string) uint32 { return 0 }
		}
		m := newModel(cfg.Subnets[0], cfg.InfrastructureSubnets, cfg.ReservedSubnets, p.Gateways()[0], p.ManagementIPs()[0])
		if m.forbidden[p.Gateways()[0]] != true || !cfg.Subnets[0].Contains(p.ManagementIPs()[0]) {
			t.Fatalf("gateway/management outside the subnet")
		}
		for i := 1; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%5, ops[i+1]
			owner := fmt.Sprintf("o%d", arg%12)
			switch op {
			case 0, 1: // dynamic
				held, had := m.owners[owner]
				canAllocate := m.anyDynamic()
				a, err := p.Allocate(owner, Request{})
				switch {
				case had:
					if err != nil || !equal(a, held) {
						t.Fatalf("owner %s holds %v, Allocate gave %v %v", owner, held, a, err)
					}
				case err != nil:
					if canAllocate || ReasonOf(err) != ReasonSubnetExhausted {
						t.Fatalf("dynamic allocation refused (%v) but the model has a free address", err)
					}
				default:
					if !canAllocate || !m.dynamicCandidate(a.IPs[0].Addr()) {
						t.Fatalf("dynamic allocation gave %v which the model does not allow", a.IPs)
					}
					if a.MAC.String() != ovnk.MACFromIP(a.IPs[0].Addr()).String() {
						t.Fatalf("dynamic MAC %s is not derived from %v", a.MAC, a.IPs[0])
					}
					m.take(owner, a)
				}
			case 2, 3: // explicit IP, sometimes with a MAC
				ip := cfg.Subnets[0].Addr()
				for j := 0; j < int(arg)%34; j++ {
					ip = ip.Next()
				}
				req := Request{IPs: []string{ip.String()}}
				wantMAC := ovnk.MACFromIP(ip).String()
				if op == 3 {
					wantMAC = fmt.Sprintf("02:00:00:00:00:%02x", arg%7)
					req.MAC = wantMAC
				}
				_, had := m.owners[owner]
				ok := cfg.Subnets[0].Contains(ip) && !m.forbidden[ip] && m.ips[ip] == "" && m.macs[wantMAC] == ""
				a, err := p.Allocate(owner, req)
				switch {
				case had:
					if err != nil {
						t.Fatalf("re-allocating for %s: %v", owner, err)
					}
				case ok != (err == nil):
					t.Fatalf("request %v for %s: model says ok=%v, pool says %v", req, owner, ok, err)
				case ok:
					if a.IPs[0].Addr() != ip || a.MAC.String() != wantMAC {
						t.Fatalf("request %v gave %v %s", req, a.IPs, a.MAC)
					}
					m.take(owner, a)
				}
			case 4: // release
				held, had := m.owners[owner]
				if p.Release(owner) != had {
					t.Fatalf("Release(%s) disagrees with the model (held=%v)", owner, had)
				}
				if had {
					delete(m.owners, owner)
					delete(m.ips, held.IPs[0].Addr())
					delete(m.macs, held.MAC.String())
				}
			}
			for a, o := range m.ips {
				if p.OwnerOfIP(a) != o {
					t.Fatalf("pool says %v belongs to %q, model says %q", a, p.OwnerOfIP(a), o)
				}
			}
			if p.Len() != len(m.owners) {
				t.Fatalf("pool has %d owners, model %d", p.Len(), len(m.owners))
			}
		}
	})
}
