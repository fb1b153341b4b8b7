package httpapi

import "github.com/gin-gonic/gin"

// WriteJSON writes body (a JSON document) with status and gin's JSON
// content type.
func WriteJSON(c *gin.Context, status int, body []byte) {
	c.Data(status, "application/json; charset=utf-8", body)
}
