package config

import (
	"reflect"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// compatRenames are the FelixConfiguration fields calico-host does not use whose parameter name is
// not the JSON name with its first letter upper-cased (Project Calico's confignamev1 tags). With
// Param.V3 this is the whole rename table.
var compatRenames = map[string]string{
	"ipipEnabled":       "IpInIpEnabled",
	"ipipMTU":           "IpInIpMtu",
	"externalNodesList": "ExternalNodesCIDRList",
}

// paramNameOfField is the parameter name of a FelixConfiguration spec JSON field.
func paramNameOfField(jsonName string) string {
	if p, ok := byV3[jsonName]; ok {
		return p.Name
	}
	if n, ok := compatRenames[jsonName]; ok {
		return n
	}
	return strings.ToUpper(jsonName[:1]) + jsonName[1:]
}

// datastoreNames are the parameter names of every FelixConfiguration field: calico-host accepts
// them all in the environment and the config file (as Project Calico's felix does) and uses
// those that are in Params.
func datastoreNames() []string {
	var names []string
	for tag := range specFields {
		names = append(names, paramNameOfField(tag))
	}
	return names
}

// specFields indexes the FelixConfigurationSpec fields by JSON name.
var specFields = func() map[string]int {
	st := reflect.TypeFor[api.FelixConfigurationSpec]()
	m := map[string]int{}
	for i := 0; i < st.NumField(); i++ {
		tag, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			m[tag] = i
		}
	}
	return m
}()
