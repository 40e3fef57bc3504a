package rewrite

import (
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file renders shepherd's own errors in OpenAI's error shape, shared by
// Chat Completions and Responses; each other API renders its own in its
// *_api.go file.

// openAIErrorType maps an HTTP status to the OpenAI error.type.
func openAIErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error" // 400, 413 and other client errors
	}
	return "server_error"
}

// openAIError renders {"error":{"message":…,"type":…,"param":null,"code":null}}.
func openAIError(status int, message string) []byte {
	b := append([]byte(nil), `{"error":{"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"type":`...)
	b = jsonkit.AppendString(b, openAIErrorType(status))
	return append(b, `,"param":null,"code":null}}`...)
}
