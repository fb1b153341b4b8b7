package operators

import (
	"fmt"
	"strings"
)

// Role is what an operator may do. Each role may do what the ones below
// it may: a viewer reads (the report, events, orders, the audit trail),
// an operator also acts on sales (creates and changes events, pauses,
// restores, refunds), an admin also manages accounts, sessions and
// tokens.
type Role string

// The roles, lowest first.
const (
	Viewer   Role = "viewer"
	Operator Role = "operator"
	Admin    Role = "admin"
)

// Roles lists every role, lowest first.
var Roles = []Role{Viewer, Operator, Admin}

// ParseRole reads a role name (case-insensitive).
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if r.rank() == 0 {
		return "", fmt.Errorf("%w: role must be viewer, operator or admin", ErrInvalid)
	}
	return r, nil
}

func (r Role) rank() int {
	switch r {
	case Viewer:
		return 1
	case Operator:
		return 2
	case Admin:
		return 3
	}
	return 0
}

// Allows reports whether r may do what needs role min.
func (r Role) Allows(min Role) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// How an operator was signed in when they acted (Principal.Via, the
// audit record's via).
const (
	ViaSession = "session" // a browser session (cookie)
	ViaToken   = "token"   // an API token of the account
	ViaJWT     = "jwt"     // a bearer JWT with the admin role (development and bootstrap)
	ViaCLI     = "cli"     // the gateway's operators command, on the server
	// ViaSystem: no operator; the system acted on its own (the gateway's
	// payment provider breaker declaring an outage: actor "breaker")
	ViaSystem = "system"
)

// Principal is who makes a request: an account (or, for a bearer JWT,
// "jwt:" and its subject), its role now, and how it was signed in.
type Principal struct {
	Account   string `json:"account"`
	Role      Role   `json:"role"`
	Via       string `json:"via"`
	SessionID string `json:"session_id,omitempty"`
	TokenID   string `json:"token_id,omitempty"`
}
