// Package configtest checks a service's Config the way its main loads it
// (service.LoadFrom, which also runs the Config's Validate), from a map
// instead of the process environment.
package configtest

import (
	"maps"
	"strings"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// Load fills a new Config (newCfg presets what main presets, such as the
// admin address) from env and fails the test on any error.
func Load[C any](t testing.TB, newCfg func() *C, env map[string]string) *C {
	t.Helper()
	cfg := newCfg()
	if err := service.LoadFrom(cfg, env); err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

// Case is one bad configuration: Env on top of a valid minimum, and the
// substrings the error must contain (the variable's name, at least).
type Case struct {
	Name  string
	Env   map[string]string
	Wants []string
}

// Rejects checks that each case is refused with an error containing each of
// its Wants.
func Rejects[C any](t *testing.T, newCfg func() *C, minimal map[string]string, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			env := maps.Clone(minimal)
			if env == nil {
				env = map[string]string{}
			}
			maps.Copy(env, tc.Env)
			err := service.LoadFrom(newCfg(), env)
			if err == nil {
				t.Fatalf("%v accepted", tc.Env)
			}
			for _, w := range tc.Wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
