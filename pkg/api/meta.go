package api

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
)

// TypeMeta is the kind and apiVersion of an object.
type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// GetTypeMeta returns the object's type metadata.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// ObjectMeta is the metadata of a v3 object: every field of Kubernetes' ObjectMeta, which Project
// Calico's types embed, so that what it accepts and stores we accept and keep. ResourceVersion is
// never stored in etcd: it is the key's mod revision, filled in on read and required to match on
// update. calicoctl keeps only name, namespace, labels and annotations of what a user writes (see
// ForCreate); the other fields are kept as stored.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	SelfLink                   string            `json:"selfLink,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          string            `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          string            `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
	ManagedFields              []ManagedField    `json:"managedFields,omitempty"`
}

// OwnerReference is Kubernetes' metav1.OwnerReference.
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ManagedField is Kubernetes' metav1.ManagedFieldsEntry; fieldsV1 is kept as the JSON it is.
type ManagedField struct {
	Manager     string          `json:"manager,omitempty"`
	Operation   string          `json:"operation,omitempty"`
	APIVersion  string          `json:"apiVersion,omitempty"`
	Time        string          `json:"time,omitempty"`
	FieldsType  string          `json:"fieldsType,omitempty"`
	FieldsV1    json.RawMessage `json:"fieldsV1,omitempty"`
	Subresource string          `json:"subresource,omitempty"`
}

// ForCreate returns the metadata Project Calico's calicoctl keeps of an object it creates: name,
// namespace, resourceVersion, labels and annotations (uid and creationTimestamp are set by the
// write; generateName, ownerReferences, finalizers and the rest are dropped).
func (m *ObjectMeta) ForCreate() ObjectMeta {
	return ObjectMeta{Name: m.Name, Namespace: m.Namespace, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, Annotations: m.Annotations}
}

// GetObjectMeta returns the object's metadata.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// Resource is any v3 object.
type Resource interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// KindInfo describes one v3 kind: its name, its plural (the etcd key segment) and whether it is
// namespaced.
type KindInfo struct {
	Kind       string
	Plural     string
	Namespaced bool
	Aliases    []string
	typ        reflect.Type
}

// New returns a new empty object of this kind with its TypeMeta filled in.
func (k KindInfo) New() Resource {
	r := reflect.New(k.typ).Interface().(Resource)
	*r.GetTypeMeta() = TypeMeta{Kind: k.Kind, APIVersion: APIVersion}
	return r
}

var kinds = []KindInfo{
	{Kind: "IPPool", Plural: "ippools", Aliases: []string{"ipp", "pool", "pools"}, typ: reflect.TypeOf(IPPool{})},
	{Kind: "Node", Plural: "nodes", Aliases: []string{"no"}, typ: reflect.TypeOf(Node{})},
	{Kind: "ClusterInformation", Plural: "clusterinformations", Aliases: []string{"clusterinfo"}, typ: reflect.TypeOf(ClusterInformation{})},
	{Kind: "FelixConfiguration", Plural: "felixconfigurations", Aliases: []string{"felixconfig", "fc"}, typ: reflect.TypeOf(FelixConfiguration{})},
	{Kind: "BGPConfiguration", Plural: "bgpconfigurations", Aliases: []string{"bgpconfig"}, typ: reflect.TypeOf(BGPConfiguration{})},
	{Kind: "BGPPeer", Plural: "bgppeers", Aliases: []string{"bgpp"}, typ: reflect.TypeOf(BGPPeer{})},
	{Kind: "BGPFilter", Plural: "bgpfilters", Aliases: []string{"bgpf"}, typ: reflect.TypeOf(BGPFilter{})},
	{Kind: "Tier", Plural: "tiers", typ: reflect.TypeOf(Tier{})},
	{Kind: "GlobalNetworkPolicy", Plural: "globalnetworkpolicies", Aliases: []string{"gnp", "gnps"}, typ: reflect.TypeOf(GlobalNetworkPolicy{})},
	{Kind: "NetworkPolicy", Plural: "networkpolicies", Namespaced: true, Aliases: []string{"np", "nps", "policy", "policies"}, typ: reflect.TypeOf(NetworkPolicy{})},
	{Kind: "StagedGlobalNetworkPolicy", Plural: "stagedglobalnetworkpolicies", Aliases: []string{"sgnp", "sgnps"}, typ: reflect.TypeOf(StagedGlobalNetworkPolicy{})},
	{Kind: "StagedNetworkPolicy", Plural: "stagednetworkpolicies", Namespaced: true, Aliases: []string{"snp", "stagedpolicy", "stagedpolicies", "spol", "spols"}, typ: reflect.TypeOf(StagedNetworkPolicy{})},
	{Kind: "StagedKubernetesNetworkPolicy", Plural: "stagedkubernetesnetworkpolicies", Namespaced: true, Aliases: []string{"sknp", "stagedkubernetespolicy", "stagedkubernetespolicies", "skpol", "skpols"}, typ: reflect.TypeOf(StagedKubernetesNetworkPolicy{})},
	{Kind: "Profile", Plural: "profiles", Aliases: []string{"pro", "pros"}, typ: reflect.TypeOf(Profile{})},
	{Kind: "GlobalNetworkSet", Plural: "globalnetworksets", Aliases: []string{"gns"}, typ: reflect.TypeOf(GlobalNetworkSet{})},
	{Kind: "NetworkSet", Plural: "networksets", Namespaced: true, Aliases: []string{"ns", "netset", "netsets"}, typ: reflect.TypeOf(NetworkSet{})},
	{Kind: "HostEndpoint", Plural: "hostendpoints", Aliases: []string{"hep", "heps"}, typ: reflect.TypeOf(HostEndpoint{})},
	{Kind: "WorkloadEndpoint", Plural: "workloadendpoints", Namespaced: true, Aliases: []string{"wep", "weps"}, typ: reflect.TypeOf(WorkloadEndpoint{})},
	{Kind: "LiveMigration", Plural: "livemigrations", Namespaced: true, typ: reflect.TypeOf(LiveMigration{})},
	{Kind: "IPAMConfiguration", Plural: "ipamconfigurations", Aliases: []string{"ipamconfig"}, typ: reflect.TypeOf(IPAMConfiguration{})},
	{Kind: "IPReservation", Plural: "ipreservations", Aliases: []string{"ipreservation"}, typ: reflect.TypeOf(IPReservation{})},
	{Kind: "KubeControllersConfiguration", Plural: "kubecontrollersconfigurations", Aliases: []string{"kcc"}, typ: reflect.TypeOf(KubeControllersConfiguration{})},
}

var kindIndex = buildKindIndex()

func buildKindIndex() map[string]KindInfo {
	idx := map[string]KindInfo{}
	for _, k := range kinds {
		idx[strings.ToLower(k.Kind)] = k
		idx[k.Plural] = k
		for _, a := range k.Aliases {
			idx[a] = k
		}
	}
	return idx
}

// LookupKind finds a kind by its name, plural or alias, case-insensitively
// ("IPPool", "ippools", "ippool", "gnp", ...).
func LookupKind(name string) (KindInfo, bool) {
	k, ok := kindIndex[strings.ToLower(name)]
	return k, ok
}

// KindByPlural finds a kind by the plural used in etcd keys.
func KindByPlural(plural string) (KindInfo, bool) {
	for _, k := range kinds {
		if k.Plural == plural {
			return k, true
		}
	}
	return KindInfo{}, false
}

// KindOf returns the KindInfo of an object by its Go type.
func KindOf(r Resource) (KindInfo, bool) {
	t := reflect.TypeOf(r)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, k := range kinds {
		if k.typ == t {
			return k, true
		}
	}
	return KindInfo{}, false
}

// Kinds returns every known kind, sorted by name.
func Kinds() []KindInfo {
	out := append([]KindInfo(nil), kinds...)
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Condition is a status condition, with the JSON of Kubernetes' metav1.Condition, which Project
// Calico uses for Tier and IPPool status.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}
