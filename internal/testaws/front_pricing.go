package testaws

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

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
