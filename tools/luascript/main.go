// Command luascript prints what Redis runs for the booking operations —
// the function library (lib.lua, then each operation's script as a
// function), the name FCALL calls for one operation — or the 17 keys of an
// event, so shell tools (redis-cli FUNCTION LOAD, redis-benchmark FCALL)
// run exactly the functions the Go services run.
//
//	luascript -library           # the library text
//	luascript enqueue            # the operation's function name
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
	library := flag.Bool("library", false, "print the function library")
	flag.Parse()
	switch {
	case *keys && flag.NArg() == 2:
		fmt.Println(strings.Join(booking.EventKeys(flag.Arg(0), flag.Arg(1)), " "))
	case *library && flag.NArg() == 0:
		fmt.Print(lua.Library())
	case !*keys && !*library && flag.NArg() == 1:
		fmt.Println(lua.Function(flag.Arg(0)))
	default:
		fmt.Fprintln(os.Stderr, "usage: luascript -library | luascript NAME | luascript -keys PREFIX EVENT")
		os.Exit(2)
	}
}
