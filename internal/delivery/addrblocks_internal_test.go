package delivery

import (
	"net/netip"
	"slices"
	"testing"
)

// TestTargetsNotGloballyReachableAreRefused: without private targets, the
// Guard refuses every block IANA's special-purpose registries do not mark
// globally reachable, and allows the registries' exceptions. Each row of
// addressBlocks has a case here: an address inside, and the neighbours
// just outside where that tells something (a block's edge, or the block
// around an exception). The verdicts are written out, not read from the
// table, so a wrong row fails.
func TestTargetsNotGloballyReachableAreRefused(t *testing.T) {
	const refused, allowed = true, false
	cases := map[string]map[string]bool{ // block → address → refused
		// IPv4 Special-Purpose Address Registry.
		"0.0.0.0/8":          {"0.1.2.3": refused, "1.0.0.0": allowed},
		"0.0.0.0/32":         {"0.0.0.0": refused, "0.0.0.1": refused},
		"10.0.0.0/8":         {"10.255.255.255": refused, "9.255.255.255": allowed, "11.0.0.0": allowed},
		"100.64.0.0/10":      {"100.64.0.1": refused, "100.63.255.255": allowed, "100.128.0.0": allowed},
		"127.0.0.0/8":        {"127.0.0.1": refused, "128.0.0.0": allowed},
		"169.254.0.0/16":     {"169.254.1.1": refused, "169.253.255.255": allowed, "169.255.0.0": allowed},
		"172.16.0.0/12":      {"172.31.255.255": refused, "172.15.255.255": allowed, "172.32.0.0": allowed},
		"192.0.0.0/24":       {"192.0.0.200": refused, "191.255.255.255": allowed, "192.0.1.0": allowed},
		"192.0.0.0/29":       {"192.0.0.1": refused, "192.0.0.7": refused},
		"192.0.0.8/32":       {"192.0.0.8": refused},
		"192.0.0.9/32":       {"192.0.0.9": allowed, "192.0.0.8": refused},
		"192.0.0.10/32":      {"192.0.0.10": allowed, "192.0.0.11": refused},
		"192.0.0.170/32":     {"192.0.0.170": refused, "192.0.0.169": refused},
		"192.0.0.171/32":     {"192.0.0.171": refused, "192.0.0.172": refused},
		"192.0.2.0/24":       {"192.0.2.1": refused, "192.0.1.255": allowed, "192.0.3.0": allowed},
		"192.31.196.0/24":    {"192.31.196.1": allowed},
		"192.52.193.0/24":    {"192.52.193.1": allowed},
		"192.88.99.0/24":     {"192.88.99.1": refused, "192.88.98.255": allowed, "192.88.100.0": allowed},
		"192.168.0.0/16":     {"192.168.1.1": refused, "192.167.255.255": allowed, "192.169.0.0": allowed},
		"198.18.0.0/15":      {"198.18.0.1": refused, "198.19.255.255": refused, "198.17.255.255": allowed, "198.20.0.0": allowed},
		"198.51.100.0/24":    {"198.51.100.7": refused, "198.51.99.255": allowed, "198.51.101.0": allowed},
		"203.0.113.0/24":     {"203.0.113.9": refused, "203.0.112.255": allowed, "203.0.114.0": allowed},
		"240.0.0.0/4":        {"240.0.0.1": refused, "254.1.2.3": refused},
		"255.255.255.255/32": {"255.255.255.255": refused, "255.255.255.254": refused},
		"224.0.0.0/4":        {"224.0.0.1": refused, "239.255.255.255": refused, "223.255.255.255": allowed},

		// IPv6 Special-Purpose Address Registry. An IPv4-mapped address is
		// judged as its IPv4 address.
		"::1/128":       {"::1": refused, "::2": refused},
		"::/128":        {"::": refused},
		"::ffff:0:0/96": {"::ffff:7f00:1": refused, "::ffff:c000:201": refused, "::ffff:5db8:d70e": allowed, "::fffe:ffff:ffff": refused},
		// NAT64 reaches the IPv4 address it carries: public passes.
		"64:ff9b::/96":      {"64:ff9b::5db8:d70e": allowed, "64:ff9b::a00:1": refused, "64:ff9b::c612:1": refused, "64:ff9b::1:0:0": refused},
		"64:ff9b:1::/48":    {"64:ff9b:1::5db8:d70e": refused, "64:ff9b:2::": refused},
		"100::/64":          {"100::1": refused, "100:0:0:1::1": refused},
		"2001::/23":         {"2001:100::1": refused, "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff": refused, "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff": allowed, "2001:200::": allowed},
		"2001::/32":         {"2001:0:4136:e378:8000:63bf:3fff:fdd2": refused, "2001:1::": refused},
		"2001:1::1/128":     {"2001:1::1": allowed, "2001:1::": refused},
		"2001:1::2/128":     {"2001:1::2": allowed},
		"2001:1::3/128":     {"2001:1::3": allowed, "2001:1::4": refused},
		"2001:2::/48":       {"2001:2::1": refused, "2001:2:1::": refused},
		"2001:3::/32":       {"2001:3::1": allowed, "2001:2:ffff:ffff:ffff:ffff:ffff:ffff": refused, "2001:4::1": refused},
		"2001:4:112::/48":   {"2001:4:112::1": allowed, "2001:4:111:ffff:ffff:ffff:ffff:ffff": refused, "2001:4:113::": refused},
		"2001:10::/28":      {"2001:10::1": refused, "2001:f:ffff:ffff:ffff:ffff:ffff:ffff": refused},
		"2001:20::/28":      {"2001:20::1": allowed, "2001:1f:ffff:ffff:ffff:ffff:ffff:ffff": refused},
		"2001:30::/28":      {"2001:30::1": allowed, "2001:40::": refused},
		"2001:db8::/32":     {"2001:db8::1": refused, "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff": allowed, "2001:db9::": allowed},
		"2002::/16":         {"2002:5db8:d70e::1": refused, "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff": allowed, "2003::": allowed},
		"2620:4f:8000::/48": {"2620:4f:8000::1": allowed},
		"3fff::/20":         {"3fff::1": refused, "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff": allowed, "3fff:1000::": allowed},
		"5f00::/16":         {"5f00::1": refused, "5f01::": refused},
		"fc00::/7":          {"fd00::1": refused, "fc00::1": refused, "fe00::": refused},
		"fe80::/10":         {"fe80::1": refused, "fe80::1%eth0": refused, "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff": refused},
		// Multicast and the IPv6 address space.
		"ff00::/8": {"ff02::1": refused, "ff0e::1": refused},
		"::/0":     {"1::1": refused, "4000::": refused, "fec0::1": refused, "::a00:1": refused},
		"2000::/3": {"2606:4700::1111": allowed, "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff": refused, "4000::1": refused},
	}
	byBlock := map[netip.Prefix]map[string]bool{}
	for block, addrs := range cases {
		p := netip.MustParsePrefix(block)
		if !slices.ContainsFunc(addressBlocks, func(b addressBlock) bool { return b.prefix == p }) {
			t.Errorf("case %s is no row of addressBlocks", block)
		}
		byBlock[p] = addrs
	}
	g := Guard{}
	for _, b := range addressBlocks {
		t.Run(b.prefix.String(), func(t *testing.T) {
			addrs, ok := byBlock[b.prefix]
			if !ok {
				t.Fatalf("no case for the row %s (%s)", b.prefix, b.name)
			}
			if b.rfc == "" || b.registry == "" {
				t.Errorf("row %s cites no RFC or registry", b.prefix)
			}
			for s, want := range addrs {
				a := netip.MustParseAddr(s)
				err := g.CheckAddr(a)
				if got := err != nil; got != want {
					t.Errorf("CheckAddr(%s): %v, want refused=%v", s, err, want)
				}
			}
		})
	}
}

// TestBlockOfTakesTheMostSpecificBlock: an exception inside a refused
// block is read before the block around it.
func TestBlockOfTakesTheMostSpecificBlock(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.0.9": "192.0.0.9/32", "192.0.0.1": "192.0.0.0/29", "192.0.0.99": "192.0.0.0/24",
		"2001:0:1::1": "2001::/32", "2001:3::9": "2001:3::/32", "2001:5::": "2001::/23",
		"2606:4700::1111": "2000::/3", "fe80::1%eth0": "fe80::/10", "::ffff:10.0.0.1": "10.0.0.0/8", "::ffff:0:1": "0.0.0.0/8",
	} {
		b, ok := blockOf(netip.MustParseAddr(addr))
		if got := b.prefix.String(); !ok || got != want {
			t.Errorf("blockOf(%s) = %s (%v), want %s", addr, got, ok, want)
		}
	}
	if b, ok := blockOf(netip.MustParseAddr("93.184.215.14")); ok {
		t.Errorf("blockOf(a public IPv4 address) = %s, want none", b.prefix)
	}
}
