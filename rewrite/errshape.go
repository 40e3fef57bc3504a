package rewrite

import (
	"strconv"

	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file renders shepherd's own errors in each API's error shape.

// anthropicErrorType maps an HTTP status to Anthropic's error.type.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "api_error" // 500, 502, 503 and anything else
}

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

// geminiStatus maps an HTTP status to the Google RPC status name.
func geminiStatus(status int) string {
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 500:
		return "INTERNAL"
	case 501:
		return "UNIMPLEMENTED"
	case 502, 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 400 && status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// anthropicError renders {"type":"error","error":{"type":…,"message":…}}.
func anthropicError(status int, message string) []byte {
	b := append([]byte(nil), `{"type":"error","error":{"type":`...)
	b = jsonkit.AppendString(b, anthropicErrorType(status))
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	return append(b, "}}"...)
}

// openAIError renders {"error":{"message":…,"type":…,"param":null,"code":null}}.
func openAIError(status int, message string) []byte {
	b := append([]byte(nil), `{"error":{"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"type":`...)
	b = jsonkit.AppendString(b, openAIErrorType(status))
	return append(b, `,"param":null,"code":null}}`...)
}

// geminiError renders {"error":{"code":…,"message":…,"status":…}}.
func geminiError(status int, message string) []byte {
	b := append([]byte(nil), `{"error":{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"status":`...)
	b = jsonkit.AppendString(b, geminiStatus(status))
	return append(b, "}}"...)
}
