package main

import (
	"net"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/stacktest"
)

// devProcs are the stack's services on their development ports, as run
// has them.
func devProcs() map[string]*stacktest.Service {
	procs := map[string]*stacktest.Service{}
	for _, s := range stacktest.Specs {
		procs[s.Name] = &stacktest.Service{Name: s.Name, AdminAddr: s.AdminAddr(), Addr: s.Addr()}
	}
	return procs
}

// env is a getenv of the development defaults plus vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		for _, kv := range devEnv {
			if kv[0] == k {
				return kv[1]
			}
		}
		return ""
	}
}

// make run's public listeners (gateway, payment-webhook, notifier,
// payment-sandbox) and admin listeners bind loopback, and it says nothing
// about exposure; STACK_LISTEN_HOST opens the public ones (only them), and
// then the stack warns that development tokens and the public development
// secret are reachable.
func TestListenersOnLoopbackUnlessOpened(t *testing.T) {
	procs := devProcs()
	for _, tc := range []struct {
		name     string
		vars     map[string]string
		wantHost string
		warn     []string
	}{
		{"default", nil, "127.0.0.1", nil},
		{"opened", map[string]string{listenHostVar: "0.0.0.0"}, "0.0.0.0",
			[]string{listenHostVar, "DEV_TOKENS=true", "mint an admin token", "JWT_SECRET is the public development secret"}},
		{"opened, own secret, no dev tokens", map[string]string{listenHostVar: "::", "DEV_TOKENS": "false", "JWT_SECRET": "s3cret-s3cret-s3cret"}, "::",
			[]string{listenHostVar}},
		{"another loopback address", map[string]string{listenHostVar: "127.0.0.2"}, "127.0.0.2", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := listenHost(env(tc.vars))
			if host != tc.wantHost {
				t.Fatalf("listen host %q, want %q", host, tc.wantHost)
			}
			public := 0
			for _, s := range stacktest.Specs {
				e := serviceEnv(s.Name, procs, host)
				if ah, _, _ := net.SplitHostPort(e["ADMIN_ADDR"]); ah != "127.0.0.1" {
					t.Errorf("%s: ADMIN_ADDR %q, want loopback", s.Name, e["ADMIN_ADDR"])
				}
				if s.HTTPPort == 0 {
					if a, ok := e["HTTP_ADDR"]; ok {
						t.Errorf("%s (no public listener): HTTP_ADDR %q", s.Name, a)
					}
					continue
				}
				public++
				h, _, err := net.SplitHostPort(e["HTTP_ADDR"])
				if err != nil || h != tc.wantHost {
					t.Errorf("%s: HTTP_ADDR %q, want host %s", s.Name, e["HTTP_ADDR"], tc.wantHost)
				}
			}
			if public != 4 {
				t.Errorf("%d public listeners, want 4", public)
			}
			w := exposureWarning(host, env(tc.vars))
			if len(tc.warn) == 0 && w != "" {
				t.Errorf("warning %q on loopback", w)
			}
			for _, s := range tc.warn {
				if !strings.Contains(w, s) {
					t.Errorf("warning %q does not say %q", w, s)
				}
			}
			if strings.Contains(w, "DEV_TOKENS") && tc.vars["DEV_TOKENS"] == "false" {
				t.Errorf("warning %q names dev tokens that are off", w)
			}
		})
	}
}

// make run leaves the gateway's abuse limits at their defaults (on): it
// sets no RATE_* variable.
func TestAbuseLimitsKeepTheirDefaults(t *testing.T) {
	for _, kv := range devEnv {
		if strings.HasPrefix(kv[0], "RATE_") {
			t.Errorf("devEnv sets %s=%s", kv[0], kv[1])
		}
	}
	for k, v := range serviceEnv(stacktest.Gateway, devProcs(), "127.0.0.1") {
		if strings.HasPrefix(k, "RATE_") {
			t.Errorf("the gateway's environment sets %s=%s", k, v)
		}
	}
}
