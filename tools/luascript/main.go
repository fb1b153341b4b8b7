// Command luascript prints what Redis runs for a booking operation — the
// shared lib.lua followed by the operation's script — or the 17 keys of an
// event, so shell tools (redis-cli SCRIPT LOAD, redis-benchmark EVALSHA)
// run exactly the scripts the Go services run.
//
//	luascript enqueue            # the script text
//	luascript -keys bo evt1      # the event's keys, space separated
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
)

func main() {
	keys := flag.Bool("keys", false, "print the keys of event ARG2 under prefix ARG1")
	flag.Parse()
	switch {
	case *keys && flag.NArg() == 2:
		fmt.Println(strings.Join(booking.EventKeys(flag.Arg(0), flag.Arg(1)), " "))
	case !*keys && flag.NArg() == 1:
		fmt.Print(lua.Script(flag.Arg(0)))
	default:
		fmt.Fprintln(os.Stderr, "usage: luascript NAME | luascript -keys PREFIX EVENT")
		os.Exit(2)
	}
}
