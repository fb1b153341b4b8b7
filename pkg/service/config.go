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

	"github.com/caarlos0/env/v11"
	"go.uber.org/zap"
)

// Common is the configuration every service shares. Embed it in a service's
// Config struct. AdminAddr has no default of its own: each service's main
// presets its own admin port in the struct before [Load], on loopback only
// (/metrics names every event and the listener has no authentication, so
// exposing it is an explicit ADMIN_ADDR, as docker-compose.yml sets it).
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
	AMQPQueueType     string `env:"AMQP_QUEUE_TYPE" default:"quorum"`
	AMQPDeliveryLimit int    `env:"AMQP_DELIVERY_LIMIT" default:"20"`
	// AMQPDelayedPlugin uses the x-delayed-message exchange for timeouts;
	// every service of a deployment must agree (it sets timeout-exchange's
	// type).
	AMQPDelayedPlugin bool `env:"AMQP_DELAYED_PLUGIN" default:"false"`
	// AMQPDelayProbeInterval is how often a publisher sends a probe
	// through each TTL wait queue it uses (amqpx.WithDelayProbes; 0: no
	// probes): the DelayedMessagesOverdue alert's input.
	AMQPDelayProbeInterval time.Duration `env:"AMQP_DELAY_PROBE_INTERVAL" default:"30s"`
	KafkaBrokers           []string      `env:"KAFKA_BROKERS" default:"127.0.0.1:9092"`
	// Kafka beyond the broker list (see events.ClientConfig): TLS with an
	// optional CA and client certificate (PEM file paths), SASL, the
	// producer's compression (lz4: less CPU per batch than zstd, for a lower
	// ratio; BenchmarkCompression in pkg/events), and
	// a prefix for every topic name.
	KafkaTLS           bool          `env:"KAFKA_TLS" default:"false"`
	KafkaTLSCA         string        `env:"KAFKA_TLS_CA"`
	KafkaTLSCert       string        `env:"KAFKA_TLS_CERT"`
	KafkaTLSKey        string        `env:"KAFKA_TLS_KEY"`
	KafkaSASLMechanism string        `env:"KAFKA_SASL_MECHANISM" default:"none"`
	KafkaSASLUser      string        `env:"KAFKA_SASL_USER" secret:"true"`
	KafkaSASLPassword  string        `env:"KAFKA_SASL_PASSWORD" secret:"true"`
	KafkaCompression   string        `env:"KAFKA_COMPRESSION" default:"lz4"`
	KafkaTopicPrefix   string        `env:"KAFKA_TOPIC_PREFIX"`
	AdminAddr          string        `env:"ADMIN_ADDR" required:"true"`
	LogLevel           string        `env:"LOG_LEVEL" default:"info"`
	LogFormat          string        `env:"LOG_FORMAT" default:"json"`
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

	// WaitlistWebhookURL: every waitlist offer is also POSTed there
	// (pkg/platform's offer webhook); empty: none.
	WaitlistWebhookURL string `env:"WAITLIST_WEBHOOK_URL"`
}

// Deployment is DeploymentID, or RedisPrefix when it is not set: the
// namespace event ids and join sequences are unique within.
func (c Common) Deployment() string {
	if c.DeploymentID != "" {
		return c.DeploymentID
	}
	return c.RedisPrefix
}

// Validate checks the values Load cannot: each setting that takes one of a
// few words, and that there is somewhere to connect to. A service's Config
// calls it from its own Validate.
func (c Common) Validate() error {
	errs := []error{
		oneOf("AMQP_QUEUE_TYPE", c.AMQPQueueType, "quorum", "classic"),
		oneOf("KAFKA_SASL_MECHANISM", c.KafkaSASLMechanism, "none", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
		oneOf("KAFKA_COMPRESSION", c.KafkaCompression, "none", "gzip", "snappy", "lz4", "zstd"),
		oneOf("LOG_LEVEL", c.LogLevel, "debug", "info", "warn", "error"),
		oneOf("LOG_FORMAT", c.LogFormat, "json", "console"),
	}
	if c.AMQPDelayProbeInterval < 0 {
		errs = append(errs, errors.New("AMQP_DELAY_PROBE_INTERVAL: must be >= 0 (0: no probes)"))
	}
	if len(c.RedisAddr) == 0 {
		errs = append(errs, errors.New("REDIS_ADDR: no address"))
	}
	if len(c.KafkaBrokers) == 0 {
		errs = append(errs, errors.New("KAFKA_BROKERS: no address"))
	}
	return errors.Join(errs...)
}

// oneOf is nil when value is one of allowed, else an error naming the
// variable and the values it takes.
func oneOf(name, value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	return fmt.Errorf("%s: %q is not one of %s", name, value, strings.Join(allowed, ", "))
}

// LoadConfig is how a service's run starts: [Load] (an error says
// "config: ..."), then the configuration logged at info level with its
// secrets masked ([Fields]).
func LoadConfig(cfg any, log *zap.Logger) error {
	if err := Load(cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log.Info("config", Fields(cfg)...)
	return nil
}

// Load fills the struct cfg points to from the process environment and
// validates it (see [LoadFrom]).
func Load(cfg any) error { return LoadFrom(cfg, env.ToMap(os.Environ())) }

// LoadFrom fills the struct cfg points to from environ (variable → value)
// with github.com/caarlos0/env, then checks it. The struct tags:
//
//   - env:"NAME" names the variable. An empty value counts as unset.
//   - default:"..." is the value when NAME is unset. A field without a
//     default keeps what the struct already holds: this is how a service
//     gives ADMIN_ADDR its own default.
//   - required:"true": still empty after loading is an error.
//   - secret:"true": [Fields] masks the value.
//
// Embedded and nested structs are walked. A []string is comma separated,
// spaces trimmed, empty items dropped; a time.Duration is Go's syntax
// (300ms, 10s, 5m). Every bad value is reported, each error naming its
// variable. Then, when cfg has a Validate() error method (every service's
// Config has one), its error is returned.
func LoadFrom(cfg any, environ map[string]string) error {
	err := env.ParseWithOptions(cfg, env.Options{
		Environment:         environ,
		DefaultValueTagName: "default",
		FuncMap: map[reflect.Type]env.ParserFunc{
			reflect.TypeFor[time.Duration](): parseDuration,
			reflect.TypeFor[[]string]():      func(s string) (any, error) { return splitList(s), nil },
		},
	})
	if err != nil {
		return nameVariables(cfg, err)
	}
	var missing []error
	walk(reflect.ValueOf(cfg).Elem(), func(f reflect.StructField, fv reflect.Value) {
		if f.Tag.Get("required") == "true" && fv.IsZero() {
			missing = append(missing, fmt.Errorf("%s: required and not set", f.Tag.Get("env")))
		}
	})
	if len(missing) > 0 {
		return errors.Join(missing...)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

func parseDuration(s string) (any, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("invalid duration %q (use e.g. 300ms, 10s, 5m)", s)
	}
	return d, nil
}

// splitList splits a comma-separated setting, trimming spaces and dropping
// empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// nameVariables rewrites env's errors, which name the Go field, to name
// the environment variable and the bad value instead.
func nameVariables(cfg any, err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	vars := map[string]string{} // field name → variable
	if v := reflect.ValueOf(cfg); v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		walk(v.Elem(), func(f reflect.StructField, _ reflect.Value) { vars[f.Name] = f.Tag.Get("env") })
	}
	errs := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if !errors.As(e, &pe) || vars[pe.Name] == "" {
			errs = append(errs, e)
			continue
		}
		var ne *strconv.NumError
		if errors.As(pe.Err, &ne) {
			errs = append(errs, fmt.Errorf("%s: invalid %s %q (%w)", vars[pe.Name], pe.Type, ne.Num, ne.Err))
		} else {
			errs = append(errs, fmt.Errorf("%s: %w", vars[pe.Name], pe.Err))
		}
	}
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
// shown as is, a comma-separated list of URLs (AMQP_URL of a cluster) is
// masked URL by URL, an empty value stays empty, and anything else becomes
// "***".
func Mask(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, ",") {
		items := splitList(s)
		for i, item := range items {
			if items[i] = maskURL(item); items[i] == "" {
				return "***"
			}
		}
		return strings.Join(items, ",")
	}
	if m := maskURL(s); m != "" {
		return m
	}
	return "***"
}

// maskURL masks the credentials of a URL as Mask describes, "" when s is
// not a URL with a scheme and a host.
func maskURL(s string) string {
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
	return ""
}
