// Package operators is who may operate a boxoffice deployment and what
// they did: operator accounts with roles (viewer, operator, admin) and
// argon2id password hashes, sign-in with a lockout per account and a limit
// per client address (in Redis, shared by every gateway), browser sessions
// (github.com/alexedwards/scs/v2 on PostgreSQL through its pgx store, with
// a row per session that an operator or admin can list and revoke), API
// tokens for automation (opaque, stored as SHA-256, revocable), and the
// audit trail: every operator action with who, when, from where and the
// values before and after, append-only in PostgreSQL (a trigger refuses
// UPDATE, DELETE and TRUNCATE) and published on Kafka as operator_action
// through an outbox written in the same transaction (Publisher), so a
// publish is never lost and a retry republishes the same fact.
//
// The tables are part of the ledger's migrations
// (pkg/ledger/migrations/00020_operators.sql); the gateway serves the HTTP
// side (services/gateway, operator_*.go) and docs/operators.md tells an
// operator how to use it.
package operators
