// Package amqptest gives each test its own RabbitMQ vhost on the local
// broker (127.0.0.1:5672, guest/guest), so tests can use boxoffice's fixed
// production exchange and queue names in parallel without seeing each
// other's messages. It shells out to rabbitmqctl, which must be runnable by
// the test process (root on the development machines).
package amqptest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// Host is the broker address used by Vhost.
const Host = "127.0.0.1:5672"

// Vhost creates a fresh vhost with full permissions for guest, deletes it
// (and everything in it) when the test ends, and returns its AMQP URL. The
// test is skipped when rabbitmqctl is not available.
func Vhost(t testing.TB) (url string) {
	t.Helper()
	if _, err := exec.LookPath("rabbitmqctl"); err != nil {
		t.Skip("rabbitmqctl not found; RabbitMQ tests need a local broker")
	}
	v := "test-" + strings.ToLower(rand.Text()[:12])
	ctl(t, "add_vhost", v)
	t.Cleanup(func() {
		if out, err := exec.Command("rabbitmqctl", "-q", "delete_vhost", v).CombinedOutput(); err != nil {
			t.Logf("rabbitmqctl delete_vhost %s: %v: %s", v, err, out)
		}
	})
	ctl(t, "set_permissions", "-p", v, "guest", ".*", ".*", ".*")
	return fmt.Sprintf("amqp://guest:guest@%s/%s", Host, v)
}

// VhostOf returns the vhost name of a URL made by Vhost.
func VhostOf(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// CloseConnections force-closes every client connection of vhost (as a
// broker restart or a network cut would) and returns how many it closed.
func CloseConnections(t testing.TB, vhost string) int {
	t.Helper()
	out := ctl(t, "list_connections", "--no-table-headers", "vhost", "pid")
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || f[0] != vhost {
			continue
		}
		ctl(t, "close_connection", f[1], "amqptest: closed by test")
		n++
	}
	return n
}

func ctl(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", append([]string{"-q"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return out
}
