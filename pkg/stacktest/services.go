package stacktest

import (
	"fmt"
	"slices"
)

// Spec is one service of the stack: its name (a directory under services/
// with a main package) and the ports of the development stack (`make run`,
// tools/stack), which are also the service's default ADMIN_ADDR and
// HTTP_ADDR (the deployment checks in deployments/check hold each service's
// Config and docker-compose.yml to them). Tests use free ports instead.
type Spec struct {
	Name string
	// AdminPort serves /healthz, /readyz and /metrics (on 127.0.0.1).
	AdminPort int
	// HTTPPort is the public listener; 0 for a consumer.
	HTTPPort int
	// Purpose says what a browser finds on HTTPPort (printed by `make run`).
	Purpose string
	// Optional services are left out of [Services], the stack tests'
	// default set, because no journey depends on them.
	Optional bool
}

// Names of the services.
const (
	Gateway              = "gateway"
	Notifier             = "notifier"
	PaymentSandbox       = "payment-sandbox"
	PaymentWebhook       = "payment-webhook"
	SlotReleasedConsumer = "slot-released-consumer"
	TimeoutConsumer      = "timeout-consumer"
	Popularity           = "popularity"
)

// Specs lists every service in start order: consumers first, so that each
// has declared and bound its queues before a publisher's first message
// (RabbitMQ drops an unroutable message), and the gateway last.
var Specs = []Spec{
	{Name: Popularity, AdminPort: 9107, Optional: true},
	{Name: SlotReleasedConsumer, AdminPort: 9105},
	{Name: TimeoutConsumer, AdminPort: 9106},
	{Name: PaymentWebhook, AdminPort: 9102, HTTPPort: 8081, Purpose: "payment webhooks"},
	{Name: PaymentSandbox, AdminPort: 9104, HTTPPort: 8083, Purpose: "payment sandbox"},
	{Name: Notifier, AdminPort: 9103, HTTPPort: 8082, Purpose: "notifier (WebSocket)"},
	{Name: Gateway, AdminPort: 9101, HTTPPort: 8080, Purpose: "gateway + web pages"},
}

// The embedded Kafka broker of the development stack (services/kafka-dev):
// not a boxoffice service, it is started before [Specs] and stopped after
// them. Tests use an in-process broker (kafkatest) instead.
const (
	KafkaDev     = "kafka-dev"
	KafkaDevAddr = "127.0.0.1:9092"
)

// Services is the default set of [Start], in start order: [Specs] without
// the optional ones.
var Services = func() []string {
	var out []string
	for _, s := range Specs {
		if !s.Optional {
			out = append(out, s.Name)
		}
	}
	return out
}()

// SpecOf returns the named service's Spec; ok is false for an unknown name.
func SpecOf(name string) (s Spec, ok bool) {
	i := slices.IndexFunc(Specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return Specs[i], true
}

// AdminAddr is the service's admin listener in the development stack.
func (s Spec) AdminAddr() string { return fmt.Sprintf("127.0.0.1:%d", s.AdminPort) }

// Addr is the service's public listener in the development stack, "" for
// a consumer.
func (s Spec) Addr() string {
	if s.HTTPPort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", s.HTTPPort)
}

// Wiring is the environment that gives service n of a stack its listeners
// (ADMIN_ADDR, HTTP_ADDR) and the addresses of the other services it calls
// or hands to browsers. services holds the stack's processes by name (only
// their addresses are read); a service the stack does not run is left to
// n's default.
func Wiring(n string, services map[string]*Service) map[string]string {
	p := services[n]
	env := map[string]string{"ADMIN_ADDR": p.AdminAddr}
	if p.Addr != "" {
		env["HTTP_ADDR"] = p.Addr
	}
	switch n {
	case PaymentSandbox:
		env["PUBLIC_URL"] = p.URL()
		if wh := services[PaymentWebhook]; wh != nil {
			env["WEBHOOK_URL"] = wh.URL()
		}
	case Gateway:
		env["PUBLIC_URL"] = p.URL()
		if sb := services[PaymentSandbox]; sb != nil {
			env["PAYMENT_PROVIDER_URL"] = sb.URL()
		}
		if nt := services[Notifier]; nt != nil {
			env["NOTIFIER_PUBLIC_URL"] = "ws://" + nt.Addr + "/ws"
		}
	}
	return env
}

// dependents are the services whose environment holds another service's
// address (see [Wiring]).
var dependents = map[string][]string{
	PaymentWebhook: {PaymentSandbox},
	PaymentSandbox: {Gateway},
	Notifier:       {Gateway},
}
