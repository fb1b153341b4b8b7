package service

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

type inner struct {
	Name string `env:"NAME" default:"inner"`
}

type testConfig struct {
	Common
	HTTPAddr  string        `env:"HTTP_ADDR" default:":8080"`
	JWTSecret string        `env:"JWT_SECRET" default:"dev-secret" secret:"true"`
	Hold      time.Duration `env:"HOLD" default:"10m"`
	Workers   int           `env:"WORKERS" default:"4"`
	Max       int64         `env:"MAX" default:"9000000000"`
	Small     int8          `env:"SMALL" default:"1"`
	Port      uint16        `env:"PORT" default:"80"`
	Dev       bool          `env:"DEV" default:"false"`
	Ratio     float64       `env:"RATIO" default:"0.5"`
	Topics    []string      `env:"TOPICS" default:"a,b"`
	NoDefault string        `env:"NO_DEFAULT"`
	Nested    inner
	//lint:ignore U1000 the loader must skip unexported fields
	ignored string
}

func defaults() testConfig {
	return testConfig{
		Common: Common{
			RedisAddr:     []string{"127.0.0.1:6379"},
			RedisPrefix:   "bo",
			AMQPURL:       "amqp://guest:guest@127.0.0.1:5672/",
			AMQPQueueType: "quorum", AMQPDeliveryLimit: 20, AMQPDelayProbeInterval: 30 * time.Second,
			KafkaSASLMechanism: "none", KafkaCompression: "lz4",
			KafkaBrokers:    []string{"127.0.0.1:9092"},
			AdminAddr:       ":9999",
			LogLevel:        "info",
			LogFormat:       "json",
			ShutdownTimeout: 15 * time.Second,
			PassIssuer:      "boxoffice",
		},
		HTTPAddr: ":8080", JWTSecret: "dev-secret", Hold: 10 * time.Minute, Workers: 4,
		Max: 9000000000, Small: 1, Port: 80, Ratio: 0.5, Topics: []string{"a", "b"},
		Nested: inner{Name: "inner"},
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(*testConfig)
	}{
		{"defaults", nil, func(*testConfig) {}},
		{"empty value means default", map[string]string{"HOLD": "", "WORKERS": ""}, func(*testConfig) {}},
		{"every type", map[string]string{
			"HTTP_ADDR": "127.0.0.1:9000", "JWT_SECRET": "s3cret", "HOLD": "90s", "WORKERS": "-3",
			"MAX": "-9000000001", "SMALL": "127", "PORT": "65535", "DEV": "true", "RATIO": "1e-3",
			"TOPICS": " x , ,y,", "NO_DEFAULT": "set", "NAME": "nested",
		}, func(c *testConfig) {
			c.HTTPAddr, c.JWTSecret, c.Hold, c.Workers = "127.0.0.1:9000", "s3cret", 90*time.Second, -3
			c.Max, c.Small, c.Port, c.Dev, c.Ratio = -9000000001, 127, 65535, true, 0.001
			c.Topics, c.NoDefault, c.Nested.Name = []string{"x", "y"}, "set", "nested"
		}},
		{"common", map[string]string{
			"REDIS_ADDR": "n1:7101,n2:7102", "REDIS_CLUSTER": "1", "REDIS_PASSWORD": "pw", "REDIS_PREFIX": "p",
			"AMQP_URL": "amqp://u:p@h/", "KAFKA_BROKERS": "k1:9092", "ADMIN_ADDR": ":1",
			"LOG_LEVEL": "debug", "LOG_FORMAT": "console", "SHUTDOWN_TIMEOUT": "1m",
		}, func(c *testConfig) {
			c.RedisAddr, c.RedisCluster, c.RedisPassword, c.RedisPrefix = []string{"n1:7101", "n2:7102"}, true, "pw", "p"
			c.AMQPURL, c.KafkaBrokers, c.AdminAddr = "amqp://u:p@h/", []string{"k1:9092"}, ":1"
			c.LogLevel, c.LogFormat, c.ShutdownTimeout = "debug", "console", time.Minute
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := testConfig{Common: Common{AdminAddr: ":9999"}}
			if err := LoadFrom(&got, tt.env); err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(testConfig{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// A field without a default keeps what the struct holds when its variable
// is unset or empty (a service's own admin port); the variable overrides it.
func TestLoadPresetKept(t *testing.T) {
	for _, env := range []map[string]string{nil, {"ADMIN_ADDR": ""}} {
		cfg := testConfig{Common: Common{AdminAddr: ":9101"}, NoDefault: "preset"}
		if err := LoadFrom(&cfg, env); err != nil {
			t.Fatal(err)
		}
		if cfg.AdminAddr != ":9101" || cfg.NoDefault != "preset" {
			t.Fatalf("env %v: preset lost: admin %q no_default %q", env, cfg.AdminAddr, cfg.NoDefault)
		}
	}
	cfg := testConfig{Common: Common{AdminAddr: ":9101"}}
	if err := LoadFrom(&cfg, map[string]string{"ADMIN_ADDR": ":1"}); err != nil {
		t.Fatal(err)
	}
	if cfg.AdminAddr != ":1" {
		t.Fatalf("env did not override the preset: %q", cfg.AdminAddr)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		wants []string // substrings of the error
	}{
		{"duration", map[string]string{"HOLD": "10"}, []string{"HOLD", `invalid duration "10"`}},
		{"int", map[string]string{"WORKERS": "four"}, []string{"WORKERS", "four"}},
		{"int8 overflow", map[string]string{"SMALL": "128"}, []string{"SMALL", "128"}},
		{"uint negative", map[string]string{"PORT": "-1"}, []string{"PORT"}},
		{"int64", map[string]string{"MAX": "1.5"}, []string{"MAX"}},
		{"bool", map[string]string{"DEV": "yes"}, []string{"DEV", "yes"}},
		{"float", map[string]string{"RATIO": "half"}, []string{"RATIO", "half"}},
		{"oneof", map[string]string{"LOG_FORMAT": "xml"}, []string{"LOG_FORMAT", "xml", "json, console"}},
		{"oneof of several", map[string]string{"AMQP_QUEUE_TYPE": "stream", "KAFKA_COMPRESSION": "brotli"},
			[]string{"AMQP_QUEUE_TYPE", `"stream"`, "quorum, classic", "KAFKA_COMPRESSION", "brotli"}},
		{"no broker", map[string]string{"KAFKA_BROKERS": " , "}, []string{"KAFKA_BROKERS: no address"}},
		{"negative probe interval", map[string]string{"AMQP_DELAY_PROBE_INTERVAL": "-1s"}, []string{"AMQP_DELAY_PROBE_INTERVAL", ">= 0"}},
		{"several at once", map[string]string{"HOLD": "x", "DEV": "y"}, []string{"HOLD", "DEV"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig{Common: Common{AdminAddr: ":9999"}}
			err := LoadFrom(&cfg, tt.env)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestLoadRequired(t *testing.T) {
	var cfg testConfig // no AdminAddr preset
	err := LoadFrom(&cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "ADMIN_ADDR") {
		t.Fatalf("want an ADMIN_ADDR error, got %v", err)
	}
}

func TestLoadRealEnv(t *testing.T) {
	t.Setenv("HOLD", "3s")
	cfg := testConfig{Common: Common{AdminAddr: ":1"}}
	if err := Load(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Hold != 3*time.Second {
		t.Fatalf("HOLD from the environment: got %v", cfg.Hold)
	}
}

// LoadConfig loads, names an error as the configuration's, and logs the
// configuration with its secrets masked.
func TestLoadConfig(t *testing.T) {
	t.Setenv("JWT_SECRET", "topsecret")
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := testConfig{Common: Common{AdminAddr: ":1"}}
	if err := LoadConfig(&cfg, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessage("config").Len(); n != 1 {
		t.Fatalf("%d config lines logged, want 1", n)
	}
	if got := logs.All()[0].ContextMap()["jwt_secret"]; got != "***" {
		t.Errorf("jwt_secret logged as %v", got)
	}
	t.Setenv("HOLD", "soon")
	err := LoadConfig(&cfg, zap.New(core))
	if err == nil || !strings.HasPrefix(err.Error(), "config: HOLD") {
		t.Fatalf("bad HOLD: %v, want an error starting config: HOLD", err)
	}
}

func TestLoadRejectsNonPointer(t *testing.T) {
	for _, v := range []any{testConfig{}, nil, new(int), (*testConfig)(nil)} {
		if err := LoadFrom(v, nil); err == nil {
			t.Errorf("LoadFrom(%T) accepted", v)
		}
	}
}

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"dev-secret", "***"},
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"},
		{"amqp://user:p%40ss@host/vhost", "amqp://user:***@host/vhost"},
		{"redis://token@host:6379", "redis://***@host:6379"},
		{"amqp://host:5672/", "amqp://host:5672/"},
		{"not a url: guest:guest@", "***"},
		// AMQP_URL lists one URL per cluster node: each is masked
		{"amqp://u:p1@rabbit-0:5672/bo,amqp://u:p2@rabbit-1:5672/bo", "amqp://u:***@rabbit-0:5672/bo,amqp://u:***@rabbit-1:5672/bo"},
		{"amqp://u:p1@rabbit-0/, amqp://rabbit-1/", "amqp://u:***@rabbit-0/,amqp://rabbit-1/"},
	}
	for _, tt := range tests {
		if got := Mask(tt.in); got != tt.want {
			t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFieldsMaskSecrets(t *testing.T) {
	cfg := testConfig{Common: Common{AdminAddr: ":9101"}}
	env := map[string]string{"JWT_SECRET": "topsecret", "REDIS_PASSWORD": "redispw", "AMQP_URL": "amqp://bo:amqppw@mq:5672/"}
	if err := LoadFrom(&cfg, env); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	zap.New(core).Info("config", Fields(&cfg)...)
	got := logs.All()[0].ContextMap()

	for _, secret := range []string{"topsecret", "redispw", "amqppw"} {
		for k, v := range got {
			if strings.Contains(stringOf(v), secret) {
				t.Errorf("field %s leaks %q: %v", k, secret, v)
			}
		}
	}
	want := map[string]any{
		"jwt_secret":     "***",
		"redis_password": "***",
		"amqp_url":       "amqp://bo:***@mq:5672/",
		"http_addr":      ":8080",
		"hold":           10 * time.Minute,
		"workers":        int64(4),
		"dev":            false,
		"ratio":          0.5,
		"topics":         []any{"a", "b"},
		"name":           "inner",
		"admin_addr":     ":9101",
		"redis_addr":     []any{"127.0.0.1:6379"},
	}
	for k, w := range want {
		if diff := cmp.Diff(w, got[k]); diff != "" {
			t.Errorf("field %s (-want +got):\n%s", k, diff)
		}
	}
}

func stringOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(stringOf(x))
		}
		return b.String()
	}
	return ""
}

// Each service's main presets its own admin address (defaultAdminAddr):
// on loopback, and no two services share one, so `make run` can start them
// all on one host.
func TestDefaultAdminAddrsLoopbackAndDistinct(t *testing.T) {
	mains, err := filepath.Glob("../../services/*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("no service mains: %v", err)
	}
	seen := map[string]string{}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		addr := ""
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					if vs.Names[0].Name == "defaultAdminAddr" {
						addr, _ = strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
					}
				}
			}
		}
		svc := filepath.Base(filepath.Dir(path))
		if addr == "" {
			if usesAdmin(f) {
				t.Errorf("%s has an admin listener but no defaultAdminAddr", svc)
			}
			continue
		}
		if host, _, _ := strings.Cut(addr, ":"); host != "127.0.0.1" {
			t.Errorf("%s: default admin address %q is not loopback", svc, addr)
		}
		if other, dup := seen[addr]; dup {
			t.Errorf("%s and %s share %s", svc, other, addr)
		}
		seen[addr] = svc
	}
	if len(seen) < 7 {
		t.Errorf("%d services with a default admin address, want 7: %v", len(seen), seen)
	}
}

// usesAdmin reports whether a main reads a service configuration (and so
// has an admin listener).
func usesAdmin(f *ast.File) bool {
	for _, imp := range f.Imports {
		if imp.Path.Value == `"github.com/boxoffice/boxoffice/pkg/service"` {
			return true
		}
	}
	return false
}
