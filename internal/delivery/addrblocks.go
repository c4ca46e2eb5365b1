package delivery

import (
	"fmt"
	"net/netip"
)

// reach is a block's "Globally Reachable" value in IANA's special-purpose
// address registries: whether a datagram to an address in it is forwarded
// beyond the administrative domain that holds it.
type reach int8

// The registries' three values.
const (
	// reachFalse: not globally reachable; the Guard refuses the block.
	reachFalse reach = iota
	// reachTrue: globally reachable; the Guard allows the block (a
	// webhook receiver may really live there).
	reachTrue
	// reachNA: the registry gives "N/A" (Teredo, 6to4, and the deprecated
	// ORCHID and 6to4 relay anycast blocks). The Guard refuses these:
	// Teredo and 6to4 tunnel to an IPv4 address other than the one
	// checked, the other two are retired, and no webhook receiver is
	// reached at any of them.
	reachNA
)

// The registries the rows of addressBlocks are taken from.
const (
	registryIPv4Special   = "IANA IPv4 Special-Purpose Address Registry"
	registryIPv6Special   = "IANA IPv6 Special-Purpose Address Registry"
	registryIPv4Multicast = "IANA IPv4 Multicast Address Space Registry"
	registryIPv6Multicast = "IANA IPv6 Multicast Address Space Registry"
	registryIPv6Space     = "IANA IPv6 Address Space Registry"
)

// addressBlock is one row of addressBlocks.
type addressBlock struct {
	// prefix is the block.
	prefix netip.Prefix
	// name is the registry's name for it.
	name string
	// rfc is the document that assigned it, as the registry cites it.
	rfc string
	// registry is the IANA registry the row is taken from.
	registry string
	// global is the registry's "Globally Reachable" value (for the rows
	// from the multicast and address space registries, which have no such
	// column: reachFalse for multicast and for IPv6 outside 2000::/3,
	// reachTrue for 2000::/3).
	global reach
}

// refused reports whether the Guard refuses addresses in b when private
// targets are not allowed: every block not marked globally reachable.
func (b addressBlock) refused() bool { return b.global != reachTrue }

// addressBlocks is the one table the Guard judges an address by when
// private targets are not allowed (docs/WEBHOOKS.md "Safe targets"): every
// block of IANA's IPv4 and IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry and
// .../iana-ipv6-special-registry, structured by RFC 6890 and RFC 8190),
// the multicast blocks, and IPv6's one global unicast block. Go's net/netip
// knows loopback, private, link-local and multicast, but not these
// registries, so benchmarking, documentation, reserved, discard and Teredo
// addresses would pass it.
//
// The most specific block containing an address decides (blockOf), which
// is how the registries' exceptions read: 192.0.0.0/24 is not globally
// reachable, but 192.0.0.9/32 and 192.0.0.10/32 inside it are; 2001::/23
// is not, but 2001:1::1/128, 2001:3::/32 and 2001:20::/28 inside it are.
// An address in no block is allowed (IPv4 unicast outside these blocks).
var addressBlocks = []addressBlock{
	// IPv4 Special-Purpose Address Registry.
	v4("0.0.0.0/8", `"This network"`, "RFC 791, section 3.2", reachFalse),
	v4("0.0.0.0/32", `"This host on this network"`, "RFC 1122, section 3.2.1.3", reachFalse),
	v4("10.0.0.0/8", "Private-Use", "RFC 1918", reachFalse),
	v4("100.64.0.0/10", "Shared Address Space", "RFC 6598", reachFalse),
	v4("127.0.0.0/8", "Loopback", "RFC 1122, section 3.2.1.3", reachFalse),
	v4("169.254.0.0/16", "Link Local", "RFC 3927", reachFalse),
	v4("172.16.0.0/12", "Private-Use", "RFC 1918", reachFalse),
	v4("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890, section 2.1", reachFalse),
	v4("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", reachFalse),
	v4("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", reachFalse),
	v4("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", reachTrue),
	v4("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", reachTrue),
	v4("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050, section 2.2", reachFalse),
	v4("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050, section 2.2", reachFalse),
	v4("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", reachFalse),
	v4("192.31.196.0/24", "AS112-v4", "RFC 7535", reachTrue),
	v4("192.52.193.0/24", "AMT", "RFC 7450", reachTrue),
	v4("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", reachNA),
	v4("192.168.0.0/16", "Private-Use", "RFC 1918", reachFalse),
	v4("198.18.0.0/15", "Benchmarking", "RFC 2544", reachFalse),
	v4("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", reachFalse),
	v4("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", reachFalse),
	v4("240.0.0.0/4", "Reserved", "RFC 1112, section 4", reachFalse),
	v4("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919, section 7", reachFalse),
	// IPv4 multicast (not in the special-purpose registry).
	{netip.MustParsePrefix("224.0.0.0/4"), "Multicast", "RFC 5771", registryIPv4Multicast, reachFalse},

	// IPv6 Special-Purpose Address Registry.
	v6("::1/128", "Loopback Address", "RFC 4291", reachFalse),
	v6("::/128", "Unspecified Address", "RFC 4291", reachFalse),
	v6("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", reachFalse),
	v6("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", reachTrue),
	v6("64:ff9b:1::/48", "IPv4-IPv6 Translat.", "RFC 8215", reachFalse),
	v6("100::/64", "Discard-Only Address Block", "RFC 6666", reachFalse),
	v6("2001::/23", "IETF Protocol Assignments", "RFC 2928", reachFalse),
	v6("2001::/32", "TEREDO", "RFC 4380, RFC 8190", reachNA),
	v6("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", reachTrue),
	v6("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", reachTrue),
	v6("2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", reachTrue),
	v6("2001:2::/48", "Benchmarking", "RFC 5180, RFC Errata 1752", reachFalse),
	v6("2001:3::/32", "AMT", "RFC 7450", reachTrue),
	v6("2001:4:112::/48", "AS112-v6", "RFC 7535", reachTrue),
	v6("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", reachNA),
	v6("2001:20::/28", "ORCHIDv2", "RFC 7343", reachTrue),
	v6("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", reachTrue),
	v6("2001:db8::/32", "Documentation", "RFC 3849", reachFalse),
	v6("2002::/16", "6to4", "RFC 3056", reachNA),
	v6("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", reachTrue),
	v6("3fff::/20", "Documentation", "RFC 9637", reachFalse),
	v6("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", reachFalse),
	v6("fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", reachFalse),
	v6("fe80::/10", "Link-Local Unicast", "RFC 4291", reachFalse),
	// IPv6 multicast, and the IPv6 address space: only 2000::/3 is
	// allocated as global unicast; the rest is reserved by the IETF (and
	// holds the deprecated site-local fec0::/10 and IPv4-compatible ::/96).
	{netip.MustParsePrefix("ff00::/8"), "Multicast", "RFC 4291, section 2.7", registryIPv6Multicast, reachFalse},
	{netip.MustParsePrefix("::/0"), "Reserved by IETF (outside Global Unicast)", "RFC 4291", registryIPv6Space, reachFalse},
	{netip.MustParsePrefix("2000::/3"), "Global Unicast", "RFC 4291", registryIPv6Space, reachTrue},
}

func v4(prefix, name, rfc string, global reach) addressBlock {
	return addressBlock{netip.MustParsePrefix(prefix), name, rfc, registryIPv4Special, global}
}

func v6(prefix, name, rfc string, global reach) addressBlock {
	return addressBlock{netip.MustParsePrefix(prefix), name, rfc, registryIPv6Special, global}
}

// blockOf returns the most specific row of addressBlocks that contains a,
// if any. An IPv4-mapped IPv6 address is looked up as its IPv4 address,
// and a zone is ignored (fe80::1%eth0 is in fe80::/10).
func blockOf(a netip.Addr) (addressBlock, bool) {
	a = a.Unmap().WithZone("")
	var best addressBlock
	found := false
	for _, b := range addressBlocks {
		if b.prefix.Contains(a) && (!found || b.prefix.Bits() > best.prefix.Bits()) {
			best, found = b, true
		}
	}
	return best, found
}

// refusal returns why an address in b is refused.
func (b addressBlock) refusal(a netip.Addr) error {
	why := "not globally reachable"
	if b.global == reachNA {
		why = "a transition or deprecated block, refused"
	}
	return fmt.Errorf("%s is in %s (%s, %s): %s", a, b.prefix, b.name, b.rfc, why)
}
