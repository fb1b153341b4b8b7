package ids

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for id, want := range map[string]bool{"evt-1": true, "user@example.com": true, "": false, "a b": false,
		"a{b": false, "a|b": false, "é": false, string(make([]byte, 129)): false} {
		if Valid(id) != want {
			t.Errorf("Valid(%q) != %v", id, want)
		}
	}
}

func TestValidEvent(t *testing.T) {
	for id, want := range map[string]bool{"evt-1": true, "Tour_2026.x": true, "": false, "a/b": false,
		"a b": false, "user@example.com": false, strings.Repeat("a", MaxEventLen): true,
		strings.Repeat("a", MaxEventLen+1): false} {
		if ValidEvent(id) != want {
			t.Errorf("ValidEvent(%q) != %v", id, want)
		}
		if want && !Valid(id) {
			t.Errorf("ValidEvent(%q) but not Valid", id)
		}
	}
}
