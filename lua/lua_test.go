package lua

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestScriptIncludesWhatItCalls: each script carries the lib.lua functions
// it calls, directly or through another lib function, and no other (Redis
// runs the whole text per call, so an unused function costs a closure per
// call).
func TestScriptIncludesWhatItCalls(t *testing.T) {
	has := func(script, fn string) bool { return strings.Contains(script, "\nlocal function "+fn+"(") }
	enqueue := Script("enqueue")
	for _, fn := range []string{"num", "room_capacity", "holds_counted", "grace_deadline", "admit_all", "bulk", "cap_left"} {
		if !has(enqueue, fn) {
			t.Errorf("enqueue lacks %s", fn)
		}
	}
	for _, fn := range []string{"seat_price", "release_hold", "payment_record", "user_state"} {
		if has(enqueue, fn) {
			t.Errorf("enqueue carries %s, which it never calls", fn)
		}
	}
	// every function a script's text calls is defined above the call
	call := regexp.MustCompile(`\b([a-z_]+)\(`)
	files, _ := fs.Glob(files, "*.lua")
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		if name == "lib" {
			continue
		}
		s := Script(name)
		for _, m := range call.FindAllStringSubmatch(Source("lib"), -1) {
			fn := m[1]
			if has(Source("lib"), fn) && regexp.MustCompile(`\b`+fn+`\(`).MatchString(Source(name)) && !has(s, fn) {
				t.Errorf("%s calls %s but does not carry it", name, fn)
			}
		}
	}
}
