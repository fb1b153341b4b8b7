package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/boxoffice/boxoffice/pkg/service"
)

// One header limit and one error format on every port. Neither server
// gets there by itself: net/http writes a text/plain answer straight to
// the connection before any handler runs, and reads up to 4 KiB of a
// keep-alive request before it starts counting (its own limit is
// MaxHeaderBytes plus 4 KiB of "bufio slop", so 16 KiB let 20 KiB
// through); fasthttp has dropped the request line when its ErrorHandler
// runs, so its 431 could not name the path. So every connection is
// watched from the listener (Listener): it measures each request's line
// and headers as they are read, answers a 431 itself as soon as they pass
// service.MaxHeaderBytes, turns net/http's own error answers into the
// JSON format as they are written, and keeps the request line that
// fasthttp's error answer names (RequestPath).

// Listener returns ln with every connection watched as above. Every
// service listens through it: ServeHTTP, and the gateway's fasthttp
// server.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

// Listen binds addr and returns the listener wrapped by Listener. A
// service binds its public port before it starts serving anything, the
// admin port included: /readyz answers 200 only once the public port
// accepts connections, and a port that is taken fails the start before
// the service was ever reported ready. Serve it with service.Serve.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return Listener(ln), nil
}

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c}, nil
}

// maxLine bounds the request line kept: enough for any path the services
// have; a longer one is named by its first maxLine bytes.
const maxLine = 512

// watchedConn follows the requests read on a connection: the request line
// (an upper-case method, a space and a target: a header line never looks
// like one, a field name has no space), the header lines up to the blank
// line, and their size. A request starts where the connection does and,
// after that, where an answer was written (Write, answerStarts): a client
// sends its next request when it has the answer to the last. A body is
// not followed, so a request pipelined behind another is not seen; the
// server's own limit and error answers then apply, with the path of the
// request before it. Nor is anything after a 101 (a WebSocket). Read and
// the Writes that need the request line never run at once: net/http
// writes its error after the read failed, fasthttp's ErrorHandler runs on
// the reading goroutine.
type watchedConn struct {
	net.Conn
	state    uint8
	head     int // bytes of the current request's line and headers so far
	lineLen  int // bytes of the current header line so far (without \n)
	lineCR   bool
	method   [16]byte
	nm       int // bytes in method
	line     [maxLine]byte
	n        int  // bytes in line
	refused  bool // answered 431 itself: the server's answers are dropped
	refusing error
}

// States of the scan.
const (
	atRequest  = iota // the next byte may start a request line
	inMethod          // reading what may be a method
	inTarget          // after the method's space
	inLine            // in a request line
	notRequest        // a line that is not a request line: skip it
	inHeaders         // in the header lines of a request
	inBody            // after the blank line: nothing to follow until Write
)

// errHeadersTooLarge ends a connection whose request's line and headers
// passed service.MaxHeaderBytes, after the 431: a read error net/http
// answers nothing to (a *net.OpError of Op "read").
var errHeadersTooLarge = errors.New("request line and headers too large")

func (c *watchedConn) Read(p []byte) (int, error) {
	if c.refused {
		return 0, c.refusing
	}
	n, err := c.Conn.Read(p)
	if c.scan(p[:n]) {
		c.refuse()
		return 0, c.refusing
	}
	return n, err
}

// scan follows requests over b; true when a request's line and headers
// passed service.MaxHeaderBytes.
func (c *watchedConn) scan(b []byte) bool {
	for len(b) > 0 {
		switch c.state {
		case atRequest:
			c.nm, c.head, c.state = 0, 0, inMethod
		case inMethod:
			ch := b[0]
			switch {
			case ch >= 'A' && ch <= 'Z' && c.nm < len(c.method):
				c.method[c.nm] = ch
				c.nm++
				b = b[1:]
			case ch == ' ' && c.nm > 0:
				c.state = inTarget
				b = b[1:]
			default:
				c.state = notRequest
			}
		case inTarget:
			switch b[0] {
			case '/', '*', 'h', 'H': // origin, asterisk or absolute form
				c.n = copy(c.line[:], c.method[:c.nm])
				c.line[c.n] = ' '
				c.n++
				c.head = c.nm + 1
				c.state = inLine
			default:
				c.state = notRequest
			}
		case inLine:
			end := bytes.IndexByte(b, '\n')
			if end < 0 {
				c.n += copy(c.line[c.n:], b)
				c.head += len(b)
				return c.head > service.MaxHeaderBytes
			}
			c.n += copy(c.line[c.n:], b[:end])
			c.head += end + 1
			c.lineLen, c.lineCR, c.state = 0, false, inHeaders
			b = b[end+1:]
		case inHeaders:
			end := bytes.IndexByte(b, '\n')
			if end < 0 {
				c.noteLine(b)
				c.head += len(b)
				return c.head > service.MaxHeaderBytes
			}
			c.noteLine(b[:end])
			c.head += end + 1
			if c.lineLen == 0 || c.lineLen == 1 && c.lineCR { // the blank line
				c.state = inBody
			}
			c.lineLen, c.lineCR = 0, false
			b = b[end+1:]
		case notRequest:
			end := bytes.IndexByte(b, '\n')
			if end < 0 {
				return false
			}
			c.state = atRequest
			b = b[end+1:]
		case inBody:
			return false
		}
	}
	return c.head > service.MaxHeaderBytes
}

// noteLine counts part of a header line: its length, and whether it is
// just "\r" so far.
func (c *watchedConn) noteLine(part []byte) {
	if len(part) > 0 {
		c.lineCR = c.lineLen == 0 && len(part) == 1 && part[0] == '\r'
	}
	c.lineLen += len(part)
}

// refuse answers 431 in the JSON format and waits for the client to read
// it, as net/http does after its own 431: the write side is closed and
// what the client still sends is read and dropped until it closes (at
// most half a second or 1 MiB), so that closing does not reset the
// connection before the client has read the answer.
func (c *watchedConn) refuse() {
	c.refused = true
	c.refusing = &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errHeadersTooLarge}
	if _, err := c.Conn.Write(rawErrorAnswer(http.StatusRequestHeaderFieldsTooLarge, "", c.path())); err != nil {
		return
	}
	_ = c.CloseWrite()
	_ = c.Conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	_, _ = io.Copy(io.Discard, io.LimitReader(c.Conn, 1<<20))
}

// RequestPath is the path of the latest request line read on c, a
// connection Listener accepted, decoded as a handler sees it: a server
// whose own error answer has lost the request line (fasthttp's
// ErrorHandler) names the path with it. "" when none was read or c is
// not Listener's.
func RequestPath(c net.Conn) string {
	if w, ok := c.(*watchedConn); ok {
		return w.path()
	}
	return ""
}

// path is the path of the latest request line read, decoded as a
// handler sees it; "" when none was read.
func (c *watchedConn) path() string {
	if c.n == 0 {
		return ""
	}
	_, target, _ := bytes.Cut(c.line[:c.n], []byte(" "))
	target, _, _ = bytes.Cut(target, []byte(" "))
	target = bytes.TrimRight(target, "\r")
	raw, _, _ := bytes.Cut(target, []byte("?"))
	if len(raw) == 0 || raw[0] != '/' && !bytes.Contains(raw, []byte("://")) {
		return "" // not a request line after all ("NOT HTTP AT ALL")
	}
	if u, err := url.Parse(string(raw)); err == nil {
		return u.Path
	}
	return string(raw)
}

// netHTTPErrorHeaders follow the status line of every answer net/http
// writes itself, before any handler (server.go, conn.serve); a handler's
// answer always has a Date between Connection and the blank line.
var netHTTPErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

func (c *watchedConn) Write(p []byte) (int, error) {
	if c.refused {
		return len(p), nil
	}
	if status, text, ok := netHTTPError(p); ok {
		if _, err := c.Conn.Write(rawErrorAnswer(status, text, c.path())); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if answerStarts(p) {
		c.state = atRequest
	}
	return c.Conn.Write(p)
}

// answerStarts reports whether p starts an answer to a request: a status
// line, but not of a 1xx (100 Continue comes before the body; after a 101
// the connection speaks WebSocket, whose frames are never followed).
func answerStarts(p []byte) bool {
	return bytes.HasPrefix(p, []byte("HTTP/1.")) && len(p) > 9 && p[9] != '1'
}

// CloseWrite half-closes the connection as net/http does after its 431
// (a *net.TCPConn's, hidden by the wrapper otherwise).
func (c *watchedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// netHTTPError parses an answer net/http wrote itself: its status and
// the text after the status line's code ("Bad Request: missing required
// Host header").
func netHTTPError(p []byte) (int, string, bool) {
	const proto = "HTTP/1.1 "
	if len(p) < len(proto)+3 || string(p[:len(proto)]) != proto {
		return 0, "", false
	}
	eol := bytes.IndexByte(p, '\r')
	if eol < 0 || !bytes.HasPrefix(p[eol:], netHTTPErrorHeaders) {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(p[len(proto) : len(proto)+3]))
	if err != nil {
		return 0, "", false
	}
	_, text, _ := bytes.Cut(p[len(proto):eol], []byte(" "))
	return status, string(text), true
}

// rawErrorAnswer is a whole HTTP/1.1 answer with the JSON error of a
// request refused before any handler, closing the connection.
func rawErrorAnswer(status int, text, path string) []byte {
	body := ErrorBody(status, CodeInvalidBody, preHandlerMessage(status, text), path)
	b := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		status, http.StatusText(status), JSONContentType, len(body))
	return append(b, body...)
}

// preHandlerMessage is the error message of a request refused before any
// handler: the same words on both servers.
func preHandlerMessage(status int, text string) string {
	switch status {
	case http.StatusRequestHeaderFieldsTooLarge:
		return HeadersTooLarge
	case http.StatusNotImplemented:
		return "unsupported transfer encoding"
	}
	if _, detail, ok := bytes.Cut([]byte(text), []byte(": ")); ok {
		return "malformed HTTP request: " + string(detail)
	}
	return "malformed HTTP request"
}

// HeadersTooLarge is the message of every 431, on every server.
var HeadersTooLarge = fmt.Sprintf("request line and headers larger than %d bytes", service.MaxHeaderBytes)
