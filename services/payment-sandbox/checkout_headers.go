package main

import (
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/boxoffice/boxoffice/pkg/httpapi"
)

// The checkout page is where a payment is made, so no other page may frame
// it (a framed Pay button can be clicked through a decoy: clickjacking).
// It has no script at all; its style is a file.

const checkoutStyle = "body{font-family:system-ui,sans-serif;max-width:28rem;margin:2rem auto;padding:0 1rem}" +
	"button{padding:.6rem 1.2rem;margin:.3rem}\n"

// checkoutCSS: GET /checkout.css.
func checkoutCSS(c *gin.Context) {
	httpapi.SetSecurityHeaders(c, "default-src 'none'; frame-ancestors 'none'")
	c.Header("Cache-Control", "public, max-age=3600")
	c.Data(http.StatusOK, "text/css; charset=utf-8", []byte(checkoutStyle))
}

// checkoutCSP is the checkout page's policy: no script, styles from this
// origin, forms posted only here — and to the return URL's origin, where
// the Pay and Decline posts are redirected (CSP checks a form's redirects).
func checkoutCSP(returnURL string) string {
	formAction := "'self'"
	if u, err := url.Parse(returnURL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		formAction += " " + u.Scheme + "://" + u.Host
	}
	return "default-src 'none'; style-src 'self'; form-action " + formAction +
		"; base-uri 'none'; frame-ancestors 'none'"
}
