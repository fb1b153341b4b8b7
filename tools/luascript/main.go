// Command luascript prints what Redis runs for the booking operations —
// the function library (lua/lib/'s files, then each operation's script as a
// function), the name FCALL calls for one operation — or the keys an
// operation's function takes for an event (its number of keys first, as
// FCALL wants them), so shell tools (redis-cli FUNCTION LOAD,
// redis-benchmark FCALL) run exactly what the Go services run.
//
//	luascript -library                 # the library text
//	luascript enqueue                  # the operation's function name
//	luascript -keys bo evt1 enqueue    # "12 bo:{evt1}:config ...": FCALL's numkeys and keys
//	luascript -keys bo evt1            # all 22 keys of the event
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/boxoffice/boxoffice/lua"
	"github.com/boxoffice/boxoffice/pkg/booking"
)

func main() {
	keys := flag.Bool("keys", false, "print the keys operation ARG3 takes for event ARG2 under prefix ARG1 (their number first), or all the event's")
	library := flag.Bool("library", false, "print the function library")
	flag.Parse()
	switch {
	case *keys && flag.NArg() == 2:
		fmt.Println(strings.Join(booking.EventKeys(flag.Arg(0), flag.Arg(1)), " "))
	case *keys && flag.NArg() == 3:
		all := booking.EventKeys(flag.Arg(0), flag.Arg(1))
		idx, ok := lua.FunctionKeys(flag.Arg(2))
		if !ok {
			fmt.Fprintf(os.Stderr, "luascript: %s takes no event keys\n", flag.Arg(2))
			os.Exit(2)
		}
		out := []string{strconv.Itoa(len(idx))}
		for _, i := range idx {
			out = append(out, all[i])
		}
		fmt.Println(strings.Join(out, " "))
	case *library && flag.NArg() == 0:
		fmt.Print(lua.Library())
	case !*keys && !*library && flag.NArg() == 1:
		fmt.Println(lua.Function(flag.Arg(0)))
	default:
		fmt.Fprintln(os.Stderr, "usage: luascript -library | luascript NAME | luascript -keys PREFIX EVENT [OPERATION]")
		os.Exit(2)
	}
}
