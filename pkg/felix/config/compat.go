package config

import (
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// v3Renames are the FelixConfiguration fields whose parameter name is not the JSON name with its
// first letter upper-cased (Project Calico's confignamev1 tags; calc uses the same names).
var v3Renames = map[string]string{
	"reportingInterval":      "ReportingIntervalSecs",
	"reportingTTL":           "ReportingTTLSecs",
	"endpointReportingDelay": "EndpointReportingDelaySecs",
	"ipipEnabled":            "IpInIpEnabled",
	"ipipMTU":                "IpInIpMtu",
	"externalNodesList":      "ExternalNodesCIDRList",
}

// ParamNameOfField is the parameter name of a FelixConfiguration spec JSON field.
func ParamNameOfField(jsonName string) string {
	if n, ok := v3Renames[jsonName]; ok {
		return n
	}
	return strings.ToUpper(jsonName[:1]) + jsonName[1:]
}

// datastoreNames are the parameter names of every FelixConfiguration field: calico-host accepts
// them all from the datastore (as calicoctl does) and uses those that are in Params.
func datastoreNames() []string {
	st := reflect.TypeFor[api.FelixConfigurationSpec]()
	var names []string
	for i := 0; i < st.NumField(); i++ {
		tag, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			names = append(names, ParamNameOfField(tag))
		}
	}
	return names
}
