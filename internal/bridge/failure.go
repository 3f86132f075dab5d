package bridge

import (
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
)

// failure is what the bridge returns (as RoundTrip's error) when talking
// to the upstream on a caller's behalf failed: the reply the caller gets,
// a fixed message with data.reason, and the cause, which holds socket
// addresses and the upstream's words and so never reaches a reply. The
// proxy, the one writer, writes the reply (errors.As finds it) and logs
// the cause with the request's line.
type failure struct {
	reply *reply.Error
	cause error
}

// failed is the failure of status with message and reason, caused by cause.
func failed(status int, message, reason string, cause error) error {
	return &failure{reply: &reply.Error{Status: status, Code: reply.CodeInternalError, Message: message,
		Data: map[string]string{"reason": reason}}, cause: cause}
}

// refuse is the bridge's own refusal of a request, returned as RoundTrip's
// error for the proxy to write (with the caller's id, Retry-After when
// set) as httputil's transport leaves replies to its ErrorHandler: the
// caller's own mistake or a limit, nothing to log as a failure (it wraps
// no cause).
func refuse(status, code int, message string, data any) error {
	return &failure{reply: &reply.Error{Status: status, Code: code, Message: message, Data: data}}
}

func (f *failure) Error() string {
	if f.cause == nil {
		return f.reply.Message
	}
	return f.reply.Message + ": " + f.cause.Error()
}

// Unwrap is the cause (nil for a refusal): errors.Is still sees a timeout
// or a refused connection under it.
func (f *failure) Unwrap() error { return f.cause }

// As makes the failure's reply what errors.As finds for a *reply.Error.
func (f *failure) As(target any) bool {
	if p, ok := target.(**reply.Error); ok {
		*p = f.reply
		return true
	}
	return false
}

// badGateway is the status of every failure of the upstream's.
const badGateway = http.StatusBadGateway

// answered is the bridge's own answer of result to a request, returned as
// RoundTrip's error (a *reply.Answer) for the proxy, the one writer, to
// write with the caller's id, as a refusal is.
func answered(result json.RawMessage) error { return &reply.Answer{Result: result} }

// emptyResult is the result of a request that returns nothing (ping,
// logging/setLevel, resources/subscribe).
var emptyResult = json.RawMessage("{}")
