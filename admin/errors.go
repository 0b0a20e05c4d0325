package admin

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/admin/api"
)

// apiError is an error answer: its status and its body.
type apiError struct {
	status int
	errorBody
}

// errorBody and problem are the API's names for an error answer's body
// and one of its problems.
type (
	errorBody = api.Error
	problem   = api.Problem
)

func (e *apiError) Error() string { return e.Message }

// errorf builds an apiError with a message and no field.
func errorf(status int, msg string) *apiError {
	return &apiError{status: status, errorBody: errorBody{Message: msg}}
}

// problems builds an apiError from field problems: the message joins them,
// and Field is set when there is exactly one.
func problems(status int, ps []problem) *apiError {
	e := &apiError{status: status, errorBody: errorBody{Problems: ps}}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Error
		if p.Field != "" {
			msgs[i] = p.Field + ": " + p.Error
		}
	}
	e.Message = "admin: " + strings.Join(msgs, "; ")
	if len(ps) == 1 {
		e.Field = ps[0].Field
	}
	return e
}

// writeJSON writes v as an indented JSON answer with status: what an
// operator reads with curl.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	writeBytes(w, status, b, err)
}

// writeCompact writes v as a compact JSON answer: long series for a program.
func writeCompact(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	writeBytes(w, status, b, err)
}

func writeBytes(w http.ResponseWriter, status int, b []byte, err error) {
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Message: "admin: encoding the answer: " + err.Error()})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError writes e as a JSON error answer.
func writeError(w http.ResponseWriter, e *apiError) { writeJSON(w, e.status, e.errorBody) }
