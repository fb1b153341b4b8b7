package events

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// ClientConfig is how a boxoffice client reaches a production Kafka
// cluster beyond its broker list: TLS, SASL, the producer's compression and
// a prefix for every topic name (for clusters shared with other systems).
// The zero value is plaintext, no authentication, no compression, no
// prefix: what the embedded development broker speaks.
type ClientConfig struct {
	// TLS encrypts every connection. TLSCA is a PEM file of the CA(s) to
	// trust ("" = the system pool); TLSCert and TLSKey are a PEM client
	// certificate and key, for brokers that authenticate clients by
	// certificate (both or neither).
	TLS                    bool
	TLSCA, TLSCert, TLSKey string
	// SASLMechanism is "", "none", "PLAIN", "SCRAM-SHA-256" or
	// "SCRAM-SHA-512", with SASLUser and SASLPassword. PLAIN sends the
	// password as it is: use it only with TLS.
	SASLMechanism          string
	SASLUser, SASLPassword string
	// Compression of produced batches: "none", "gzip", "snappy", "lz4" or
	// "zstd" ("" = none).
	Compression string
	// TopicPrefix starts every topic name produced to and consumed from
	// (e.g. "boxoffice." → "boxoffice.booking_completed"). Event types and
	// the envelope's type field stay unprefixed.
	TopicPrefix string
}

// Topic is the Kafka topic name of an event type under the prefix.
func (c ClientConfig) Topic(eventType string) string { return c.TopicPrefix + eventType }

// TLSConfig builds the client TLS configuration, nil when TLS is off.
func (c ClientConfig) TLSConfig() (*tls.Config, error) {
	if !c.TLS {
		if c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != "" {
			return nil, errors.New("kafka tls: a CA or client certificate is set but KAFKA_TLS is false")
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("kafka tls: read CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka tls: no PEM certificate in %s", c.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("kafka tls: client certificate and key must be set together")
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("kafka tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// SASL builds the SASL mechanism, nil when there is none.
func (c ClientConfig) SASL() (sasl.Mechanism, error) {
	switch c.SASLMechanism {
	case "", "none":
		return nil, nil
	case "PLAIN":
		if c.SASLUser == "" {
			return nil, errors.New("kafka sasl: PLAIN needs a user")
		}
		return plain.Mechanism{Username: c.SASLUser, Password: c.SASLPassword}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		algo := scram.SHA256
		if c.SASLMechanism == "SCRAM-SHA-512" {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, c.SASLUser, c.SASLPassword)
		if err != nil {
			return nil, fmt.Errorf("kafka sasl: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("kafka sasl: unknown mechanism %q (want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", c.SASLMechanism)
}

// compression returns the writer's codec.
func (c ClientConfig) compression() (kafka.Compression, error) {
	if c.Compression == "" {
		return 0, nil
	}
	var k kafka.Compression
	if err := k.UnmarshalText([]byte(c.Compression)); err != nil {
		return 0, fmt.Errorf("kafka compression: %w", err)
	}
	return k, nil
}

// security builds the TLS configuration and SASL mechanism.
func (c ClientConfig) security() (*tls.Config, sasl.Mechanism, error) {
	t, err := c.TLSConfig()
	if err != nil {
		return nil, nil, err
	}
	m, err := c.SASL()
	if err != nil {
		return nil, nil, err
	}
	return t, m, nil
}

// Dialer returns a kafka-go Dialer with the TLS and SASL settings, for
// readers (consumer groups) and admin connections.
func (c ClientConfig) Dialer(clientID string) (*kafka.Dialer, error) {
	t, m, err := c.security()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{Timeout: 5 * time.Second, ClientID: clientID, TLS: t, SASLMechanism: m}, nil
}

// WithClientConfig applies TLS, SASL, compression and the topic prefix to
// the producer (default: the zero ClientConfig). Errors in it (unreadable
// certificate files, unknown mechanism) are returned by NewKafkaProducer.
func WithClientConfig(c ClientConfig) ProducerOption {
	return func(p *producerConfig) { p.client = c }
}

// WithConsumerClient applies TLS, SASL and the topic prefix to Consume
// (the topic argument is the unprefixed event type).
func WithConsumerClient(c ClientConfig) ConsumerOption {
	return func(cfg *consumerConfig) { cfg.client = c }
}
