package testaws

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
)

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
	// Finish what was asked even when the caller goes away mid-call (a
	// controller SIGKILLed during CreateFleet), as EC2 does: the instance
	// exists, and so must the record of its launch template.
	r = r.WithContext(context.WithoutCancel(r.Context()))
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
