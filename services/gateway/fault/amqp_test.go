package fault

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

func amqptestVhost(url string) string { return amqptest.VhostOf(url) }

// publish sends one persistent JSON message on a direct connection.
func publish(t *testing.T, url, exchange, key, body string) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	conf, err := ch.PublishWithDeferredConfirm(exchange, key, true, false, amqp.Publishing{
		ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: "poison-" + key, Body: []byte(body)})
	if err != nil {
		t.Fatal(err)
	}
	if !conf.Wait() {
		t.Fatalf("publish to %s not confirmed", exchange)
	}
}
