// Command mint-token prints JWTs signed with pkg/auth, one a line, for the
// benchmark and load scripts (they run the gateway with a JWT_SECRET of
// their own):
//
//	JWT_SECRET=... go run ./tools/mint-token -prefix user -n 1000 >users.tok
//	JWT_SECRET=... go run ./tools/mint-token -prefix admin -n 1 -role admin
//
// The users are <prefix>0 … <prefix>N-1 (with -n 1 and -user, exactly
// -user). The secret comes from JWT_SECRET, never from a flag (flags show
// in ps).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/pkg/auth"
)

func main() {
	prefix := flag.String("prefix", "user", "user ids are PREFIX0 … PREFIX(N-1)")
	user := flag.String("user", "", "one token for exactly this user id (instead of -prefix/-n)")
	n := flag.Int("n", 1, "how many tokens")
	role := flag.String("role", "", `role claim: "" (a user) or "admin"`)
	ttl := flag.Duration("ttl", 2*time.Hour, "validity of each token")
	flag.Parse()
	if err := run(os.Stdout, os.Getenv("JWT_SECRET"), *prefix, *user, *n, *role, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "mint-token:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, secret, prefix, user string, n int, role string, ttl time.Duration) error {
	if secret == "" {
		return errors.New("JWT_SECRET is not set")
	}
	a, err := auth.New([]byte(secret))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	for i := range n {
		id := prefix + strconv.Itoa(i)
		if user != "" {
			id = user
		}
		tok, err := a.Issue(id, role, ttl)
		if err != nil {
			return err
		}
		w.WriteString(tok)
		w.WriteByte('\n')
	}
	return w.Flush()
}
