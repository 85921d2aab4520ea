package api

// DefaultAllowProfileName is Project Calico's built-in profile: it is never stored in etcd, yet
// its client returns it on every Get and List of profiles (with resourceVersion "1"), refuses to
// create, update or delete it, and felix gives an endpoint that names it an allow-all profile.
const DefaultAllowProfileName = "projectcalico-default-allow"

// DefaultAllowProfileRevision is the resourceVersion Project Calico's client reports for it.
const DefaultAllowProfileRevision = "1"

// DefaultAllowProfile returns the built-in profile as Project Calico's client returns it: the
// name and resourceVersion only in its metadata, one Allow rule each way.
func DefaultAllowProfile() *Profile {
	return &Profile{
		TypeMeta:   TypeMeta{Kind: "Profile", APIVersion: APIVersion},
		ObjectMeta: ObjectMeta{Name: DefaultAllowProfileName, ResourceVersion: DefaultAllowProfileRevision},
		Spec:       DefaultAllowProfileSpec(),
	}
}

// DefaultAllowProfileSpec is the built-in profile's rules: allow all ingress and all egress.
func DefaultAllowProfileSpec() ProfileSpec {
	return ProfileSpec{Ingress: []Rule{{Action: ActionAllow}}, Egress: []Rule{{Action: ActionAllow}}}
}

// IsDefaultAllowProfile reports whether a Profile name is the built-in one.
func IsDefaultAllowProfile(name string) bool { return name == DefaultAllowProfileName }
