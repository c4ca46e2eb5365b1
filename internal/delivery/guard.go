package delivery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/sandmanhq/sandman/internal/lifecycle"
)

// Resolver looks up a host's addresses; *net.Resolver implements it. Tests
// inject one whose answers change.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides which targets deliveries may reach (docs/WEBHOOKS.md "Safe
// targets"). The zero value refuses http and every address that is not
// globally reachable (addressBlocks).
type Guard struct {
	// AllowPrivate allows http URLs and every address that is not globally
	// reachable but the metadata address: loopback, private, link-local
	// and the rest of addressBlocks (SANDMAN_WEBHOOK_ALLOW_PRIVATE_TARGETS;
	// local use only).
	AllowPrivate bool
	// Resolver resolves hosts, at registration and before every dial.
	// Default net.DefaultResolver.
	Resolver Resolver
}

// metadataAddrs are cloud instance metadata addresses: refused even when
// private targets are allowed (AWS, GCP and Azure use 169.254.169.254; AWS
// also fd00:ec2::254).
var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// v4Carriers are the IPv6 prefixes whose addresses carry an IPv4 address a
// translator or tunnel reaches: NAT64 (64:ff9b::/96, RFC 6052, and the
// local-use 64:ff9b:1::/48, RFC 8215, both in the last 32 bits), 6to4
// (2002::/16, RFC 3056, bits 16..47) and the deprecated IPv4-compatible
// ::/96 (the last 32 bits).
var v4Carriers = []struct {
	prefix netip.Prefix
	at     int // byte offset of the IPv4 address in the IPv6 one
}{
	{netip.MustParsePrefix("64:ff9b::/96"), 12},
	{netip.MustParsePrefix("64:ff9b:1::/48"), 12},
	{netip.MustParsePrefix("2002::/16"), 2},
	{netip.MustParsePrefix("::/96"), 12},
}

// carriedV4 returns the IPv4 address a carries (v4Carriers), if any.
func carriedV4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	for _, c := range v4Carriers {
		if c.prefix.Contains(a) {
			return netip.AddrFrom4([4]byte(b[c.at : c.at+4])), true
		}
	}
	return netip.Addr{}, false
}

// CheckAddr returns why a may not be dialled, or nil: the metadata address
// always; unless AllowPrivate, every address whose most specific block in
// addressBlocks IANA's special-purpose registries do not mark globally
// reachable (loopback, private, shared, link-local, unspecified,
// documentation, benchmarking, reserved, discard, Teredo, 6to4 and the
// rest), every multicast address and every IPv6 address outside
// 2000::/3. An IPv6 address that carries an IPv4 one (NAT64, 6to4,
// IPv4-compatible) is judged as that IPv4 address too. A zone is ignored.
func (g Guard) CheckAddr(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	if err := g.checkAddr(a); err != nil {
		return err
	}
	if v4, ok := carriedV4(a); ok {
		if err := g.checkAddr(v4); err != nil {
			return fmt.Errorf("%s carries %w", a, err)
		}
	}
	return nil
}

func (g Guard) checkAddr(a netip.Addr) error {
	for _, m := range metadataAddrs {
		if a == m {
			return fmt.Errorf("%s is the instance metadata address", a)
		}
	}
	if g.AllowPrivate {
		return nil
	}
	if !a.IsValid() {
		return errors.New("no address")
	}
	if b, ok := blockOf(a); ok && b.refused() {
		return b.refusal(a)
	}
	return nil
}

func (g Guard) resolver() Resolver {
	if g.Resolver != nil {
		return g.Resolver
	}
	return net.DefaultResolver
}

// CheckURL validates an endpoint URL at registration: absolute, https
// (http too with AllowPrivate), no user info, at most MaxURLLength bytes,
// a port, if given, from 1 to 65535, and a host whose every address passes
// CheckAddr. Errors: invalid, with the reason.
func (g Guard) CheckURL(ctx context.Context, raw string) error {
	if len(raw) > MaxURLLength {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "url must be at most %d bytes", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "url must be an absolute https URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && g.AllowPrivate:
	default:
		return lifecycle.Errorf(lifecycle.CodeInvalid, "url must use https")
	}
	if u.User != nil {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "url must not carry a user name or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return lifecycle.Errorf(lifecycle.CodeInvalid, "url port %s is out of range: a port is 1 to 65535", p)
		}
	}
	addrs, err := g.lookup(ctx, u.Hostname())
	if err != nil {
		return lifecycle.Errorf(lifecycle.CodeInvalid, "url host %q does not resolve", u.Hostname())
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			return lifecycle.Errorf(lifecycle.CodeInvalid, "url host %q is not allowed: %v", u.Hostname(), err)
		}
	}
	return nil
}

// lookup resolves host (an IP literal resolves to itself).
func (g Guard) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	addrs, err := g.resolver().LookupNetIP(ctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no addresses for %s", host)
	}
	return addrs, err
}

// ErrRefused marks a delivery refused by the Guard (the attempt's error
// starts "refused:").
var ErrRefused = errors.New("refused")

// DialContext dials addr ("host:port") through the Guard: the host is
// resolved here, every address is checked, and the connection goes to a
// checked address, with the dialer's Control checking the socket's address
// once more, so what is checked is what is dialled (no DNS rebinding).
func (g Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := g.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot read %q", ErrRefused, address)
		}
		if err := g.CheckAddr(ap.Addr()); err != nil {
			return fmt.Errorf("%w: %v", ErrRefused, err)
		}
		return nil
	}}
	var firstErr error
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s resolves to %v", ErrRefused, host, err)
			}
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}
