package testaws

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Front is an HTTP server in front of a Moto that adds what moto lacks:
// AWS's public SSM parameters, the Pricing API, and insufficient capacity in
// CreateFleet. Every other request goes to moto unchanged, and nothing is
// sent anywhere but moto.
type Front struct {
	// Endpoint is its URL, http://127.0.0.1:PORT.
	Endpoint string

	moto  *Moto
	ec2   *ec2.Client
	proxy *httputil.ReverseProxy

	mu           sync.Mutex
	calls        map[string]int
	params       map[string]string
	insufficient map[offering]bool
	prices       map[priceKey]float64
	subnetZones  map[string]string
	templates    map[string]templateData
}

type offering struct{ instanceType, zone, capacityType string }

type priceKey struct{ region, instanceType string }

type templateData struct {
	securityGroupIDs []string
	httpTokens       string
}

// NewFront starts a Front for m, stopped when the test ends.
func NewFront(t testing.TB, m *Moto) *Front {
	t.Helper()
	target, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatalf("moto endpoint %q: %v", m.Endpoint, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A transport of its own, with no proxy from the environment: moto is
	// the only address the front ever contacts.
	transport := &http.Transport{}
	f := &Front{
		Endpoint: "http://" + l.Addr().String(),
		moto:     m,
		ec2:      m.EC2(),
		proxy: &httputil.ReverseProxy{
			Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
			Transport: transport,
		},
		calls:        map[string]int{},
		params:       map[string]string{},
		insufficient: map[offering]bool{},
		prices:       map[priceKey]float64{},
		subnetZones:  map[string]string{},
		templates:    map[string]templateData{},
	}
	srv := &http.Server{Handler: http.HandlerFunc(f.serve)}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		transport.CloseIdleConnections()
	})
	return f
}

// Config is an aws.Config like Moto.Config but pointing at the front.
func (f *Front) Config() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint: aws.String(f.Endpoint),
		HTTPClient:   &http.Client{Timeout: 60 * time.Second},
	}
}

// SetParameter sets an SSM parameter that GetParameter (and GetParameters)
// answer from the front, for the public /aws/service/... names moto refuses
// to store ("No access to reserved parameter name"). Other names go to moto.
func (f *Front) SetParameter(name, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.params[name] = value
}

// SetInsufficientCapacity makes CreateFleet treat the offering as out of
// capacity (instanceType, zone, capacityType "on-demand"|"spot"); on=false
// clears it.
func (f *Front) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := offering{instanceType, zone, capacityType}
	if on {
		f.insufficient[o] = true
	} else {
		delete(f.insufficient, o)
	}
}

// SetPrice sets the on-demand USD/h that the Pricing API's GetProducts
// returns for an instance type in a region (regionCode like us-east-1).
func (f *Front) SetPrice(region, instanceType string, usdPerHour float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prices[priceKey{region, instanceType}] = usdPerHour
}

// LaunchTemplate returns, for an instance launched through CreateFleet via
// the front, the security group IDs and metadata HttpTokens of the launch
// template it was launched from (moto's CreateFleet drops them from the
// instance).
func (f *Front) LaunchTemplate(instanceID string) (securityGroupIDs []string, httpTokens string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.templates[instanceID]
	return slices.Clone(d.securityGroupIDs), d.httpTokens, ok
}

// Calls returns how many requests of each action the front has seen
// ("ec2:CreateFleet", "ssm:GetParameter", "pricing:GetProducts", ...).
func (f *Front) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		calls[k] = v
	}
	return calls
}

func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	region, service, action, form := identify(r, body)
	f.mu.Lock()
	f.calls[service+":"+action]++
	f.mu.Unlock()
	switch service + ":" + action {
	case "ssm:GetParameter":
		f.getParameter(w, r, body, region)
	case "ssm:GetParameters":
		f.getParameters(w, r, body, region)
	case "pricing:GetProducts":
		f.getProducts(w, body)
	case "ec2:CreateFleet":
		f.createFleet(w, r, form)
	default:
		f.forward(w, r, body)
	}
}

// identify names a request's region, service and action: the service from
// the signature's credential scope, the action from X-Amz-Target (JSON
// protocols) or the Action field (query protocol).
func identify(r *http.Request, body []byte) (region, service, action string, form url.Values) {
	region, service = credentialScope(r.Header.Get("Authorization"))
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, op, _ := strings.Cut(target, ".")
		if service == "" {
			service = map[string]string{"AmazonSSM": "ssm", "AWSPriceListService": "pricing"}[prefix]
		}
		return region, service, op, nil
	}
	form = r.URL.Query()
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if posted, err := url.ParseQuery(string(body)); err == nil {
			form = posted
		}
	}
	if a := form.Get("Action"); a != "" {
		if service == "" {
			service = "ec2"
		}
		return region, service, a, form
	}
	return region, service, r.Method + " " + r.URL.Path, nil
}

// credentialScope reads region and service from a SigV4 Authorization
// header: "... Credential=AKID/20240101/us-east-1/ec2/aws4_request, ...".
func credentialScope(authorization string) (region, service string) {
	_, cred, ok := strings.Cut(authorization, "Credential=")
	if !ok {
		return "", ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return "", ""
	}
	return parts[2], parts[3]
}

// forward sends the request, its body restored, to moto.
func (f *Front) forward(w http.ResponseWriter, r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.proxy.ServeHTTP(w, r)
}

// exchange forwards the request to moto and returns moto's answer, for the
// front to change before it answers.
func (f *Front) exchange(r *http.Request, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.forward(rec, r, body)
	return rec
}

// writeChanged answers with moto's recorded answer and a new body.
func writeChanged(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"__type":"InternalFailure"}`)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSONError(w http.ResponseWriter, code, message string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"__type": code, "message": message})
}

func newID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CallsSince is what Calls counted between two readings.
func CallsSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
