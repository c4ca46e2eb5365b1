package delivery_test

import (
	"context"
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
	if err == nil || !strings.Contains(err.Error(), "loopback") {
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
