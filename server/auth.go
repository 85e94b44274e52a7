package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// bearerAuth requires "Authorization: Bearer <key>" on next. The key and
// the token are hashed before the constant-time compare so that neither
// their contents nor the key's length leak through timing.
func bearerAuth(key string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(key))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if !ok || subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="forge"`)
			writeError(w, newAPIError(http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key",
				"missing or incorrect API key: send it as 'Authorization: Bearer KEY'"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
