package testaws

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ssmParameter is a parameter as SSM's GetParameter answers it.
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
