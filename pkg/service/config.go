package service

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Common is the configuration every service shares. Embed it in a service's
// Config struct. AdminAddr has no default of its own: a service sets its
// default before Load (see [DefaultAdminAddr] and [Load]).
type Common struct {
	// RedisAddr is one address, or several (comma separated) seed nodes of
	// a Redis Cluster.
	RedisAddr     []string `env:"REDIS_ADDR" default:"127.0.0.1:6379"`
	RedisCluster  bool     `env:"REDIS_CLUSTER" default:"false"`
	RedisPassword string   `env:"REDIS_PASSWORD" secret:"true"`
	// RedisPrefix starts every Redis key the services write.
	RedisPrefix string `env:"REDIS_PREFIX" default:"bo"`
	// AMQPURL is one URL, or several (comma separated, one per node of a
	// RabbitMQ cluster): amqpx connects to the first that answers and
	// moves on to the next on a lost connection.
	AMQPURL string `env:"AMQP_URL" default:"amqp://guest:guest@127.0.0.1:5672/" secret:"true"`
	// AMQPQueueType and AMQPDeliveryLimit fix the queue arguments; every
	// service of a deployment must agree (see amqpx.Topology).
	AMQPQueueType     string `env:"AMQP_QUEUE_TYPE" default:"quorum" oneof:"quorum,classic"`
	AMQPDeliveryLimit int    `env:"AMQP_DELIVERY_LIMIT" default:"20"`
	// AMQPDelayedPlugin uses the x-delayed-message exchange for timeouts;
	// every service of a deployment must agree (it sets timeout-exchange's
	// type).
	AMQPDelayedPlugin bool     `env:"AMQP_DELAYED_PLUGIN" default:"false"`
	KafkaBrokers      []string `env:"KAFKA_BROKERS" default:"127.0.0.1:9092"`
	// Kafka beyond the broker list (see events.ClientConfig): TLS with an
	// optional CA and client certificate (PEM file paths), SASL, the
	// producer's compression, and a prefix for every topic name.
	KafkaTLS           bool          `env:"KAFKA_TLS" default:"false"`
	KafkaTLSCA         string        `env:"KAFKA_TLS_CA"`
	KafkaTLSCert       string        `env:"KAFKA_TLS_CERT"`
	KafkaTLSKey        string        `env:"KAFKA_TLS_KEY"`
	KafkaSASLMechanism string        `env:"KAFKA_SASL_MECHANISM" default:"none" oneof:"none,PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"`
	KafkaSASLUser      string        `env:"KAFKA_SASL_USER" secret:"true"`
	KafkaSASLPassword  string        `env:"KAFKA_SASL_PASSWORD" secret:"true"`
	KafkaCompression   string        `env:"KAFKA_COMPRESSION" default:"zstd" oneof:"none,gzip,snappy,lz4,zstd"`
	KafkaTopicPrefix   string        `env:"KAFKA_TOPIC_PREFIX"`
	AdminAddr          string        `env:"ADMIN_ADDR" required:"true"`
	LogLevel           string        `env:"LOG_LEVEL" default:"info" oneof:"debug,info,warn,error"`
	LogFormat          string        `env:"LOG_FORMAT" default:"json" oneof:"json,console"`
	ShutdownTimeout    time.Duration `env:"SHUTDOWN_TIMEOUT" default:"15s"`

	// AdminPprof serves /debug/pprof on the admin listener (profiles,
	// traces and goroutine dumps of the live process); off by default.
	AdminPprof bool `env:"ADMIN_PPROF" default:"false"`

	// DeploymentID names the deployment in every Kafka event's source
	// ("/boxoffice/<id>", events.SourceFor); empty: RedisPrefix. Set it
	// (prod, staging, ...) wherever two deployments share a data lake.
	DeploymentID string `env:"DEPLOYMENT_ID"`

	// PassKeys are the admission pass's Ed25519 keys, "kid:base64url
	// seed", current first, then previous ones still published (pkg/pass);
	// none: no passes. Every service that admits users needs the same.
	PassKeys   []string `env:"PASS_KEYS" secret:"true"`
	PassIssuer string   `env:"PASS_ISSUER" default:"boxoffice"`
}

// Deployment is DeploymentID, or RedisPrefix when it is not set: the
// namespace event ids and join sequences are unique within.
func (c Common) Deployment() string {
	if c.DeploymentID != "" {
		return c.DeploymentID
	}
	return c.RedisPrefix
}

var adminPorts = map[string]string{
	"gateway":                "127.0.0.1:9101",
	"payment-webhook":        "127.0.0.1:9102",
	"notifier":               "127.0.0.1:9103",
	"payment-sandbox":        "127.0.0.1:9104",
	"slot-released-consumer": "127.0.0.1:9105",
	"timeout-consumer":       "127.0.0.1:9106",
	"popularity":             "127.0.0.1:9107",
	"kafka-dev":              "127.0.0.1:9108",
}

// DefaultAdminAddr is the admin listener of the named service when
// ADMIN_ADDR is not set; scripts/run-stack.sh waits on these ports. It is ""
// for an unknown name. The defaults bind loopback only: /metrics names
// every event and the listener has no authentication, so exposing it (to
// a Prometheus on another host, or a container's published port) is an
// explicit ADMIN_ADDR, as docker-compose.yml sets it.
func DefaultAdminAddr(service string) string { return adminPorts[service] }

// Load fills the struct cfg points to from environment variables. See
// [LoadFrom] for the tags it reads.
func Load(cfg any) error { return LoadFrom(cfg, os.LookupEnv) }

// LoadFrom fills the struct cfg points to using lookup (os.LookupEnv in
// [Load]). Each field tagged `env:"NAME"` takes the value of NAME; when NAME
// is unset or empty, a field that already holds a non-zero value keeps it
// (this is how a service gives a field of [Common] its own default),
// otherwise the `default:"..."` tag applies. `required:"true"` makes a field
// with neither a value nor a default an error, `oneof:"a,b"` restricts a
// string, and `secret:"true"` masks the value in [Fields]. Embedded and
// nested structs without an env tag are walked.
//
// Supported types: string, bool, int, int8-64, uint, uint8-64, float32/64,
// time.Duration and []string (comma separated, spaces trimmed, empty items
// dropped). Every bad value is reported, each error naming its variable.
func LoadFrom(cfg any, lookup func(string) (string, bool)) error {
	v := reflect.ValueOf(cfg)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("service: Load needs a pointer to a struct, got %T", cfg)
	}
	var errs []error
	walk(v.Elem(), func(f reflect.StructField, fv reflect.Value) {
		if err := loadField(f, fv, lookup); err != nil {
			errs = append(errs, err)
		}
	})
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

// walk calls fn for every settable field tagged env, descending into struct
// fields that carry no env tag.
func walk(v reflect.Value, fn func(reflect.StructField, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if _, ok := f.Tag.Lookup("env"); !ok {
			if f.Type.Kind() == reflect.Struct {
				walk(fv, fn)
			}
			continue
		}
		fn(f, fv)
	}
}

func loadField(f reflect.StructField, fv reflect.Value, lookup func(string) (string, bool)) error {
	name := f.Tag.Get("env")
	raw, _ := lookup(name)
	if raw == "" {
		if !fv.IsZero() {
			return nil
		}
		def, ok := f.Tag.Lookup("default")
		if !ok {
			if f.Tag.Get("required") == "true" {
				return fmt.Errorf("%s: required and not set", name)
			}
			return nil
		}
		raw = def
	}
	if err := setValue(fv, raw); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if oneof, ok := f.Tag.Lookup("oneof"); ok && fv.Kind() == reflect.String {
		allowed := strings.Split(oneof, ",")
		if !slices.Contains(allowed, fv.String()) {
			return fmt.Errorf("%s: %q is not one of %s", name, fv.String(), strings.Join(allowed, ", "))
		}
	}
	return nil
}

func setValue(fv reflect.Value, raw string) error {
	if fv.Type() == durationType {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("invalid duration %q (use e.g. 300ms, 10s, 5m)", raw)
		}
		fv.SetInt(int64(d))
		return nil
	}
	switch fv.Kind() {
	case reflect.String:
		fv.SetString(raw)
	case reflect.Bool:
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return fmt.Errorf("invalid bool %q (use true or false)", raw)
		}
		fv.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(raw, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("invalid integer %q", raw)
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(raw, 10, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("invalid unsigned integer %q", raw)
		}
		fv.SetUint(n)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(raw, fv.Type().Bits())
		if err != nil {
			return fmt.Errorf("invalid number %q", raw)
		}
		fv.SetFloat(x)
	case reflect.Slice:
		if fv.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported type %s", fv.Type())
		}
		var items []string
		for s := range strings.SplitSeq(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
		out := reflect.MakeSlice(fv.Type(), len(items), len(items))
		for i, s := range items {
			out.Index(i).SetString(s)
		}
		fv.Set(out)
	default:
		return fmt.Errorf("unsupported type %s", fv.Type())
	}
	return nil
}

// Fields returns one zap field per env-tagged field of cfg (a struct or a
// pointer to one), keyed by the lower-cased variable name, for logging the
// configuration at start. Secret values are masked with [Mask].
func Fields(cfg any) []zap.Field {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var fields []zap.Field
	walk(v, func(f reflect.StructField, fv reflect.Value) {
		key := strings.ToLower(f.Tag.Get("env"))
		if f.Tag.Get("secret") == "true" {
			fields = append(fields, zap.String(key, Mask(fmt.Sprint(fv.Interface()))))
			return
		}
		switch {
		case fv.Type() == durationType:
			fields = append(fields, zap.Duration(key, time.Duration(fv.Int())))
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
			ss := make([]string, fv.Len())
			for i := range ss {
				ss[i] = fv.Index(i).String()
			}
			fields = append(fields, zap.Strings(key, ss))
		default:
			fields = append(fields, zap.Any(key, fv.Interface()))
		}
	})
	return fields
}

// Mask hides a secret for logging: a URL with a password keeps everything
// but the password ("amqp://guest:***@host:5672/"), a URL with only a user
// name hides that name (it is often a token), a URL without credentials is
// shown as is, an empty value stays empty, and anything else becomes "***".
func Mask(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		if u.User == nil {
			return s
		}
		// url.URL.String would escape "***"; mask a placeholder instead.
		const placeholder = "BOXOFFICEMASKED"
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), placeholder)
			return strings.Replace(u.String(), ":"+placeholder+"@", ":***@", 1)
		}
		u.User = url.User(placeholder)
		return strings.Replace(u.String(), "//"+placeholder+"@", "//***@", 1)
	}
	return "***"
}
