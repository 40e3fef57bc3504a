package rewrite

import (
	"strings"

	"github.com/shepherd-proxy/shepherd/rewrite/conv"
	"github.com/shepherd-proxy/shepherd/rewrite/jsonkit"
)

// This file holds what the Chat Completions and Responses packages share
// besides the turn edits (turnedit_openai.go): shepherd's own errors in
// OpenAI's error shape and the role mapping; each other API renders its
// errors in its own package (api.go).

// OpenAIErrorType maps an HTTP status to the OpenAI error.type.
func OpenAIErrorType(status int) string {
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

// OpenAIError renders {"error":{"message":…,"type":…,"param":null,"code":null}}.
func OpenAIError(status int, message string) []byte {
	b := append([]byte(nil), `{"error":{"message":`...)
	b = jsonkit.AppendString(b, message)
	b = append(b, `,"type":`...)
	b = jsonkit.AppendString(b, OpenAIErrorType(status))
	return append(b, `,"param":null,"code":null}}`...)
}

// ChatRole maps an OpenAI message role to the neutral role: user,
// assistant, system and developer (system), tool and function (tool); any
// other role is kept as it is.
func ChatRole(r string) conv.Role {
	switch r {
	case "user":
		return conv.RoleUser
	case "assistant":
		return conv.RoleAssistant
	case "system", "developer":
		return conv.RoleSystem
	case "tool", "function":
		return conv.RoleTool
	}
	return conv.Role(strings.Clone(r))
}
