package events_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/boxoffice/boxoffice/pkg/events"
	"github.com/boxoffice/boxoffice/pkg/events/kafkatest"
)

// selfSignedTLS makes a CA-less self-signed certificate for 127.0.0.1 and
// returns the broker's TLS config and the certificate's PEM file, for the
// client to trust.
func selfSignedTLS(t *testing.T) (*tls.Config, string) {
	cfg, file, _, _ := selfSignedCA(t)
	return cfg, file
}

// selfSignedCA is selfSignedTLS, also returning the certificate and key to
// sign client certificates with.
func selfSignedCA(t *testing.T) (*tls.Config, string, *x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kfake"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, file, ca, key
}

// clientCert writes a client certificate signed by ca and its key as PEM
// files.
func clientCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "boxoffice"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// A broker that requires a client certificate (mTLS): accepted with
// KAFKA_TLS_CERT/KAFKA_TLS_KEY, refused without.
func TestKafkaClientCertificate(t *testing.T) {
	srvTLS, caFile, ca, caKey := selfSignedCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srvTLS.ClientCAs, srvTLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
	c := kafkatest.NewCluster(t, kfake.TLS(srvTLS))
	certFile, keyFile := clientCert(t, ca, caKey)
	cc := events.ClientConfig{TLS: true, TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}
	if err := publishAndRead(t, c.ListenAddrs(), cc); err != nil {
		t.Fatalf("publish with a client certificate: %v", err)
	}
	cc.TLSCert, cc.TLSKey = "", ""
	if err := publishAndRead(t, c.ListenAddrs(), cc); err == nil {
		t.Error("publish without a client certificate succeeded against a broker that requires one")
	}
}

// publishAndRead publishes one event through a producer with cc and reads
// it back through Consume with the same cc.
func publishAndRead(t *testing.T, brokers []string, cc events.ClientConfig) error {
	t.Helper()
	p, err := events.NewKafkaProducer(brokers, events.WithClientConfig(cc), events.WithMaxAttempts(2), events.WithWriteTimeout(2*time.Second))
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ev := events.BookingCompleted("evt", "u1", "A1", "pay1", 1, at)
	if err := p.Publish(ctx, ev); err != nil {
		return err
	}
	got := make(chan events.Event, 1)
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	err = events.Consume(cctx, brokers, "test-"+t.Name(), events.TopicBookingCompleted, func(_ context.Context, e events.Event, m kafka.Message) error {
		if m.Topic != cc.Topic(events.TopicBookingCompleted) {
			t.Errorf("read from topic %q, want %q", m.Topic, cc.Topic(events.TopicBookingCompleted))
		}
		got <- e
		ccancel()
		return nil
	}, events.WithConsumerClient(cc))
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	select {
	case e := <-got:
		if e.ID != ev.ID {
			t.Errorf("read event %s, want %s", e.ID, ev.ID)
		}
	default:
		t.Fatal("event not read back")
	}
	return nil
}

// Each SASL mechanism, with TLS (a self-signed certificate made here),
// zstd compression and a topic prefix, against the embedded broker; the
// wrong password and an untrusted certificate are refused.
func TestKafkaSASLAndTLS(t *testing.T) {
	const prefix = "shared.boxoffice."
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			srvTLS, caFile := selfSignedTLS(t)
			c := kafkatest.NewCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "bo", "s3cret-"+mech),
				kfake.TLS(srvTLS), kfake.SeedTopics(kafkatest.Partitions, prefix+events.TopicBookingCompleted))
			good := events.ClientConfig{TLS: true, TLSCA: caFile, SASLMechanism: mech, SASLUser: "bo",
				SASLPassword: "s3cret-" + mech, Compression: "zstd", TopicPrefix: prefix}
			if err := publishAndRead(t, c.ListenAddrs(), good); err != nil {
				t.Fatalf("publish with the right credentials: %v", err)
			}
			bad := good
			bad.SASLPassword = "wrong"
			if err := publishAndRead(t, c.ListenAddrs(), bad); err == nil {
				t.Error("publish with a wrong password succeeded")
			}
			untrusted := good
			untrusted.TLSCA = ""
			if err := publishAndRead(t, c.ListenAddrs(), untrusted); err == nil {
				t.Error("publish trusting only the system CAs succeeded against a self-signed broker")
			}
		})
	}
}

func TestClientConfigErrors(t *testing.T) {
	for name, cc := range map[string]events.ClientConfig{
		"unknown mechanism":  {SASLMechanism: "GSSAPI"},
		"cert without key":   {TLS: true, TLSCert: "c.pem"},
		"CA without TLS":     {TLSCA: "ca.pem"},
		"missing CA file":    {TLS: true, TLSCA: "/nonexistent/ca.pem"},
		"unknown codec":      {Compression: "brotli"},
		"PLAIN without user": {SASLMechanism: "PLAIN"},
	} {
		if _, err := events.NewKafkaProducer([]string{"127.0.0.1:9092"}, events.WithClientConfig(cc)); err == nil {
			t.Errorf("%s: NewKafkaProducer accepted %+v", name, cc)
		}
	}
}

// Three brokers, one removed (its listener closed, its partitions led by
// the others): a running producer keeps publishing, and a new one whose
// seed list starts with the dead broker starts. kafka-go learns the new
// leaders only from its periodic metadata refresh (1 s here, 6 s by
// kafka-go's default), so the producer's retries must span that: 10 attempts
// back off about 3 s in all.
func TestProduceWithOneOfThreeBrokersGone(t *testing.T) {
	c := kafkatest.NewCluster(t, kfake.NumBrokers(3))
	addrs := c.ListenAddrs()
	p := newProducer(t, addrs, events.WithWriteTimeout(2*time.Second), events.WithMaxAttempts(10))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 10 {
		if err := p.Publish(ctx, events.BookingRequested("evt", "u", int64(i+1), at)); err != nil {
			t.Fatalf("publish with three brokers: %v", err)
		}
	}
	gone := c.LeaderFor(events.TopicBookingRequest, 0)
	if err := c.RemoveNode(gone); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := p.Publish(ctx, events.BookingRequested("evt-"+string(rune('a'+i)), "u", int64(i+1), at)); err != nil {
			t.Fatalf("publish %d after broker %d left: %v", i, gone, err)
		}
	}
	// A seed list whose first broker no longer answers.
	var seeds []string
	for _, a := range addrs {
		if _, port, _ := net.SplitHostPort(a); !containsPort(c.ListenAddrs(), port) {
			seeds = append([]string{a}, seeds...)
		} else {
			seeds = append(seeds, a)
		}
	}
	p2 := newProducer(t, seeds, events.WithWriteTimeout(2*time.Second), events.WithMaxAttempts(10))
	if err := p2.Publish(ctx, events.BookingRequested("evt", "u", 99, at)); err != nil {
		t.Fatalf("new producer with the dead broker first in %v: %v", seeds, err)
	}
	got := consumeN(t, c.ListenAddrs(), events.TopicBookingRequest, 21)
	if len(got) != 21 {
		t.Errorf("read %d events, want 21", len(got))
	}
}

func containsPort(addrs []string, port string) bool {
	for _, a := range addrs {
		if _, p, _ := net.SplitHostPort(a); p == port {
			return true
		}
	}
	return false
}
