package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/boxoffice/boxoffice/pkg/booking"
	"github.com/boxoffice/boxoffice/pkg/bookinghttp"
	"github.com/boxoffice/boxoffice/pkg/httpapi"
	"github.com/boxoffice/boxoffice/pkg/ids"
	"github.com/boxoffice/boxoffice/services/gateway/internal/fastserver"
)

// The join challenge (event setting challenge: "pow"): before joining
// such an event the page solves an ALTCHA proof-of-work challenge (the
// npm widget `altcha`, vendored in web/static) and sends the widget's
// payload in the join's Altcha header. The server side is ALTCHA's
// proof-of-work v2 protocol with the SHA-256 algorithm, written here
// because the maintained Go library (altcha-org/altcha-lib-go) is not on
// the module proxy this project builds from (docs/security.md):
//
//   - GET /api/events/{id}/challenge answers {"parameters": {algorithm
//     "SHA-256", cost 1, data {"event": id}, expiresAt (unix s), keyLength
//     32, keyPrefix, nonce, salt}, "signature"}: nonce and salt are 16
//     random bytes (hex); the server draws a secret counter n uniform in
//     [0, CHALLENGE_MAX_NUMBER) and keyPrefix is the first 16 bytes (hex)
//     of SHA-256(salt ‖ nonce ‖ uint32be(n)); signature is
//     hex(HMAC-SHA256(key, the parameters as JSON with sorted keys)).
//   - The widget counts up from 0 until a counter's key starts with
//     keyPrefix (n/2 hashes on average over its workers) and sends
//     base64(JSON {"challenge": {parameters, signature}, "solution":
//     {counter, derivedKey, time}}).
//   - A join verifies the signature, the expiry, the event, and that the
//     counter's key starts with keyPrefix; then it records the nonce in
//     Redis until the expiry (SET NX, shared by every gateway), so a
//     solution admits one join: a second use is challenge_failed.

// Error codes of a join to an event with a challenge.
const (
	CodeChallengeRequired = "challenge_required" // no Altcha header
	CodeChallengeFailed   = "challenge_failed"   // a payload that does not verify, expired, for another event or used
	// CodeChallengeUnavailable: 503, the gateway has no challenger
	// (only in tests: main always configures one).
	CodeChallengeUnavailable = "challenge_unavailable"
)

// altchaHeader carries the widget's payload on a join.
const altchaHeader = "Altcha"

const (
	altchaAlgorithm = "SHA-256"
	altchaKeyLength = 32
	// maxAltchaPayload bounds the header before decoding (a payload is
	// about 600 bytes).
	maxAltchaPayload = 4096
)

// Challenger issues and verifies ALTCHA challenges.
type Challenger struct {
	key       []byte
	maxNumber int64
	ttl       time.Duration
	redis     redis.Cmdable
	prefix    string
	now       func() time.Time
}

// NewChallenger returns a challenger signing with key (every gateway
// must share it), whose secret counters are below maxNumber (the work:
// maxNumber/2 SHA-256 hashes on average) and whose challenges expire
// after ttl; used nonces are kept in rdb under prefix (+ ':' when
// missing) + "altcha:" + the nonce.
func NewChallenger(key []byte, maxNumber int64, ttl time.Duration, rdb redis.Cmdable, prefix string) *Challenger {
	if prefix != "" && !strings.HasSuffix(prefix, ":") {
		prefix += ":"
	}
	return &Challenger{key: key, maxNumber: maxNumber, ttl: ttl, redis: rdb, prefix: prefix, now: time.Now}
}

// newChallengerFrom is the gateway's challenger from its configuration.
func newChallengerFrom(cfg Config, rdb redis.Cmdable) (*Challenger, error) {
	if cfg.ChallengeMaxNumber < 1 || cfg.ChallengeMaxNumber > 1<<32 {
		return nil, errors.New("CHALLENGE_MAX_NUMBER must be from 1 to 2^32")
	}
	if cfg.ChallengeTTL < 10*time.Second {
		return nil, errors.New("CHALLENGE_TTL must be at least 10s")
	}
	key := []byte(cfg.ChallengeHMACKey)
	if len(key) == 0 {
		m := hmac.New(sha256.New, []byte(cfg.JWTSecret))
		m.Write([]byte("boxoffice join challenge"))
		key = m.Sum(nil)
	} else if len(key) < 16 {
		return nil, errors.New("CHALLENGE_HMAC_KEY must be at least 16 bytes")
	}
	return NewChallenger(key, cfg.ChallengeMaxNumber, cfg.ChallengeTTL, rdb, cfg.RedisPrefix), nil
}

// altchaParams are a challenge's parameters. The fields are in the
// alphabetical order of their JSON names, so encoding/json writes the
// canonical form the signature covers (the widget's sortKeys +
// JSON.stringify).
type altchaParams struct {
	Algorithm string     `json:"algorithm"`
	Cost      int        `json:"cost"`
	Data      altchaData `json:"data"`
	ExpiresAt int64      `json:"expiresAt"`
	KeyLength int        `json:"keyLength"`
	KeyPrefix string     `json:"keyPrefix"`
	Nonce     string     `json:"nonce"`
	Salt      string     `json:"salt"`
}

type altchaData struct {
	Event string `json:"event"`
}

type altchaChallenge struct {
	Parameters altchaParams `json:"parameters"`
	Signature  string       `json:"signature"`
}

type altchaPayload struct {
	Challenge *altchaChallenge `json:"challenge"`
	Solution  *struct {
		Counter    int64  `json:"counter"`
		DerivedKey string `json:"derivedKey"`
	} `json:"solution"`
}

// canonical is the JSON the signature covers (no HTML escaping, as
// JSON.stringify).
func (p altchaParams) canonical() []byte {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // strings and integers only: cannot fail
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

func (ch *Challenger) sign(p altchaParams) string {
	m := hmac.New(sha256.New, ch.key)
	m.Write(p.canonical())
	return hex.EncodeToString(m.Sum(nil))
}

// deriveKey is the SHA-256 algorithm's key for a counter, cost 1:
// SHA-256(salt ‖ nonce ‖ uint32be(counter)).
func deriveKey(salt, nonce []byte, counter uint32) [32]byte {
	buf := make([]byte, 0, len(salt)+len(nonce)+4)
	buf = append(append(buf, salt...), nonce...)
	return sha256.Sum256(binary.BigEndian.AppendUint32(buf, counter))
}

// New is a challenge for joining eventID.
func (ch *Challenger) New(eventID string) (altchaChallenge, error) {
	nonce, salt := make([]byte, 16), make([]byte, 16)
	_, _ = rand.Read(nonce) // never fails (crypto/rand)
	_, _ = rand.Read(salt)
	n, err := rand.Int(rand.Reader, big.NewInt(ch.maxNumber))
	if err != nil {
		return altchaChallenge{}, err
	}
	key := deriveKey(salt, nonce, uint32(n.Int64()))
	p := altchaParams{Algorithm: altchaAlgorithm, Cost: 1, Data: altchaData{Event: eventID},
		ExpiresAt: ch.now().Add(ch.ttl).Unix(), KeyLength: altchaKeyLength,
		KeyPrefix: hex.EncodeToString(key[:altchaKeyLength/2]), Nonce: hex.EncodeToString(nonce), Salt: hex.EncodeToString(salt)}
	return altchaChallenge{Parameters: p, Signature: ch.sign(p)}, nil
}

// errChallenge is why a payload was refused (the message of the 403).
type errChallenge string

func (e errChallenge) Error() string { return string(e) }

// Verify checks a widget payload for a join to eventID and uses it up.
// An errChallenge says why it was refused; any other error is Redis's.
func (ch *Challenger) Verify(ctx context.Context, payload, eventID string) error {
	if len(payload) > maxAltchaPayload {
		return errChallenge("the challenge payload is too long")
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return errChallenge("the challenge payload is not base64")
	}
	var pl altchaPayload
	if err := json.Unmarshal(raw, &pl); err != nil || pl.Challenge == nil || pl.Solution == nil {
		return errChallenge("the challenge payload is not a solved ALTCHA challenge")
	}
	p := pl.Challenge.Parameters
	sig, err := hex.DecodeString(pl.Challenge.Signature)
	want, _ := hex.DecodeString(ch.sign(p))
	if err != nil || !hmac.Equal(sig, want) {
		return errChallenge("the challenge was not issued by this site")
	}
	// signed by us: the algorithm, cost and lengths are ours
	now := ch.now()
	if p.ExpiresAt <= now.Unix() {
		return errChallenge("the challenge has expired; solve a new one")
	}
	if p.Data.Event != eventID {
		return errChallenge("the challenge was issued for another event")
	}
	salt, err1 := hex.DecodeString(p.Salt)
	nonce, err2 := hex.DecodeString(p.Nonce)
	c := pl.Solution.Counter
	if err1 != nil || err2 != nil || c < 0 || c > 0xFFFFFFFF {
		return errChallenge("the challenge solution is malformed")
	}
	key := deriveKey(salt, nonce, uint32(c))
	if !strings.HasPrefix(hex.EncodeToString(key[:]), p.KeyPrefix) {
		return errChallenge("the challenge solution is wrong")
	}
	// one join per solution, across every gateway, until it expires anyway
	fresh, err := ch.redis.SetNX(ctx, ch.prefix+"altcha:"+p.Nonce, 1, time.Unix(p.ExpiresAt+1, 0).Sub(now)).Result()
	if err != nil {
		return err
	}
	if !fresh {
		return errChallenge("this challenge solution was already used; solve a new one")
	}
	return nil
}

// challengeCache keeps each event's challenge setting for a second, so a
// join costs no Redis read for it (a PATCH applies on this gateway at
// once, on the others within a second).
type challengeCache struct {
	mu      sync.RWMutex
	m       map[string]challengeEntry
	flights singleflight.Group
}

type challengeEntry struct {
	setting string // booking.ChallengeNone or ChallengePoW
	at      time.Time
}

const challengeCacheAge = time.Second

// eventChallenge is the event's challenge setting, "" for an unknown
// event (not cached: ids that name nothing do not fill the map).
func (s *Server) eventChallenge(ctx context.Context, eventID string) (string, error) {
	cc := &s.challenges
	cc.mu.RLock()
	e, ok := cc.m[eventID]
	cc.mu.RUnlock()
	if ok && time.Since(e.at) < challengeCacheAge {
		return e.setting, nil
	}
	v, err, _ := cc.flights.Do(eventID, func() (any, error) {
		c, err := s.Store.EventChallenge(ctx, eventID)
		if errors.Is(err, booking.ErrEventNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		cc.mu.Lock()
		if cc.m == nil {
			cc.m = map[string]challengeEntry{}
		}
		cc.m[eventID] = challengeEntry{setting: c, at: time.Now()}
		cc.mu.Unlock()
		return c, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// checkChallengeSetting checks an event's challenge setting as the API
// takes it ("" is "none").
func checkChallengeSetting(v string) error {
	switch v {
	case "", booking.ChallengeNone, booking.ChallengePoW:
		return nil
	}
	return errf(`challenge must be "none" or "pow"`)
}

// forgetChallenge drops the cached setting (after this gateway's PATCH).
func (s *Server) forgetChallenge(eventID string) {
	s.challenges.mu.Lock()
	delete(s.challenges.m, eventID)
	s.challenges.mu.Unlock()
}

// joinChallenge checks the Altcha header of a join to an event with a
// challenge; false when it answered (403, or 503 without a challenger or
// Redis).
func (s *Server) joinChallenge(c *fastserver.Ctx, eventID string) bool {
	setting, err := s.eventChallenge(c.Context(), eventID)
	if err != nil {
		c.Fail(err)
		return false
	}
	if setting != booking.ChallengePoW {
		return true // no challenge, or no such event (the join answers 404)
	}
	if s.Challenger == nil {
		c.Abort(http.StatusServiceUnavailable, CodeChallengeUnavailable, "this event needs a challenge and this gateway has none configured")
		return false
	}
	payload := c.Header(altchaHeader)
	if payload == "" {
		c.Abort(http.StatusForbidden, CodeChallengeRequired,
			"this event asks for a solved challenge before joining: GET /api/events/"+eventID+"/challenge, solve it, and send the payload in the Altcha header")
		return false
	}
	err = s.Challenger.Verify(c.Context(), payload, eventID)
	var why errChallenge
	switch {
	case errors.As(err, &why):
		c.Abort(http.StatusForbidden, CodeChallengeFailed, why.Error())
		return false
	case err != nil:
		c.Logger().Warn("challenge replay check failed", zap.Error(err))
		c.Fail(err)
		return false
	}
	return true
}

// challenge: GET /api/events/{id}/challenge, a fresh ALTCHA challenge for
// joining the event (404 for an unknown event). Never cached.
func (s *Server) challenge(c *gin.Context) {
	id := c.Param("id")
	if !ids.ValidEvent(id) {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	setting, err := s.eventChallenge(c.Request.Context(), id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	if setting == "" {
		bookinghttp.Fail(c, booking.ErrEventNotFound)
		return
	}
	if s.Challenger == nil {
		httpapi.Abort(c, http.StatusServiceUnavailable, CodeChallengeUnavailable, "no challenge is configured on this gateway")
		return
	}
	ch, err := s.Challenger.New(id)
	if err != nil {
		bookinghttp.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, ch)
}
