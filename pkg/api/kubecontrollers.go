package api

// KubeControllersConfiguration configures Project Calico's kube-controllers. calico-host does not
// run them; the object is stored and returned unchanged so that mixed clusters keep it intact.
type KubeControllersConfiguration struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       KubeControllersConfigurationSpec   `json:"spec"`
	Status     KubeControllersConfigurationStatus `json:"status,omitempty"`
}

// KubeControllersConfigurationSpec is the specification of a KubeControllersConfiguration.
type KubeControllersConfigurationSpec struct {
	LogSeverityScreen      string            `json:"logSeverityScreen,omitempty"`
	HealthChecks           string            `json:"healthChecks,omitempty"`
	EtcdV3CompactionPeriod *Duration         `json:"etcdV3CompactionPeriod,omitempty"`
	PrometheusMetricsPort  *int              `json:"prometheusMetricsPort,omitempty"`
	Controllers            ControllersConfig `json:"controllers"`
	DebugProfilePort       *int32            `json:"debugProfilePort,omitempty"`
}

// ControllersConfig enables and configures the individual controllers.
type ControllersConfig struct {
	Node             *NodeControllerConfig         `json:"node,omitempty"`
	Policy           *ReconcilerControllerConfig   `json:"policy,omitempty"`
	WorkloadEndpoint *ReconcilerControllerConfig   `json:"workloadEndpoint,omitempty"`
	ServiceAccount   *ReconcilerControllerConfig   `json:"serviceAccount,omitempty"`
	Namespace        *ReconcilerControllerConfig   `json:"namespace,omitempty"`
	LoadBalancer     *LoadBalancerControllerConfig `json:"loadBalancer,omitempty"`
	Migration        *MigrationControllerConfig    `json:"migration,omitempty"`
}

// NodeControllerConfig configures the node controller.
type NodeControllerConfig struct {
	ReconcilerPeriod *Duration               `json:"reconcilerPeriod,omitempty"`
	SyncLabels       string                  `json:"syncLabels,omitempty"`
	HostEndpoint     *AutoHostEndpointConfig `json:"hostEndpoint,omitempty"`
	LeakGracePeriod  *Duration               `json:"leakGracePeriod,omitempty"`
}

// AutoHostEndpointConfig configures automatic host endpoints.
type AutoHostEndpointConfig struct {
	AutoCreate                string                 `json:"autoCreate,omitempty"`
	CreateDefaultHostEndpoint string                 `json:"createDefaultHostEndpoint,omitempty"`
	Templates                 []HostEndpointTemplate `json:"templates,omitempty"`
}

// HostEndpointTemplate describes automatic host endpoints to create for matching nodes.
type HostEndpointTemplate struct {
	GenerateName     string            `json:"generateName,omitempty"`
	InterfaceCIDRs   []string          `json:"interfaceCIDRs,omitempty"`
	InterfacePattern string            `json:"interfacePattern,omitempty"`
	Labels           map[string]string `json:"labels,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
	NodeSelector     string            `json:"nodeSelector,omitempty"`
}

// ReconcilerControllerConfig configures a controller that only has a reconciler period
// (Project Calico's Policy-, WorkloadEndpoint-, ServiceAccount- and NamespaceControllerConfig).
type ReconcilerControllerConfig struct {
	ReconcilerPeriod *Duration `json:"reconcilerPeriod,omitempty"`
}

// LoadBalancerControllerConfig configures the LoadBalancer IP controller.
type LoadBalancerControllerConfig struct {
	AssignIPs string `json:"assignIPs,omitempty"`
}

// MigrationControllerConfig configures the policy migration controller.
type MigrationControllerConfig struct {
	PolicyNameMigrator string `json:"policyNameMigrator,omitempty"`
}

// KubeControllersConfigurationStatus is the configuration kube-controllers is running with.
type KubeControllersConfigurationStatus struct {
	RunningConfig   *KubeControllersConfigurationSpec `json:"runningConfig,omitempty"`
	EnvironmentVars map[string]string                 `json:"environmentVars,omitempty"`
}
