package delivery_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sandmanhq/sandman/internal/delivery"
	"github.com/sandmanhq/sandman/internal/delivery/memstore"
	"github.com/sandmanhq/sandman/internal/lifecycle"
)

func TestRegistrationRefusesUnsafeTargets(t *testing.T) {
	res := &fakeResolver{}
	res.set("loopback.example.test", "127.0.0.1")
	res.set("mixed.example.test", "93.184.215.14", "10.1.2.3")
	res.set("public.example.test", "93.184.215.14")
	g := delivery.Guard{Resolver: res}
	svc := delivery.NewService(memstore.New(), g, nil, nil)
	for name, url := range map[string]string{
		"MetadataAddress":    "https://169.254.169.254/latest/meta-data/",
		"MetadataOverHTTP":   "http://169.254.169.254/latest/meta-data/",
		"Private":            "https://10.0.0.1/hook",
		"PrivateOverHTTP":    "http://10.0.0.1/hook",
		"NameToLoopback":     "https://loopback.example.test/hook",
		"OneAnswerPrivate":   "https://mixed.example.test/hook",
		"Loopback":           "https://127.0.0.1:8443/hook",
		"IPv6Loopback":       "https://[::1]/hook",
		"Unspecified":        "https://0.0.0.0/hook",
		"PlainHTTP":          "http://public.example.test/hook",
		"NoHost":             "https:///hook",
		"Unresolvable":       "https://nowhere.example.test/hook",
		"UserInfo":           "https://user:pass@public.example.test/hook",
		"IPv4MappedMetadata": "https://[::ffff:169.254.169.254]/",
		"SharedAddressSpace": "https://100.64.0.1/hook",
		"IPv6UniqueLocal":    "https://[fd00::1]/hook",
		"IPv6LinkLocal":      "https://[fe80::1]/hook",
		"NotAURL":            "not a url",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
			if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
				t.Errorf("register %s: code %q (%v), want %q", url, got, err, want)
			}
		})
	}
	t.Run("OK", func(t *testing.T) {
		url := "https://public.example.test/hook"
		if _, err := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url}); err != nil {
			t.Errorf("register a public https URL: %v", err)
		}
	})
}

func TestAllowPrivateAllowsLocalTargetsButNeverMetadata(t *testing.T) {
	g := delivery.Guard{AllowPrivate: true}
	for _, url := range []string{"http://127.0.0.1:9000/hook", "http://10.0.0.1/hook"} {
		if err := g.CheckURL(context.Background(), url); err != nil {
			t.Errorf("with private targets allowed, %s: %v", url, err)
		}
	}
	if err := g.CheckAddr(netip.MustParseAddr("169.254.169.254")); err == nil {
		t.Error("the metadata address must be refused even with private targets allowed")
	}
}

func TestDNSAnswerTurnedPrivateIsRefusedAtDelivery(t *testing.T) {
	res := &fakeResolver{}
	res.set("hooks.example.test", "93.184.215.14")
	g := delivery.Guard{Resolver: res}
	r := newRig(t, "0s", g)
	ep := r.endpoint(t, "acct", "https://hooks.example.test/hook") // public at registration
	res.set("hooks.example.test", "10.0.0.7")                      // then the name is rebound
	if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	ds, _, _ := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
	if len(ds) != 1 || len(ds[0].Attempts) != 1 {
		t.Fatalf("deliveries: %+v", ds)
	}
	a := ds[0].Attempts[0]
	if a.StatusCode != 0 || !strings.HasPrefix(a.Error, "refused:") || !strings.Contains(a.Error, "10.0.0.7") {
		t.Errorf("attempt to a rebound name: status %d, error %q; want refused naming 10.0.0.7", a.StatusCode, a.Error)
	}
}

func TestDialRefusesLoopbackWhenPrivateNotAllowed(t *testing.T) {
	rcv := newReceiver(t, 200)
	g := delivery.Guard{}
	_, err := g.DialContext(context.Background(), "tcp", strings.TrimPrefix(rcv.URL, "http://"))
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "loopback") {
		t.Errorf("dial %s: %v, want a loopback refusal", rcv.URL, err)
	}
	if got := len(rcv.requests()); got != 0 {
		t.Errorf("receiver got %d requests", got)
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	r := newRig(t, "0s", private)
	target := newReceiver(t, 200)
	redirect := newReceiver(t, 200)
	redirect.Config.Handler = redirectTo(target.URL)
	ep := r.endpoint(t, "acct", redirect.URL)
	if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
		t.Fatal(err)
	}
	r.local.Idle()
	if got := len(target.requests()); got != 0 {
		t.Errorf("the redirect target got %d requests, want 0", got)
	}
	ds, _, _ := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
	if ds[0].Status != delivery.StatusFailed || ds[0].Attempts[0].StatusCode != 307 {
		t.Errorf("a 307 is a failed attempt: %+v", ds[0])
	}
}

// TestIPv6FormsOfAnIPv4AddressAreCheckedAsIt: an IPv6 address that
// carries an IPv4 one a translator reaches (NAT64's 64:ff9b::/96 and
// 64:ff9b:1::/48, 6to4's 2002::/16, the old IPv4-compatible ::/96) is
// judged as that IPv4 address: the metadata address is refused through
// each, also with private targets allowed, and so is a private one unless
// allowed. A public IPv4 inside passes.
func TestIPv6FormsOfAnIPv4AddressAreCheckedAsIt(t *testing.T) {
	for _, c := range []struct {
		addr        string
		metadata    bool // refused even with private targets allowed
		private     bool // refused without
		description string
	}{
		{"64:ff9b::a9fe:a9fe", true, true, "NAT64 of 169.254.169.254"},
		{"64:ff9b:1::a9fe:a9fe", true, true, "local-use NAT64 of 169.254.169.254"},
		{"2002:a9fe:a9fe::1", true, true, "6to4 of 169.254.169.254"},
		{"::a9fe:a9fe", true, true, "IPv4-compatible 169.254.169.254"},
		{"64:ff9b::a00:1", false, true, "NAT64 of 10.0.0.1"},
		{"64:ff9b::7f00:1", false, true, "NAT64 of 127.0.0.1"},
		{"2002:c0a8:101::1", false, true, "6to4 of 192.168.1.1"},
		{"::a00:1", false, true, "IPv4-compatible 10.0.0.1"},
		{"64:ff9b::5db8:d70e", false, false, "NAT64 of the public 93.184.215.14"},
	} {
		a := netip.MustParseAddr(c.addr)
		if err := (delivery.Guard{AllowPrivate: true}).CheckAddr(a); (err != nil) != c.metadata {
			t.Errorf("%s (%s) with private targets allowed: %v, want refused=%v", c.addr, c.description, err, c.metadata)
		}
		if err := (delivery.Guard{}).CheckAddr(a); (err != nil) != c.private {
			t.Errorf("%s (%s): %v, want refused=%v", c.addr, c.description, err, c.private)
		}
	}
}

// TestSpecialPurposeTargetsAreRefusedByAddressAndByName: the ranges IANA's
// special-purpose registries mark not globally reachable (benchmarking,
// reserved, IETF protocol assignments, documentation, discard, Teredo...)
// are refused at registration, given as an address or as a name that
// resolves to one, and a name rebound to one after registration is refused
// at delivery, on the address dialled. The registries' globally reachable
// exceptions inside those ranges are allowed.
func TestSpecialPurposeTargetsAreRefusedByAddressAndByName(t *testing.T) {
	special := map[string]string{
		"Benchmarking":          "198.18.0.1",
		"BenchmarkingTop":       "198.19.255.254",
		"Reserved":              "240.0.0.1",
		"LimitedBroadcast":      "255.255.255.255",
		"IETFProtocol":          "192.0.0.1",
		"Documentation1":        "192.0.2.1",
		"Documentation2":        "198.51.100.1",
		"Documentation3":        "203.0.113.1",
		"IPv6Documentation":     "2001:db8::1",
		"IPv6Documentation3fff": "3fff::1",
		"Discard":               "100::1",
		"Teredo":                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
		"IPv6Benchmarking":      "2001:2::1",
		"SixToFour":             "2002:5db8:d70e::1",
		"SixToFourRelay":        "192.88.99.1",
		"LocalNAT64":            "64:ff9b:1::5db8:d70e",
		"IPv6NotGlobalUnicast":  "4000::1",
		"IPv4Multicast":         "224.0.0.251",
	}
	res := &fakeResolver{}
	svc := delivery.NewService(memstore.New(), delivery.Guard{Resolver: res}, nil, nil)
	for name, addr := range special {
		t.Run(name, func(t *testing.T) {
			host := strings.ToLower(name) + ".example.test"
			res.set(host, addr)
			lit := addr
			if strings.Contains(addr, ":") {
				lit = "[" + addr + "]"
			}
			for _, url := range []string{"https://" + lit + "/hook", "https://" + host + "/hook"} {
				_, err := svc.Create(context.Background(), "acct", delivery.EndpointInput{URL: &url})
				if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
					t.Errorf("register %s (%s): code %q (%v), want %q", url, addr, got, err, want)
				}
			}
			if _, err := (delivery.Guard{Resolver: res}).DialContext(context.Background(), "tcp", host+":443"); !errors.Is(err, delivery.ErrRefused) {
				t.Errorf("dial %s (%s): %v, want refused", host, addr, err)
			}
		})
	}
	t.Run("GloballyReachableExceptions", func(t *testing.T) {
		for _, addr := range []string{"192.0.0.9", "192.0.0.10", "2001:1::1", "2001:3::1", "2001:4:112::1", "2001:20::1", "64:ff9b::5db8:d70e"} {
			res.set("exception.example.test", addr)
			url := "https://exception.example.test/hook"
			if _, err := svc.Create(context.Background(), "acct_exceptions", delivery.EndpointInput{URL: &url}); err != nil {
				t.Errorf("register a name resolving to %s: %v, want allowed", addr, err)
			}
		}
	})
	t.Run("ReboundAtDelivery", func(t *testing.T) {
		res.set("hooks.example.test", "93.184.215.14")
		r := newRig(t, "0s", delivery.Guard{Resolver: res})
		ep := r.endpoint(t, "acct", "https://hooks.example.test/hook") // public at registration
		res.set("hooks.example.test", "198.18.0.7")                    // then rebound to a benchmarking address
		if err := r.engine.Accept(context.Background(), pausedEvent("acct", "ses_a", 3)); err != nil {
			t.Fatal(err)
		}
		r.local.Idle()
		ds, _, _ := r.svc.Deliveries(context.Background(), "acct", ep.ID, 10, "")
		if len(ds) != 1 || len(ds[0].Attempts) != 1 {
			t.Fatalf("deliveries: %+v", ds)
		}
		if a := ds[0].Attempts[0]; a.StatusCode != 0 || !strings.HasPrefix(a.Error, "refused:") || !strings.Contains(a.Error, "198.18.0.7") {
			t.Errorf("attempt to a rebound name: status %d, error %q; want refused naming 198.18.0.7", a.StatusCode, a.Error)
		}
	})
}

// TestAnEndpointPortOutsideOneTo65535IsInvalid: a URL's port, when given,
// is 1 to 65535; url.Parse takes any digits, so :99999 and :0 were
// registered and every delivery failed at the dial.
func TestAnEndpointPortOutsideOneTo65535IsInvalid(t *testing.T) {
	for _, g := range []delivery.Guard{{Resolver: publicOnly{}}, {AllowPrivate: true, Resolver: publicOnly{}}} {
		for _, port := range []string{"0", "65536", "99999", "00000", "4294967297"} {
			url := "https://hooks.example.test:" + port + "/hook"
			err := g.CheckURL(context.Background(), url)
			if got, want := lifecycle.ErrorCode(err), lifecycle.CodeInvalid; got != want {
				t.Errorf("allow private %v, %s: code %q (%v), want %q", g.AllowPrivate, url, got, err, want)
			}
			if err != nil && !strings.Contains(err.Error(), "1 to 65535") {
				t.Errorf("%s: %q does not say the range", url, err)
			}
		}
		for _, url := range []string{"https://hooks.example.test:1/hook", "https://hooks.example.test:65535/hook",
			"https://hooks.example.test:8443/hook", "https://hooks.example.test/hook"} {
			if err := g.CheckURL(context.Background(), url); err != nil {
				t.Errorf("allow private %v, %s: %v, want allowed", g.AllowPrivate, url, err)
			}
		}
	}
}

// publicOnly resolves every name to one public address.
type publicOnly struct{}

func (publicOnly) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}
