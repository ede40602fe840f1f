// Package bedrocktest is a fake Amazon Bedrock runtime (and the STS that
// hands out web identity credentials) for tests, on net/http/httptest. It
// checks what AWS checks: every request's SigV4 signature is computed
// again from the fake's known credentials with the AWS SDK's own signer,
// over the request as received (its method, path, query, the headers it
// says it signed and its body), and a request whose signature, key,
// session token, scope or date is wrong gets AWS's 403 and error JSON,
// never an answer.
package bedrocktest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Test credentials the fake accepts from the start: put them in
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
const (
	AccessKeyID     = "AKIAIOSFODNN7EXAMPLE"
	SecretAccessKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

// Op is the API a request called.
type Op string

const (
	Converse       Op = "converse"
	ConverseStream Op = "converse-stream"
	Invoke         Op = "invoke"
	InvokeStream   Op = "invoke-with-response-stream"
	ListModels     Op = "foundation-models"
)

// Request is one request the fake accepted (its signature held).
type Request struct {
	Op        Op
	Model     string // the model id, unescaped from the path
	Body      []byte
	Header    http.Header
	AccessKey string // whose credentials signed it
}

// Event is one frame of a stream: an event of Type with a JSON Payload, or
// an exception frame when Exception is set (Type is then its
// :exception-type, such as "throttlingException").
type Event struct {
	Type      string
	Payload   string
	Exception bool
}

// Reply is what the fake answers one request. A zero Reply is a
// well-formed answer generated from the request (Default).
type Reply struct {
	// Status and Code, when Status is not 0 or 200, make an AWS error
	// answer: x-amzn-ErrorType Code, body {"message": Message}.
	Status  int
	Code    string
	Message string
	// JSON is a non-stream answer's body.
	JSON string
	// Events are a stream's frames (for InvokeStream, each event's
	// Payload is a Messages event, wrapped in a chunk frame by the fake).
	Events []Event
	// CutAfter > 0 sends only that many frames, then half of the next,
	// and drops the connection.
	CutAfter int
	// Raw, when set, writes the 200 answer's body instead of JSON or
	// Events (after the headers either would have): a test's own bytes,
	// such as a frame whose prelude declares 4 GiB. An error it returns
	// drops the connection.
	Raw func(w io.Writer) error
}

// Server is the fake. Set its fields before the first request.
type Server struct {
	*httptest.Server
	Region string // the signing region it expects; "us-east-1" by default

	// Reply, when set, answers each accepted request; nil, or a zero
	// Reply, means Default.
	Reply func(r Request) Reply

	// The web identity STS (AssumeRoleWithWebIdentity at POST /): it
	// accepts Token for RoleARN and hands out new credentials valid for
	// CredentialLifetime (15 minutes when 0).
	RoleARN, Token     string
	CredentialLifetime time.Duration

	mu        sync.Mutex // guards the fields below
	secrets   map[string]credential
	requests  []Request
	rejected  []string // the error codes of refused requests
	stsCalls  int
	issuedKey int
}

type credential struct{ secret, token string }

// New starts a fake that accepts AccessKeyID and SecretAccessKey. Close
// it when done (t.Cleanup(s.Close)).
func New() *Server {
	s := &Server{Region: "us-east-1", secrets: map[string]credential{AccessKeyID: {secret: SecretAccessKey}}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Requests returns the requests accepted so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Rejected returns the AWS error codes of the requests refused for their
// credentials or signature, in order.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// STSCalls is how many credentials the STS handed out.
func (s *Server) STSCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stsCalls
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/" {
		s.serveSTS(w, r, body)
		return
	}
	key, code, msg := s.verify(r, body)
	if code != "" {
		s.mu.Lock()
		s.rejected = append(s.rejected, code)
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, code, msg)
		return
	}
	req := Request{Body: body, Header: r.Header.Clone(), AccessKey: key}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/foundation-models":
		req.Op = ListModels
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/model/"):
		// The id is one escaped segment: split the path as it came.
		rest := strings.TrimPrefix(r.URL.EscapedPath(), "/model/")
		id, action, ok := strings.Cut(rest, "/")
		model, err := url.PathUnescape(id)
		if !ok || err != nil {
			writeError(w, http.StatusNotFound, "UnknownOperationException", "")
			return
		}
		req.Op, req.Model = Op(action), model
	default:
		writeError(w, http.StatusNotFound, "UnknownOperationException", "")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	reply := s.Reply
	s.mu.Unlock()
	var rp Reply
	if reply != nil {
		rp = reply(req)
	}
	if rp.Status == 0 && rp.JSON == "" && rp.Events == nil && rp.Raw == nil {
		rp = Default(req)
	}
	if rp.Status != 0 && rp.Status != http.StatusOK {
		writeError(w, rp.Status, rp.Code, rp.Message)
		return
	}
	w.Header().Set("X-Amzn-Requestid", "req-"+strconv.Itoa(len(s.Requests())))
	switch {
	case rp.Raw != nil:
		w.Header().Set("Content-Type", "application/json")
		if req.Op == ConverseStream || req.Op == InvokeStream {
			w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		}
		if err := rp.Raw(w); err != nil {
			panic(http.ErrAbortHandler)
		}
	case req.Op == ConverseStream, req.Op == InvokeStream:
		writeStream(w, req.Op, rp)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, rp.JSON)
	}
}

// Default is the fake's own answer to r: a short text reply naming the
// model, with usage (for a stream, every event a real one has).
func Default(r Request) Reply {
	text := "hello from " + r.Model
	switch r.Op {
	case ListModels:
		return Reply{JSON: `{"modelSummaries":[]}`}
	case Converse:
		return Reply{JSON: `{"output":{"message":{"role":"assistant","content":[{"text":` + quote(text) + `}]}},"stopReason":"end_turn",` +
			`"usage":{"inputTokens":11,"outputTokens":4,"totalTokens":15},"metrics":{"latencyMs":12}}`}
	case ConverseStream:
		return Reply{Events: []Event{
			{Type: "messageStart", Payload: `{"role":"assistant","p":"abcd"}`},
			{Type: "contentBlockDelta", Payload: `{"contentBlockIndex":0,"delta":{"text":"hello from "},"p":"ab"}`},
			{Type: "contentBlockDelta", Payload: `{"contentBlockIndex":0,"delta":{"text":` + quote(r.Model) + `}}`},
			{Type: "contentBlockStop", Payload: `{"contentBlockIndex":0}`},
			{Type: "messageStop", Payload: `{"stopReason":"end_turn"}`},
			{Type: "metadata", Payload: `{"usage":{"inputTokens":11,"outputTokens":4,"totalTokens":15},"metrics":{"latencyMs":12}}`},
		}}
	case Invoke:
		return Reply{JSON: `{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":` + quote(text) + `}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":4}}`}
	case InvokeStream:
		return Reply{Events: MessagesEvents(text)}
	}
	return Reply{}
}

// MessagesEvents is a Messages event stream answering text, as Bedrock
// sends it inside chunk frames (message_stop carries Bedrock's
// invocation metrics).
func MessagesEvents(text string) []Event {
	return []Event{
		{Payload: `{"type":"message_start","message":{"id":"msg_bdrk_1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"usage":{"input_tokens":11,"output_tokens":1}}}`},
		{Payload: `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{Payload: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + quote(text) + `}}`},
		{Payload: `{"type":"content_block_stop","index":0}`},
		{Payload: `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`},
		{Payload: `{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":11,"outputTokenCount":4,"invocationLatency":30,"firstByteLatency":10}}`},
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeError writes AWS's error answer.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"message":`+quote(msg)+`}`)
}

// writeStream writes rp.Events as event-stream frames, cut as rp says.
func writeStream(w http.ResponseWriter, op Op, rp Reply) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	for i, ev := range rp.Events {
		b := Frame(op, ev)
		if rp.CutAfter > 0 && i == rp.CutAfter {
			_, _ = w.Write(b[:len(b)/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection drops mid-frame
		}
		_, _ = w.Write(b)
		w.(http.Flusher).Flush()
	}
}

// Frame is ev as the frame a stream of op carries (for InvokeStream, its
// Payload, a Messages event, wrapped in a chunk frame), for a Reply's Raw.
func Frame(op Op, ev Event) []byte {
	msg := eventstream.Message{Payload: []byte(ev.Payload)}
	if ev.Exception {
		msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
		msg.Headers.Set(":exception-type", eventstream.StringValue(ev.Type))
	} else {
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		typ := ev.Type
		if op == InvokeStream {
			typ = "chunk"
			msg.Payload = []byte(`{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(ev.Payload)) + `","p":"abcdefgh"}`)
		}
		msg.Headers.Set(":event-type", eventstream.StringValue(typ))
	}
	msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, msg); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// verify recomputes r's SigV4 signature with the SDK's signer from the
// credentials its access key names and compares it with the one r
// carries. It returns the access key, or AWS's error code and message.
func (s *Server) verify(r *http.Request, body []byte) (key, code, msg string) {
	const (
		invalidSig = "InvalidSignatureException"
		badToken   = "UnrecognizedClientException"
	)
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return "", "MissingAuthenticationTokenException", "Missing Authentication Token"
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return "", "IncompleteSignatureException", "Authorization header requires Credential, SignedHeaders and Signature."
	}
	key = scope[0]
	s.mu.Lock()
	c, known := s.secrets[key]
	s.mu.Unlock()
	if !known || c.token != r.Header.Get("X-Amz-Security-Token") {
		return "", badToken, "The security token included in the request is invalid."
	}
	if scope[2] != s.Region || scope[3] != "bedrock" || scope[4] != "aws4_request" {
		return "", invalidSig, "Credential should be scoped to a valid region and service (" + strings.Join(scope[1:], "/") + ")."
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || scope[1] != at.Format("20060102") {
		return "", invalidSig, "X-Amz-Date is missing or does not match the credential scope."
	}
	if d := time.Since(at); d > 15*time.Minute || d < -15*time.Minute {
		return "", invalidSig, "Signature expired: " + at.Format("20060102T150405Z") + " is not within 15 minutes of now."
	}

	// The request as received, with only the headers it says it signed.
	cp, err := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return "", invalidSig, err.Error()
	}
	cp.Host = r.Host
	cp.ContentLength = r.ContentLength
	for h := range strings.SplitSeq(fields["SignedHeaders"], ";") {
		if h == "host" || h == "content-length" {
			continue
		}
		if vs := r.Header.Values(h); vs != nil {
			cp.Header[textproto.CanonicalMIMEHeaderKey(h)] = vs
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: key, SecretAccessKey: c.secret, SessionToken: c.token}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, cp, hex.EncodeToString(sum[:]), "bedrock", s.Region, at); err != nil {
		return "", invalidSig, err.Error()
	}
	if cp.Header.Get("Authorization") != auth {
		return "", invalidSig, "The request signature we calculated does not match the signature you provided. " +
			"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."
	}
	return key, "", ""
}

// serveSTS answers AssumeRoleWithWebIdentity (the awsquery protocol: a
// form POST, an XML answer) for the fake's RoleARN and Token with new
// credentials the fake then accepts.
func (s *Server) serveSTS(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("Action") != "AssumeRoleWithWebIdentity" {
		http.Error(w, "unsupported STS call", http.StatusBadRequest)
		return
	}
	if s.RoleARN == "" || form.Get("RoleArn") != s.RoleARN || form.Get("WebIdentityToken") != s.Token {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>`+
			`<Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error>`+
			`<RequestId>sts-denied</RequestId></ErrorResponse>`)
		return
	}
	life := s.CredentialLifetime
	if life == 0 {
		life = 15 * time.Minute
	}
	s.mu.Lock()
	s.stsCalls++
	s.issuedKey++
	key := fmt.Sprintf("ASIATESTWEBIDENTITY%04d", s.issuedKey)
	c := credential{secret: "web-identity-secret-" + strconv.Itoa(s.issuedKey), token: "web-identity-session-" + strconv.Itoa(s.issuedKey)}
	s.secrets[key] = c
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:llm:router</SubjectFromWebIdentityToken>
    <AssumedRoleUser><Arn>%s/router</Arn><AssumedRoleId>AROATEST:router</AssumedRoleId></AssumedRoleUser>
    <Credentials>
      <AccessKeyId>%s</AccessKeyId>
      <SecretAccessKey>%s</SecretAccessKey>
      <SessionToken>%s</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
    <Provider>oidc.eks.us-east-1.amazonaws.com</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata><RequestId>sts-%d</RequestId></ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>`, s.RoleARN, key, c.secret, c.token, time.Now().Add(life).UTC().Format(time.RFC3339), s.issuedKey)
}
