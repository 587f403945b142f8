package testaws

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
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

// Pricing API

// getProducts answers GetProducts from the prices set with SetPrice, in AWS's
// price list document shape, a page of MaxResults at a time.
func (f *Front) getProducts(w http.ResponseWriter, body []byte) {
	var in struct {
		ServiceCode string
		Filters     []struct{ Type, Field, Value string }
		NextToken   string
		MaxResults  int
	}
	if err := json.Unmarshal(body, &in); err != nil {
		writeJSONError(w, "InvalidParameterException", err.Error())
		return
	}
	start := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(in.NextToken)
		if err != nil || n < 0 {
			writeJSONError(w, "InvalidNextTokenException", "invalid NextToken "+in.NextToken)
			return
		}
		start = n
	}
	size := in.MaxResults
	if size <= 0 {
		size = 100
	}
	var priceList []string
	if in.ServiceCode == "AmazonEC2" {
		f.mu.Lock()
		keys := make([]priceKey, 0, len(f.prices))
		for k := range f.prices {
			keys = append(keys, k)
		}
		prices := f.prices
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].region != keys[j].region {
				return keys[i].region < keys[j].region
			}
			return keys[i].instanceType < keys[j].instanceType
		})
	keys:
		for _, k := range keys {
			attrs := productAttributes(k)
			for _, flt := range in.Filters {
				if !filterMatches(attrs, flt.Type, flt.Field, flt.Value) {
					continue keys
				}
			}
			doc, err := json.Marshal(priceDocument(k, attrs, prices[k]))
			if err != nil {
				f.mu.Unlock()
				writeJSONError(w, "InternalErrorException", err.Error())
				return
			}
			priceList = append(priceList, string(doc))
		}
		f.mu.Unlock()
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": []string{}}
	if start < len(priceList) {
		end := min(start+size, len(priceList))
		out["PriceList"] = priceList[start:end]
		if end < len(priceList) {
			out["NextToken"] = strconv.Itoa(end)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// regionNames are the Pricing API's location attribute, for the regions
// tests are likely to ask about.
var regionNames = map[string]string{
	"us-east-1":      "US East (N. Virginia)",
	"us-east-2":      "US East (Ohio)",
	"us-west-1":      "US West (N. California)",
	"us-west-2":      "US West (Oregon)",
	"ca-central-1":   "Canada (Central)",
	"eu-west-1":      "EU (Ireland)",
	"eu-west-2":      "EU (London)",
	"eu-west-3":      "EU (Paris)",
	"eu-central-1":   "EU (Frankfurt)",
	"eu-north-1":     "EU (Stockholm)",
	"ap-northeast-1": "Asia Pacific (Tokyo)",
	"ap-northeast-2": "Asia Pacific (Seoul)",
	"ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-southeast-2": "Asia Pacific (Sydney)",
	"ap-south-1":     "Asia Pacific (Mumbai)",
	"sa-east-1":      "South America (Sao Paulo)",
}

// productAttributes are those of AWS's product for Linux, shared tenancy,
// no pre-installed software, on-demand use: the price SetPrice sets.
func productAttributes(k priceKey) map[string]string {
	attrs := map[string]string{
		"servicecode":     "AmazonEC2",
		"servicename":     "Amazon Elastic Compute Cloud",
		"instanceType":    k.instanceType,
		"regionCode":      k.region,
		"locationType":    "AWS Region",
		"operatingSystem": "Linux",
		"tenancy":         "Shared",
		"capacitystatus":  "Used",
		"preInstalledSw":  "NA",
		"licenseModel":    "No License required",
		"operation":       "RunInstances",
		"marketoption":    "OnDemand",
	}
	if family, _, ok := strings.Cut(k.instanceType, "."); ok {
		attrs["instanceFamily"] = family
	}
	if name, ok := regionNames[k.region]; ok {
		attrs["location"] = name
	}
	return attrs
}

// filterMatches applies one GetProducts filter; a product without the
// filter's field does not match, as in AWS.
func filterMatches(attrs map[string]string, typ, field, value string) bool {
	var got string
	found := false
	for k, v := range attrs {
		if strings.EqualFold(k, field) {
			got, found = v, true
			break
		}
	}
	if !found {
		return false
	}
	switch typ {
	case "TERM_MATCH", "EQUALS", "":
		return got == value
	case "CONTAINS":
		return strings.Contains(got, value)
	case "ANY_OF":
		return slices.Contains(strings.Split(value, ","), got)
	case "NONE_OF":
		return !slices.Contains(strings.Split(value, ","), got)
	}
	return false
}

type priceDoc struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
		SKU           string            `json:"sku"`
	} `json:"product"`
	ServiceCode string `json:"serviceCode"`
	Terms       struct {
		OnDemand map[string]priceTerm `json:"OnDemand"`
	} `json:"terms"`
	Version         string `json:"version"`
	PublicationDate string `json:"publicationDate"`
}

type priceTerm struct {
	PriceDimensions map[string]priceDimension `json:"priceDimensions"`
	SKU             string                    `json:"sku"`
	EffectiveDate   string                    `json:"effectiveDate"`
	OfferTermCode   string                    `json:"offerTermCode"`
	TermAttributes  map[string]string         `json:"termAttributes"`
}

type priceDimension struct {
	Unit         string            `json:"unit"`
	EndRange     string            `json:"endRange"`
	Description  string            `json:"description"`
	AppliesTo    []string          `json:"appliesTo"`
	RateCode     string            `json:"rateCode"`
	BeginRange   string            `json:"beginRange"`
	PricePerUnit map[string]string `json:"pricePerUnit"`
}

// priceDocument is one PriceList entry, shaped like AWS's, with the on-demand
// term and rate codes AWS uses for every on-demand EC2 price.
func priceDocument(k priceKey, attrs map[string]string, usdPerHour float64) priceDoc {
	h := fnv.New64a()
	_, _ = h.Write([]byte(k.region + "/" + k.instanceType))
	sku := strings.ToUpper(strconv.FormatUint(h.Sum64(), 36))
	term, dim := sku+".JRTCKXETXF", sku+".JRTCKXETXF.6YS6EN2CT7"
	var d priceDoc
	d.Product.ProductFamily = "Compute Instance"
	d.Product.Attributes = attrs
	d.Product.SKU = sku
	d.ServiceCode = "AmazonEC2"
	d.Version = "20240101000000"
	d.PublicationDate = "2024-01-01T00:00:00Z"
	d.Terms.OnDemand = map[string]priceTerm{term: {
		SKU:            sku,
		EffectiveDate:  "2024-01-01T00:00:00Z",
		OfferTermCode:  "JRTCKXETXF",
		TermAttributes: map[string]string{},
		PriceDimensions: map[string]priceDimension{dim: {
			Unit:         "Hrs",
			EndRange:     "Inf",
			BeginRange:   "0",
			Description:  fmt.Sprintf("$%.4f per On Demand Linux %s Instance Hour", usdPerHour, k.instanceType),
			AppliesTo:    []string{},
			RateCode:     dim,
			PricePerUnit: map[string]string{"USD": strconv.FormatFloat(usdPerHour, 'f', 10, 64)},
		}},
	}}
	return d
}

// SSM

type ssmParameter struct {
	Name             string  `json:"Name"`
	Type             string  `json:"Type"`
	Value            string  `json:"Value"`
	Version          int     `json:"Version"`
	DataType         string  `json:"DataType"`
	ARN              string  `json:"ARN"`
	LastModifiedDate float64 `json:"LastModifiedDate"`
}

// parameter is the parameter set with SetParameter under name, if any.
func (f *Front) parameter(name, region string) (ssmParameter, bool) {
	f.mu.Lock()
	value, ok := f.params[name]
	f.mu.Unlock()
	if !ok {
		return ssmParameter{}, false
	}
	if region == "" {
		region = Region
	}
	return ssmParameter{
		Name:             name,
		Type:             "String",
		Value:            value,
		Version:          1,
		DataType:         "text",
		ARN:              fmt.Sprintf("arn:aws:ssm:%s::parameter/%s", region, strings.TrimPrefix(name, "/")),
		LastModifiedDate: float64(time.Now().Unix()),
	}, true
}

func (f *Front) getParameter(w http.ResponseWriter, r *http.Request, body []byte, region string) {
	var in struct{ Name string }
	if err := json.Unmarshal(body, &in); err == nil {
		if p, ok := f.parameter(in.Name, region); ok {
			writeJSON(w, http.StatusOK, map[string]any{"Parameter": p})
			return
		}
	}
	f.forward(w, r, body)
}

// getParameters answers the names set with SetParameter and asks moto for
// the others.
func (f *Front) getParameters(w http.ResponseWriter, r *http.Request, body []byte, region string) {
	var in map[string]json.RawMessage
	var names []string
	if json.Unmarshal(body, &in) != nil || json.Unmarshal(in["Names"], &names) != nil {
		f.forward(w, r, body)
		return
	}
	var own []ssmParameter
	var rest []string
	for _, name := range names {
		if p, ok := f.parameter(name, region); ok {
			own = append(own, p)
		} else {
			rest = append(rest, name)
		}
	}
	if len(own) == 0 {
		f.forward(w, r, body)
		return
	}
	if len(rest) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"Parameters": own, "InvalidParameters": []string{}})
		return
	}
	in["Names"], _ = json.Marshal(rest)
	restBody, _ := json.Marshal(in)
	rec := f.exchange(r, restBody)
	var out map[string]json.RawMessage
	var params []json.RawMessage
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		writeChanged(w, rec, rec.Body.Bytes())
		return
	}
	if raw, ok := out["Parameters"]; ok {
		_ = json.Unmarshal(raw, &params)
	}
	for _, p := range own {
		raw, _ := json.Marshal(p)
		params = append(params, raw)
	}
	out["Parameters"], _ = json.Marshal(params)
	merged, _ := json.Marshal(out)
	writeChanged(w, rec, merged)
}

// EC2 CreateFleet

// fleetConfig is one LaunchTemplateConfigs entry of a CreateFleet request:
// its own fields (the launch template specification) and its overrides,
// each keyed by the field names after "LaunchTemplateConfigs.N." and
// "Overrides.M." respectively.
type fleetConfig struct {
	fields    url.Values
	overrides []url.Values
}

func (c fleetConfig) templateID() string {
	return c.fields.Get("LaunchTemplateSpecification.LaunchTemplateId")
}
func (c fleetConfig) templateName() string {
	return c.fields.Get("LaunchTemplateSpecification.LaunchTemplateName")
}

func (c fleetConfig) templateVersion() string {
	if v := c.fields.Get("LaunchTemplateSpecification.Version"); v != "" {
		return v
	}
	return "$Default"
}

// parseFleetConfigs splits a CreateFleet form into its other fields and its
// launch template configs, in index order.
func parseFleetConfigs(form url.Values) (url.Values, []fleetConfig) {
	rest := url.Values{}
	configs := map[int]*fleetConfig{}
	overrides := map[int]map[int]url.Values{}
	for key, values := range form {
		n, field, ok := indexed(key, "LaunchTemplateConfigs.")
		if !ok {
			rest[key] = values
			continue
		}
		if configs[n] == nil {
			configs[n] = &fleetConfig{fields: url.Values{}}
			overrides[n] = map[int]url.Values{}
		}
		m, ofield, ok := indexed(field, "Overrides.")
		if !ok {
			configs[n].fields[field] = values
			continue
		}
		if overrides[n][m] == nil {
			overrides[n][m] = url.Values{}
		}
		overrides[n][m][ofield] = values
	}
	var out []fleetConfig
	for _, n := range sortedKeys(configs) {
		c := configs[n]
		for _, m := range sortedKeys(overrides[n]) {
			c.overrides = append(c.overrides, overrides[n][m])
		}
		out = append(out, *c)
	}
	return rest, out
}

// indexed splits "PREFIX.N.field" into N and field.
func indexed(key, prefix string) (int, string, bool) {
	after, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, "", false
	}
	num, field, ok := strings.Cut(after, ".")
	n, err := strconv.Atoi(num)
	if !ok || err != nil {
		return 0, "", false
	}
	return n, field, true
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// encodeFleetConfigs puts configs back into a form, numbered from 1.
func encodeFleetConfigs(rest url.Values, configs []fleetConfig) url.Values {
	form := url.Values{}
	for k, v := range rest {
		form[k] = v
	}
	for i, c := range configs {
		prefix := fmt.Sprintf("LaunchTemplateConfigs.%d.", i+1)
		for k, v := range c.fields {
			form[prefix+k] = v
		}
		for j, o := range c.overrides {
			for k, v := range o {
				form[fmt.Sprintf("%sOverrides.%d.%s", prefix, j+1, k)] = v
			}
		}
	}
	return form
}

// fleetError is an item of CreateFleet's errorSet.
type fleetError struct {
	LaunchTemplateAndOverrides struct {
		LaunchTemplateSpecification struct {
			LaunchTemplateID   string `xml:"launchTemplateId,omitempty"`
			LaunchTemplateName string `xml:"launchTemplateName,omitempty"`
			Version            string `xml:"version,omitempty"`
		} `xml:"launchTemplateSpecification"`
		Overrides struct {
			InstanceType     string `xml:"instanceType,omitempty"`
			SubnetID         string `xml:"subnetId,omitempty"`
			AvailabilityZone string `xml:"availabilityZone,omitempty"`
		} `xml:"overrides"`
	} `xml:"launchTemplateAndOverrides"`
	Lifecycle    string `xml:"lifecycle"`
	ErrorCode    string `xml:"errorCode"`
	ErrorMessage string `xml:"errorMessage"`
}

func insufficientCapacityError(c fleetConfig, o url.Values, zone, capacityType string) fleetError {
	var e fleetError
	spec := &e.LaunchTemplateAndOverrides.LaunchTemplateSpecification
	spec.LaunchTemplateID, spec.LaunchTemplateName = c.templateID(), c.templateName()
	spec.Version = c.fields.Get("LaunchTemplateSpecification.Version")
	over := &e.LaunchTemplateAndOverrides.Overrides
	over.InstanceType, over.SubnetID, over.AvailabilityZone = o.Get("InstanceType"), o.Get("SubnetId"), zone
	e.Lifecycle = capacityType
	e.ErrorCode = "InsufficientInstanceCapacity"
	e.ErrorMessage = fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).",
		o.Get("InstanceType"), zone)
	return e
}

// createFleet drops the overrides whose offering is out of capacity,
// answers itself when none is left, and otherwise lets moto launch from the
// rest and adds the dropped ones to moto's errorSet.
func (f *Front) createFleet(w http.ResponseWriter, r *http.Request, form url.Values) {
	capacityType := form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	if capacityType == "" {
		capacityType = "on-demand"
	}
	rest, configs := parseFleetConfigs(form)
	zones, err := f.overrideZones(r.Context(), configs)
	if err != nil {
		writeEC2Error(w, err)
		return
	}
	var kept []fleetConfig
	var errs []fleetError
	f.mu.Lock()
	for _, c := range configs {
		k := fleetConfig{fields: c.fields}
		for _, o := range c.overrides {
			zone := o.Get("AvailabilityZone")
			if zone == "" {
				zone = zones[o.Get("SubnetId")]
			}
			if f.insufficient[offering{o.Get("InstanceType"), zone, capacityType}] {
				errs = append(errs, insufficientCapacityError(c, o, zone, capacityType))
			} else {
				k.overrides = append(k.overrides, o)
			}
		}
		if len(c.overrides) == 0 || len(k.overrides) > 0 {
			kept = append(kept, k)
		}
	}
	f.mu.Unlock()
	if len(kept) == 0 {
		writeOwnFleet(w, errs)
		return
	}
	body := []byte(encodeFleetConfigs(rest, kept).Encode())
	rec := f.exchange(r, body)
	if rec.Code != http.StatusOK {
		writeChanged(w, rec, rec.Body.Bytes())
		return
	}
	if err := f.recordTemplates(r.Context(), configs, rec.Body.Bytes()); err != nil {
		writeEC2Error(w, err)
		return
	}
	writeChanged(w, rec, withFleetErrors(rec.Body.Bytes(), errs))
}

// overrideZones looks up, once per subnet, the zone of the subnets of the
// overrides that name no zone. It asks nothing while no offering is out of
// capacity.
func (f *Front) overrideZones(ctx context.Context, configs []fleetConfig) (map[string]string, error) {
	f.mu.Lock()
	zones := make(map[string]string, len(f.subnetZones))
	for k, v := range f.subnetZones {
		zones[k] = v
	}
	scarce := len(f.insufficient) > 0
	f.mu.Unlock()
	if !scarce {
		return zones, nil
	}
	var missing []string
	for _, c := range configs {
		for _, o := range c.overrides {
			subnet := o.Get("SubnetId")
			if o.Get("AvailabilityZone") == "" && subnet != "" && zones[subnet] == "" && !slices.Contains(missing, subnet) {
				missing = append(missing, subnet)
			}
		}
	}
	if len(missing) == 0 {
		return zones, nil
	}
	out, err := f.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: missing})
	if err != nil {
		return nil, fmt.Errorf("describing subnets %v: %w", missing, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range out.Subnets {
		zones[aws.ToString(s.SubnetId)] = aws.ToString(s.AvailabilityZone)
		f.subnetZones[aws.ToString(s.SubnetId)] = aws.ToString(s.AvailabilityZone)
	}
	return zones, nil
}

const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// writeOwnFleet answers a CreateFleet none of whose overrides had capacity.
func writeOwnFleet(w http.ResponseWriter, errs []fleetError) {
	id := newID(16)
	resp := struct {
		XMLName   xml.Name     `xml:"CreateFleetResponse"`
		Xmlns     string       `xml:"xmlns,attr"`
		RequestID string       `xml:"requestId"`
		FleetID   string       `xml:"fleetId"`
		Errors    []fleetError `xml:"errorSet>item"`
		Instances struct{}     `xml:"fleetInstanceSet"`
	}{
		Xmlns:     ec2Namespace,
		RequestID: newID(16),
		FleetID:   fmt.Sprintf("fleet-%s-%s-%s-%s-%s", id[:8], id[8:12], id[12:16], id[16:20], id[20:]),
		Errors:    errs,
	}
	body, err := xml.Marshal(resp)
	if err != nil {
		writeEC2Error(w, err)
		return
	}
	body = append([]byte(xml.Header), body...)
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// withFleetErrors adds errs to the errorSet of moto's CreateFleetResponse,
// adding the errorSet when moto sent none.
func withFleetErrors(body []byte, errs []fleetError) []byte {
	if len(errs) == 0 {
		return body
	}
	var items bytes.Buffer
	enc := xml.NewEncoder(&items)
	for _, e := range errs {
		if err := enc.EncodeElement(e, xml.StartElement{Name: xml.Name{Local: "item"}}); err != nil {
			return body
		}
	}
	s := string(body)
	switch {
	case strings.Contains(s, "<errorSet>"):
		s = strings.Replace(s, "<errorSet>", "<errorSet>"+items.String(), 1)
	case strings.Contains(s, "<errorSet/>"):
		s = strings.Replace(s, "<errorSet/>", "<errorSet>"+items.String()+"</errorSet>", 1)
	default:
		s = strings.Replace(s, "</CreateFleetResponse>", "<errorSet>"+items.String()+"</errorSet></CreateFleetResponse>", 1)
	}
	return []byte(s)
}

// recordTemplates remembers, for each instance in moto's CreateFleet
// answer, the security groups and HttpTokens of its launch template, at the
// version the request asked for.
func (f *Front) recordTemplates(ctx context.Context, configs []fleetConfig, body []byte) error {
	var resp struct {
		Instances []struct {
			Spec struct {
				ID   string `xml:"launchTemplateId"`
				Name string `xml:"launchTemplateName"`
			} `xml:"launchTemplateAndOverrides>launchTemplateSpecification"`
			InstanceIDs []string `xml:"instanceIds>item"`
		} `xml:"fleetInstanceSet>item"`
	}
	if err := xml.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("reading moto's CreateFleet answer: %w", err)
	}
	looked := map[int]templateData{}
	for _, item := range resp.Instances {
		i := slices.IndexFunc(configs, func(c fleetConfig) bool {
			return (item.Spec.ID != "" && c.templateID() == item.Spec.ID) ||
				(item.Spec.Name != "" && c.templateName() == item.Spec.Name)
		})
		if i < 0 && len(configs) == 1 {
			i = 0
		}
		if i < 0 {
			continue
		}
		data, ok := looked[i]
		if !ok {
			var err error
			if data, err = f.templateData(ctx, configs[i]); err != nil {
				return err
			}
			looked[i] = data
		}
		f.mu.Lock()
		for _, id := range item.InstanceIDs {
			f.templates[id] = data
		}
		f.mu.Unlock()
	}
	return nil
}

// templateData asks moto for the launch template version a config names.
func (f *Front) templateData(ctx context.Context, c fleetConfig) (templateData, error) {
	in := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{c.templateVersion()}}
	if id := c.templateID(); id != "" {
		in.LaunchTemplateId = aws.String(id)
	} else {
		in.LaunchTemplateName = aws.String(c.templateName())
	}
	out, err := f.ec2.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return templateData{}, fmt.Errorf("describing launch template %s%s version %s: %w", c.templateID(), c.templateName(), c.templateVersion(), err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return templateData{}, fmt.Errorf("launch template %s%s has no version %s", c.templateID(), c.templateName(), c.templateVersion())
	}
	ltd := out.LaunchTemplateVersions[0].LaunchTemplateData
	data := templateData{securityGroupIDs: slices.Clone(ltd.SecurityGroupIds)}
	for _, ni := range ltd.NetworkInterfaces {
		for _, g := range ni.Groups {
			if !slices.Contains(data.securityGroupIDs, g) {
				data.securityGroupIDs = append(data.securityGroupIDs, g)
			}
		}
	}
	if ltd.MetadataOptions != nil {
		data.httpTokens = string(ltd.MetadataOptions.HttpTokens)
	}
	return data, nil
}

// writeEC2Error answers with an EC2 query-protocol error, keeping moto's
// code when err came from moto.
func writeEC2Error(w http.ResponseWriter, err error) {
	code, status := "InternalError", http.StatusInternalServerError
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, status = apiErr.ErrorCode(), http.StatusBadRequest
	}
	var msg bytes.Buffer
	_ = xml.EscapeText(&msg, []byte(err.Error()))
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>`,
		code, msg.String(), newID(16))
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
