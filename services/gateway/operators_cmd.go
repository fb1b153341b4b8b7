package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boxoffice/boxoffice/pkg/ledger"
	"github.com/boxoffice/boxoffice/pkg/operators"
	"github.com/boxoffice/boxoffice/pkg/service"
)

// operatorsCommand is `gateway operators …`, the operator accounts from
// the server's shell, for the first admin and for recovery when no admin
// can sign in (docs/operators.md). It reads DATABASE_URL and the Redis
// settings like the gateway, and records what it does in the audit trail
// as cli:<user> (the gateway's sweep publishes the facts).
//
//	gateway operators add -name NAME [-role admin] [-password-stdin] [-reset]
//	gateway operators set-password -name NAME [-password-stdin]
//	gateway operators list
//
// Without -password-stdin a random password is made and printed once.
// It returns the process's exit code.
func operatorsCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func() int {
		fmt.Fprintln(stderr, `usage:
  gateway operators add -name NAME [-role viewer|operator|admin] [-password-stdin] [-reset]
  gateway operators set-password -name NAME [-password-stdin]
  gateway operators list
DATABASE_URL and REDIS_* as for the gateway. Without -password-stdin a password is made and printed once.`)
		return 2
	}
	if len(args) == 0 {
		return usage()
	}
	fs := flag.NewFlagSet("operators "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "account name")
	role := fs.String("role", "admin", "role of a new account: viewer, operator or admin")
	fromStdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input")
	reset := fs.Bool("reset", false, "add: when the account exists, set its role and password and enable it")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "operators:", err)
		return 1
	}
	var cfg struct {
		service.Common
		DatabaseURL string `env:"DATABASE_URL" default:"postgres://boxoffice:boxoffice@127.0.0.1:5432/boxoffice?sslmode=disable" secret:"true"`
	}
	cfg.AdminAddr = defaultAdminAddr // not listened on: the command serves nothing
	if err := service.Load(&cfg); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := ledger.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fail(err)
	}
	defer l.Close()
	rdb, err := service.NewRedis(cfg.Common)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	store := operators.New(l.Pool(), rdb, cfg.RedisPrefix)
	actor := "cli:" + osUser()
	record := func(action, target string, after map[string]any) error {
		_, err := store.Record(ctx, operators.Action{Actor: actor, Via: operators.ViaCLI, Role: operators.Admin,
			Action: action, Target: target, After: operators.Object(after)})
		return err
	}
	password := func() (string, bool, error) {
		if !*fromStdin {
			return rand.Text(), true, nil
		}
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", false, err
		}
		return strings.TrimRight(line, "\r\n"), false, nil
	}

	switch args[0] {
	case "list":
		as, err := store.Accounts(ctx)
		if err != nil {
			return fail(err)
		}
		w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE\tSTATE\tCREATED")
		for _, a := range as {
			state := "enabled"
			if a.Disabled {
				state = "disabled"
			} else if a.LockedUntil != nil {
				state = "locked until " + a.LockedUntil.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", a.Name, a.Role, state, a.CreatedAt.UTC().Format(time.RFC3339))
		}
		_ = w.Flush()
		return 0
	case "add", "set-password":
	default:
		return usage()
	}
	if *name == "" {
		fmt.Fprintln(stderr, "operators: -name is required")
		return 2
	}
	pw, made, err := password()
	if err != nil {
		return fail(err)
	}
	if args[0] == "set-password" {
		a, err := store.SetPassword(ctx, *name, pw, actor, "")
		if err != nil {
			return fail(err)
		}
		if err := record(operators.ActionAccountPassword, a.Name, map[string]any{"password_changed_at": a.PasswordChangedAt}); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "operators: new password of %s set; its sessions are ended\n", a.Name)
	} else {
		r, err := operators.ParseRole(*role)
		if err != nil {
			return fail(err)
		}
		a, err := store.CreateAccount(ctx, *name, r, pw, actor)
		switch {
		case errors.Is(err, operators.ErrExists) && *reset:
			no := false
			if _, a, err = store.UpdateAccount(ctx, *name, operators.AccountChange{Role: &r, Disabled: &no}, actor); err != nil {
				return fail(err)
			}
			if a, err = store.SetPassword(ctx, *name, pw, actor, ""); err != nil {
				return fail(err)
			}
			err = record(operators.ActionAccountPassword, a.Name, map[string]any{"role": a.Role, "disabled": false,
				"password_changed_at": a.PasswordChangedAt})
			fmt.Fprintf(stdout, "operators: %s (%s) reset\n", a.Name, a.Role)
		case err != nil:
			return fail(err)
		default:
			err = record(operators.ActionAccountCreate, a.Name, map[string]any{"role": a.Role, "disabled": false})
			fmt.Fprintf(stdout, "operators: %s (%s) added\n", a.Name, a.Role)
		}
		if err != nil {
			return fail(err)
		}
	}
	if made {
		fmt.Fprintf(stdout, "password: %s\n(shown once: keep it, or sign in at /admin/sign-in.html and change it with POST /api/admin/me/password)\n", pw)
	}
	return 0
}

// osUser names who runs the command, for the audit trail.
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "unknown"
}
