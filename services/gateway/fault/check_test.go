package fault

import (
	"os"
	"os/exec"
	"testing"

	"github.com/boxoffice/boxoffice/pkg/amqpx/amqptest"
)

// tailOf is the end of a log file.
func tailOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b[max(0, len(b)-1500):])
}

// purge empties a queue of the vhost.
func purge(t *testing.T, amqpURL, queue string) {
	t.Helper()
	if out, err := exec.Command("rabbitmqctl", "-q", "purge_queue", "-p", amqptest.VhostOf(amqpURL), queue).CombinedOutput(); err != nil {
		t.Errorf("rabbitmqctl purge_queue %s: %v: %s", queue, err, out)
	}
}
