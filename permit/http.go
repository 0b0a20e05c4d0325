package permit

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/permit/permitpb"
)

// DefaultMaxBodyBytes bounds an HTTP/JSON request body.
const DefaultMaxBodyBytes = 4 << 10

// handler is the HTTP/JSON API of a Service (see the package doc).
type handler struct {
	svc     *Service
	maxBody int64
	// authorized reports whether a request may use the API (the bearer
	// token on TCP).
	authorized func(r *http.Request) bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header()["Www-Authenticate"] = []string{`Bearer realm="sluice permits"`}
		writeJSON(w, http.StatusUnauthorized, errorJSON{Error: "permit: missing or wrong bearer token (Authorization: Bearer TOKEN)"})
		return
	}
	path := r.URL.Path
	rest, ok := strings.CutPrefix(path, "/v1/permits")
	if !ok {
		writeJSON(w, http.StatusNotFound, errorJSON{Error: "permit: no such endpoint: " + path + " (POST /v1/permits, POST /v1/permits/{id}/release)"})
		return
	}
	var id string
	switch {
	case rest == "":
	case strings.HasPrefix(rest, "/") && strings.HasSuffix(rest, "/release") && len(rest) > len("//release"):
		id = rest[1 : len(rest)-len("/release")]
	default:
		writeJSON(w, http.StatusNotFound, errorJSON{Error: "permit: no such endpoint: " + path + " (POST /v1/permits, POST /v1/permits/{id}/release)"})
		return
	}
	if r.Method != http.MethodPost {
		w.Header()["Allow"] = []string{http.MethodPost}
		writeJSON(w, http.StatusMethodNotAllowed, errorJSON{Error: "permit: " + r.Method + " " + path + ": only POST"})
		return
	}
	if ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, errorJSON{Error: "permit: want Content-Type: application/json"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorJSON{Error: "permit: body larger than " + strconv.FormatInt(h.maxBody, 10) + " bytes"})
			return
		}
		writeJSON(w, http.StatusBadRequest, errorJSON{Error: "permit: reading the body: " + err.Error()})
		return
	}
	sess, err := sessionOfHeader(r.Header)
	if err != nil {
		writeError(w, err)
		return
	}
	if id == "" {
		h.acquire(w, r, sess, body)
	} else {
		h.release(w, sess, id, body)
	}
}

// sessionOfHeader returns the Session of a request's permitpb.SessionHeader.
func sessionOfHeader(h http.Header) (Session, error) {
	return sessionOfValues(h[permitpb.SessionHeader])
}

func (h *handler) acquire(w http.ResponseWriter, r *http.Request, sess Session, body []byte) {
	req, err := parseAcquire(body)
	if err != nil {
		writeError(w, err)
		return
	}
	req.Session = sess
	g, rej, err := h.svc.Acquire(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	if rej.Rejected() {
		writeJSON(w, rej.Status(), refusalOf(rej, w.Header()))
		return
	}
	writeJSON(w, http.StatusOK, grantJSON{ID: g.ID.String(), Group: g.Group, LeaseMS: g.Lease.Milliseconds(),
		Shadowed: shadowedName(g.Shadowed)})
}

func (h *handler) release(w http.ResponseWriter, sess Session, idText string, body []byte) {
	id, err := ParseID(idText)
	if err != nil {
		writeJSON(w, http.StatusNotFound, resultJSON{Result: Unknown.String(), Error: err.Error()})
		return
	}
	o, lat, cost, err := parseRelease(body)
	if err != nil {
		writeError(w, err)
		return
	}
	res, err := h.svc.ReleaseCostIn(sess, id, o, lat, cost)
	if err != nil {
		writeError(w, err)
		return
	}
	switch res {
	case Released, AlreadyReleased:
		writeJSON(w, http.StatusOK, resultJSON{Result: res.String()})
	case Expired:
		writeJSON(w, http.StatusGone, resultJSON{Result: res.String(), Error: "permit: the lease had expired: its slot was freed then, and the permit counted as expired"})
	default:
		writeJSON(w, http.StatusNotFound, resultJSON{Result: res.String(), Error: "permit: no permit " + idText})
	}
}

// writeError answers an error of Acquire or Release.
func writeError(w http.ResponseWriter, err error) {
	var fe *FieldError
	switch {
	case errors.As(err, &fe):
		writeJSON(w, http.StatusBadRequest, errorJSON{Error: err.Error(), Field: fe.Field})
	case errors.Is(err, ErrNoGroup):
		writeJSON(w, http.StatusNotFound, errorJSON{Error: err.Error(), Field: "group"})
	case errors.Is(err, ErrInvalid):
		writeJSON(w, http.StatusBadRequest, errorJSON{Error: err.Error()})
	case errors.Is(err, ErrClosed):
		writeJSON(w, http.StatusServiceUnavailable, errorJSON{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, errorJSON{Error: err.Error()})
	}
}

// The answers' fixed header values, shared: net/http only reads them.
var (
	jsonType = []string{"application/json"}
	nosniff  = []string{"nosniff"}
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // the types above always marshal
		status, b = http.StatusInternalServerError, []byte(`{"error":"permit: encoding the answer"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = jsonType
	h["X-Content-Type-Options"] = nosniff
	w.WriteHeader(status)
	_, _ = w.Write(b) // the client may be gone: nothing to do
}
